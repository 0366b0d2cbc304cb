/**
 * Smoke test of the built `rivulet` bin as a child process (npm test builds first): standard
 * input for `--file -`, exit codes, and Ctrl-C ending a tail.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './harness.js';

const bin = fileURLToPath(new URL('../bin/rivulet.js', import.meta.url));

let t: TestServer;
beforeEach(async () => {
  t = await startTestServer();
});
afterEach(() => t.dispose());

interface Child {
  stdout: string;
  stderr: string;
  exit: Promise<number | null>;
  /** Resolves once stdout holds `count` lines. */
  lines(count: number): Promise<void>;
  kill(signal: NodeJS.Signals): void;
}

function start(args: string[], stdin?: string): Child {
  const child = spawn(process.execPath, [bin, ...args], {
    env: { ...process.env, RIVULET_URL: t.url },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const waiters: (() => boolean)[] = [];
  const result: Child = {
    stdout: '',
    stderr: '',
    exit: new Promise((resolve) => child.on('close', (code) => resolve(code))),
    lines: (count) =>
      new Promise((resolve) => {
        const check = () => {
          if (result.stdout.split('\n').length - 1 < count) return false;
          resolve();
          return true;
        };
        if (!check()) waiters.push(check);
      }),
    kill: (signal) => child.kill(signal),
  };
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    result.stdout += text;
    for (const w of waiters.splice(0)) if (!w()) waiters.push(w);
  });
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    result.stderr += text;
  });
  child.stdin.end(stdin ?? '');
  return result;
}

describe('the rivulet bin', () => {
  it('appends a batch from standard input and reads it back as JSON', async () => {
    const append = start(['append', '/bin', '--file', '-'], '[{"type":"a"},{"type":"b"}]');
    expect(await append.exit).toBe(0);
    expect(append.stdout.trim().split('\n')).toHaveLength(2);
    const read = start(['read', '/bin', '--json']);
    expect(await read.exit).toBe(0);
    const doc = JSON.parse(read.stdout) as { events: { type: string }[] };
    expect(doc.events.map((e) => e.type)).toEqual(['events.iterate.com/stream/created', 'a', 'b']);
  });

  it('exits 1 on a server error and 2 on a usage error', async () => {
    const forbidden = start(['append', '/bin', 'events.iterate.com/stream/created']);
    expect(await forbidden.exit).toBe(1);
    expect(forbidden.stderr).toMatch(/^rivulet append: FORBIDDEN /);
    const usage = start(['read']);
    expect(await usage.exit).toBe(2);
    expect(usage.stderr).toMatch(/^rivulet read: missing PATH/);
  });

  it('ends a tail on Ctrl-C with exit 0', async () => {
    const tail = start(['tail', '/bin-tail']);
    const append = start(['append', '/bin-tail', 'a']);
    expect(await append.exit).toBe(0);
    await tail.lines(2);
    tail.kill('SIGINT');
    expect(await tail.exit).toBe(0);
    expect(tail.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/)[0])).toEqual(['1', '2']);
  });
});
