/**
 * Constant memory (docs/operations.md, "Export and import"): export, read --all --json and import
 * run as child processes under a V8 heap too small to hold what they move. Buffering the
 * 200 000 events instead (as read --all --json once did) dies of "heap out of memory" at this
 * limit, as does reading the 30 MB import file whole and parsing its lines; streaming them stays
 * inside it. The peak RSS each child reports is printed as a figure.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@rivulet/client';
import { startTestServer, type TestServer } from './harness.js';
import { spawnCli, type CliProcess } from './processes.js';

const HEAP = ['--max-old-space-size=48'];
const EVENTS = 200_000;

let t: TestServer;
let files: string;

beforeAll(async () => {
  files = mkdtempSync(join(tmpdir(), 'rivulet-cli-memory-'));
  t = await startTestServer();
  const client = createClient({ url: t.url });
  for (let start = 0; start < EVENTS; start += 10_000) {
    await client.append(
      '/big',
      Array.from({ length: 10_000 }, (_, i) => ({ type: 'bench.example/item', payload: { i: start + i, text: 'a payload of some length' } })),
    );
  }
}, 120_000);
afterAll(async () => {
  await t.dispose();
  rmSync(files, { recursive: true, force: true });
});

/** Reads a child's stdout without keeping it: the number of lines and the last one. */
function countLines(cli: CliProcess): Promise<{ lines: number; last: string }> {
  return new Promise((resolve) => {
    let lines = 0;
    let tail = '';
    let last = '';
    cli.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      const parts = (tail + chunk).split('\n');
      tail = parts.pop()!;
      lines += parts.length;
      if (parts.length > 0) last = parts.at(-1)!;
    });
    cli.child.stdout!.on('end', () => resolve({ lines, last }));
  });
}

describe('constant memory under a 48 MB heap', () => {
  for (const args of [['export', '/big'], ['read', '/big', '--all', '--json']]) {
    it(`rivulet ${args.join(' ')} streams ${EVENTS} events`, async () => {
      const cli = spawnCli(args, { url: t.url, nodeFlags: HEAP, pipeOut: true });
      const counted = countLines(cli);
      expect(await cli.exit, cli.stderr()).toBe(0);
      const { lines, last } = await counted;
      expect(lines).toBe(EVENTS + 1);
      expect(JSON.parse(last)).toMatchObject({ path: '/big', offset: EVENTS + 1, payload: { i: EVENTS - 1 } });
      console.log(`rivulet ${args.join(' ')}: ${EVENTS + 1} events, peak RSS ${Math.round((cli.maxRssKb() ?? 0) / 1024)} MiB`);
    }, 120_000);
  }

  it('rivulet import reads a 30 MB file line by line', async () => {
    const text = 'x'.repeat(3000);
    const lines = Array.from({ length: 10_000 }, (_, i) =>
      JSON.stringify({ path: '/wide', offset: i + 2, createdAt: '2026-11-30T10:00:00.000Z', type: 't', payload: { i, text }, streamId: 'memory-test' }),
    );
    const file = join(files, 'wide.ndjson');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const cli = spawnCli(['import', '--file', file], { url: t.url, nodeFlags: HEAP });
    expect(await cli.exit, cli.stderr()).toBe(0);
    expect(await cli.stdout).toBe('imported 10000 event(s) into 1 stream(s), 0 already there; skipped 0 control and 0 ephemeral event(s)\n');
    expect((await createClient({ url: t.url }).getEvents('/wide', { limit: 1 })).streamMaxOffset).toBe(10_001);
    console.log(`rivulet import: 10000 events of 3 KB, peak RSS ${Math.round((cli.maxRssKb() ?? 0) / 1024)} MiB`);
  }, 120_000);
});
