/**
 * CLI end-to-end harness: a real Node server on a fresh data folder and an ephemeral port, and a
 * capturing IO so a test runs `main(argv, io)` in-process and can await output lines (a running
 * `tail`) instead of sleeping.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { createClient, type RivuletClient } from '@rivulet/client';
import { startNodeServer, type NodeServerOptions, type RunningServer } from '@rivulet/server/node';
import { main } from '../src/main.js';
import type { RemoteIO } from '../src/commands/remote.js';

export interface TestServer {
  readonly server: RunningServer;
  url: string;
  data: string;
  stop(): Promise<void>;
  /** A new server on the same data folder and port. */
  restart(): Promise<void>;
  dispose(): Promise<void>;
}

export async function startTestServer(options: NodeServerOptions = {}): Promise<TestServer> {
  const data = mkdtempSync(join(tmpdir(), 'rivulet-cli-test-'));
  const quiet = { error: () => undefined };
  let server = await startNodeServer({ logger: quiet, ...options, port: 0, data });
  const port = server.port;
  return {
    get server() {
      return server;
    },
    url: server.url,
    data,
    stop: () => server.close(),
    async restart() {
      server = await startNodeServer({ logger: quiet, ...options, port, data });
    },
    async dispose() {
      await server.close();
      rmSync(data, { recursive: true, force: true });
    },
  };
}

export interface ServerAndFiles {
  /** The URL of this test's server. */
  readonly url: string;
  /** Stops this test's server (to show what a command says when it cannot reach one). */
  stop(): Promise<void>;
  /** An SDK client of this test's server, to look at what a command did. */
  readonly client: RivuletClient;
  /** The folder of input files, one for the whole file of tests. */
  readonly files: string;
  /** Writes `content` to `name` in the files folder and answers its path. */
  file(name: string, content: string): string;
}

/**
 * Registers the hooks of a test file whose commands read input files: a fresh server and client for
 * every test, one folder of files (named `prefix`…) for them all, removed at the end.
 */
export function useServerAndFiles(prefix: string): ServerAndFiles {
  let t: TestServer | undefined;
  let client: RivuletClient | undefined;
  let files: string | undefined;
  beforeAll(() => {
    files = mkdtempSync(join(tmpdir(), prefix));
  });
  afterAll(() => rmSync(files!, { recursive: true, force: true }));
  beforeEach(async () => {
    t = await startTestServer();
    client = createClient({ url: t.url });
  });
  afterEach(() => t!.dispose());
  return {
    get url() {
      return t!.url;
    },
    stop: () => t!.stop(),
    get client() {
      return client!;
    },
    get files() {
      return files!;
    },
    file(name, content) {
      const path = join(files!, name);
      writeFileSync(path, content);
      return path;
    },
  };
}

export interface Run {
  code: number;
  out: string[];
  err: string[];
  stdout: string;
  stderr: string;
}

export class Capture {
  readonly out: string[] = [];
  readonly err: string[] = [];
  private readonly watchers = new Set<() => void>();
  private ended = false;
  readonly io: RemoteIO;

  constructor(env: NodeJS.ProcessEnv, extra: Partial<RemoteIO> = {}) {
    const push = (into: string[]) => (text: string) => {
      into.push(...text.replace(/\n$/, '').split('\n'));
      for (const w of [...this.watchers]) w();
    };
    this.io = { out: push(this.out), err: push(this.err), env, ...extra };
  }

  /** Resolves once stdout holds at least `count` lines. */
  untilOut(count: number): Promise<string[]> {
    return this.until(() => this.out.length >= count, () => this.out.slice());
  }

  /** Resolves once a stderr line contains `text`. */
  untilErr(text: string): Promise<string> {
    return this.until(
      () => this.err.some((l) => l.includes(text)),
      () => this.err.find((l) => l.includes(text))!,
    );
  }

  private until<T>(ready: () => boolean, value: () => T): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (ready()) resolve(value());
        else if (this.ended) reject(new Error(`the command ended first; stderr:\n${this.err.join('\n')}`));
        else return;
        this.watchers.delete(check);
      };
      this.watchers.add(check);
      check();
    });
  }

  async run(argv: string[]): Promise<Run> {
    try {
      return this.result(await main(argv, this.io));
    } finally {
      this.ended = true;
      for (const w of [...this.watchers]) w();
    }
  }

  result(code: number): Run {
    return { code, out: this.out, err: this.err, stdout: this.out.join('\n'), stderr: this.err.join('\n') };
  }
}

/** Runs one command to completion against `url`. */
export function rivulet(url: string, argv: string[], extra: Partial<RemoteIO> & { env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  const { env, ...rest } = extra;
  return new Capture({ RIVULET_URL: url, ...env }, rest).run(argv);
}
