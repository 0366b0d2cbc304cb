/**
 * The built `rivulet` bin as child processes, for what only real processes show: shell pipes
 * (`rivulet tail A --json | rivulet append B --file -`), backpressure, and memory under a small
 * heap. Needs `npm run build` first (assertBuilt says so).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { assertBuilt } from '../../server/test/helpers/cli.js';

const bin = fileURLToPath(new URL('../bin/rivulet.js', import.meta.url));
const maxRss = fileURLToPath(new URL('./fixtures/max-rss.cjs', import.meta.url));

export interface CliProcess {
  child: ChildProcess;
  /** Everything written to stdout, once it ends (empty when stdout was handed to another process). */
  stdout: Promise<string>;
  stderr(): string;
  /** The exit code once the process ended. */
  exit: Promise<number | null>;
  /** The peak resident set size in kilobytes, reported by the process as it exits. */
  maxRssKb(): number | undefined;
}

export interface SpawnOptions {
  url: string;
  /** Where standard input comes from: another process's stdout, a string, or nothing. */
  stdin?: NodeJS.ReadableStream | string;
  /** Node flags before the script, e.g. --max-old-space-size=64. */
  nodeFlags?: string[];
  /** Leave stdout unread so that a next process can take it. */
  pipeOut?: boolean;
}

export function spawnCli(args: string[], options: SpawnOptions): CliProcess {
  assertBuilt();
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('RIVULET_')));
  const child = spawn(process.execPath, [...(options.nodeFlags ?? []), '--require', maxRss, bin, ...args], {
    env: { ...env, RIVULET_URL: options.url },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
  });
  const stdin = options.stdin;
  if (typeof stdin === 'string') child.stdin!.end(stdin);
  else if (stdin) stdin.pipe(child.stdin!);
  else child.stdin!.end();
  const stdout = options.pipeOut
    ? Promise.resolve('')
    : new Promise<string>((resolve) => {
        let text = '';
        child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk;
        });
        child.stdout!.on('end', () => resolve(text));
      });
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    child,
    stdout,
    stderr: () => stderr.replace(/^maxrss \d+\n/m, ''),
    exit,
    maxRssKb: () => {
      const match = /^maxrss (\d+)$/m.exec(stderr);
      return match ? Number(match[1]) : undefined;
    },
  };
}
