import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type CommittedEvent, type RivuletClient } from '@rivulet/client';
import { rivulet, startTestServer, type TestServer } from './harness.js';

let t: TestServer;
let client: RivuletClient;
let files: string;

beforeAll(() => {
  files = mkdtempSync(join(tmpdir(), 'rivulet-cli-import-'));
});
afterAll(() => rmSync(files, { recursive: true, force: true }));
beforeEach(async () => {
  t = await startTestServer();
  client = createClient({ url: t.url });
});
afterEach(() => t.dispose());

const SID = '0b0e5f55-6c1e-4c71-9d0e-5b2a4a0c0a11';
const at = '2026-11-30T10:00:00.000Z';
const exported = (offset: number, extra: Record<string, unknown> = {}) => ({ path: '/src', offset, createdAt: at, type: 't', payload: { offset }, streamId: SID, ...extra });
const ndjson = (values: unknown[]) => values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join('\n') + '\n';

function file(name: string, content: string): string {
  const path = join(files, name);
  writeFileSync(path, content);
  return path;
}

async function imported(path: string): Promise<CommittedEvent[]> {
  const events: CommittedEvent[] = [];
  for await (const event of client.readAll(path, { afterOffset: 1 })) events.push(event);
  return events;
}

describe('rivulet import stops at the first bad line (exit 1)', () => {
  it('a line that is not JSON: the lines before are imported', async () => {
    const run = await rivulet(t.url, ['import', '--file', file('bad.ndjson', ndjson([exported(2), exported(3), '{"path":', exported(4)]))]);
    expect(run.code).toBe(1);
    expect(run.err[0]).toMatch(/^rivulet import: line 3: not valid JSON \(/);
    expect(run.err[1]).toBe('rivulet import: 2 event(s) before line 3 were imported (0 already there), nothing after it; importing again appends nothing twice');
    expect((await imported('/src')).map((e) => e.payload?.offset)).toEqual([2, 3]);
  });

  it('a line that is not an exported event, or not an object', async () => {
    const plain = await rivulet(t.url, ['import', '--file', '-'], { readStdin: async () => ndjson([exported(2), { type: 'a' }]) });
    expect([plain.code, plain.err[0]]).toEqual([
      1,
      'rivulet import: line 2: not an exported event: it needs path, offset and type (a line of rivulet export, read --all --json or tail --json)',
    ]);
    const number = await rivulet(t.url, ['import', '--file', '-'], { readStdin: async () => '7\n' });
    expect([number.code, number.err[0]]).toEqual([1, 'rivulet import: line 1: not an event object']);
    const offsetZero = await rivulet(t.url, ['import', '--file', '-'], { readStdin: async () => ndjson([exported(0)]) });
    expect(offsetZero.err[0]).toMatch(/^rivulet import: line 1: not an exported event/);
  });

  it('a line the server refuses, named by its number; fixing it and importing again goes on', async () => {
    const lines = [exported(2), exported(3), exported(4, { type: 'x'.repeat(513) }), exported(5)];
    const run = await rivulet(t.url, ['import', '--file', file('refused.ndjson', ndjson(lines))]);
    expect(run.code).toBe(1);
    expect(run.err[0]).toBe('rivulet import: line 3: INVALID_INPUT type: Too big: expected string to have <=512 characters');
    expect((await imported('/src')).map((e) => e.payload?.offset)).toEqual([2, 3]);
    lines[2] = exported(4);
    const again = await rivulet(t.url, ['import', '--file', file('fixed.ndjson', ndjson(lines))]);
    expect(again.stdout).toBe('imported 2 event(s) into 1 stream(s), 2 already there; skipped 0 control and 0 ephemeral event(s)');
    expect((await imported('/src')).map((e) => e.payload?.offset)).toEqual([2, 3, 4, 5]);
  });

  it('an event whose metadata.importedFrom is not a chain of hops; a chain gains one hop', async () => {
    const taken = await rivulet(t.url, ['import', '--file', '-'], { readStdin: async () => ndjson([exported(2, { metadata: { importedFrom: 'x' } })]) });
    expect([taken.code, taken.err[0]]).toEqual([1, 'rivulet import: line 1: metadata.importedFrom is taken by something that is not a list of import hops']);
    const hop = { path: '/first', offset: 9, createdAt: at };
    const chained = await rivulet(t.url, ['import', '--file', '-'], { readStdin: async () => ndjson([exported(2, { metadata: { importedFrom: [hop] } })]) });
    expect(chained.code).toBe(0);
    expect((await imported('/src'))[0]?.metadata).toEqual({ importedFrom: [hop, { path: '/src', streamId: SID, offset: 2, createdAt: at }] });
  });

  it('--to with lines of a second stream', async () => {
    const run = await rivulet(t.url, ['import', '--file', '-', '--to', '/one'], { readStdin: async () => ndjson([exported(2), exported(3, { path: '/other' })]) });
    expect([run.code, run.err[0]]).toEqual([1, 'rivulet import: line 2: --to takes the events of one stream: this line is from /other, the lines before from /src (use --prefix-map)']);
    expect((await imported('/one')).map((e) => e.payload?.offset)).toEqual([2]);
  });

  it('keys lines without a streamId on their path', async () => {
    const run = await rivulet(t.url, ['import', '--file', '-'], { readStdin: async () => ndjson([exported(2, { streamId: undefined })]) });
    expect(run.code).toBe(0);
    expect((await imported('/src'))[0]?.idempotencyKey).toBe('import:/src:2');
  });

  it('a server that cannot be reached', async () => {
    const url = t.url;
    await t.stop();
    const run = await rivulet(url, ['import', '--file', '-'], { readStdin: async () => ndjson([exported(2)]) });
    expect(run.code).toBe(1);
    expect(run.err[0]).toMatch(/^rivulet import: UNAVAILABLE cannot reach /);
    expect(run.err).toHaveLength(1);
  });
});

describe('rivulet import usage errors (exit 2)', () => {
  const cases: [string[], string][] = [
    [[], 'missing --file FILE (or --file - for standard input)'],
    [['--file', '-', '--to', '/a', '--prefix-map', '/b=/c'], 'give either --to or --prefix-map, not both'],
    [['--file', '-', '--prefix-map', '/b'], '--prefix-map takes OLD=NEW, got "/b"'],
    [['--file', '-', '--prefix-map', '=/c'], '--prefix-map takes OLD=NEW, got "=/c"'],
    [['--file', '-', '--prefix-map', '/b='], '--prefix-map takes OLD=NEW, got "/b="'],
    [['--file', '-', '--prefix-map', '/b=/c//d'], '--prefix-map: stream path "/c//d" has an empty segment'],
    [['--file', '-', '--to', '/a?'], '--to: stream path "/a?"'],
    [['--file', '-', 'extra'], 'unexpected argument "extra"'],
    [['--file', '/no/such/file.ndjson'], 'cannot read /no/such/file.ndjson'],
    [['--file', '/'], 'cannot read /: it is a directory'],
  ];
  for (const [args, message] of cases) {
    it(`import ${args.join(' ')}`, async () => {
      const run = await rivulet(t.url, ['import', ...args], { readStdin: async () => '' });
      expect(run.code).toBe(2);
      expect(run.err[0]).toContain(`rivulet import: ${message}`);
      expect(run.stderr).toContain('Usage: rivulet import --file');
      expect((await client.list()).streams).toEqual([]);
    });
  }
});
