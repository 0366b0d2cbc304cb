/**
 * End-to-end harness: a real Node server on a fresh data folder and an ephemeral port, and a
 * collector that drains an async iterable in the background so a test can await "n items seen"
 * instead of sleeping.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNodeServer, type NodeServerOptions, type RunningServer } from '@rivulet/server/node';

export interface TestServer {
  server: RunningServer;
  url: string;
  data: string;
  /** Stops the server; the data folder stays until `dispose`. */
  stop(): Promise<void>;
  /** Starts a new server on the same data folder and port (a restart). */
  restart(): Promise<void>;
  dispose(): Promise<void>;
}

export async function startTestServer(options: NodeServerOptions = {}): Promise<TestServer> {
  const data = mkdtempSync(join(tmpdir(), 'rivulet-client-test-'));
  const quiet = { error: () => undefined };
  let server = await startNodeServer({ logger: quiet, ...options, port: 0, data });
  const port = server.port;
  const handle: TestServer = {
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
  return handle;
}

export interface Collector<T> {
  readonly items: T[];
  /** Settles when the iterable ends (or rejects with its error). */
  readonly done: Promise<void>;
  /** Resolves once at least `count` items arrived; rejects if the iterable fails or ends first. */
  until(count: number): Promise<T[]>;
}

export function collect<T>(iterable: AsyncIterable<T>): Collector<T> {
  const items: T[] = [];
  const waiters: { count: number; resolve(items: T[]): void; reject(error: unknown): void }[] = [];
  let failure: { error: unknown } | undefined;
  let ended = false;
  const settle = () => {
    for (const w of [...waiters]) {
      if (items.length >= w.count) w.resolve(items.slice());
      else if (failure) w.reject(failure.error);
      else if (ended) w.reject(new Error(`the iterable ended after ${items.length} items, expected ${w.count}`));
      else continue;
      waiters.splice(waiters.indexOf(w), 1);
    }
  };
  const done = (async () => {
    try {
      for await (const item of iterable) {
        items.push(item);
        settle();
      }
    } catch (error) {
      failure = { error };
      throw error;
    } finally {
      ended = true;
      settle();
    }
  })();
  done.catch(() => undefined);
  return {
    items,
    done,
    until(count) {
      return new Promise((resolve, reject) => {
        waiters.push({ count, resolve, reject });
        settle();
      });
    },
  };
}
