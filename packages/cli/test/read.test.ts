import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type RivuletClient } from '@rivulet/client';
import { rivulet, startTestServer, type TestServer } from './harness.js';

let t: TestServer;
let client: RivuletClient;

beforeEach(async () => {
  t = await startTestServer();
  client = createClient({ url: t.url });
  // offsets 2..12: a b a b a b a b a b, then an ephemeral x at 12
  await client.append('/r', Array.from({ length: 10 }, (_, i) => ({ type: i % 2 === 0 ? 'a' : 'b', payload: { i } })));
  await client.append('/r', { type: 'x', ephemeral: true });
});
afterEach(() => t.dispose());

const offsetsOf = (lines: string[]) => lines.map((l) => Number(l.trim().split(/\s+/)[0]));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('rivulet read', () => {
  it('prints one page of aligned "offset  time  type  payload" lines', async () => {
    const run = await rivulet(t.url, ['read', 'r']);
    expect(run.code).toBe(0);
    expect(offsetsOf(run.out)).toEqual(range(1, 11));
    expect(run.out[1]).toMatch(/^ 2 {2}\S+Z {2}a {2}\{"i":0\}$/);
    expect(run.out[10]).toMatch(/^11 {2}\S+Z {2}b {2}\{"i":9\}$/);
    expect(run.stderr).toBe('');
  });

  it('honours --after, --before, --types and --ephemeral', async () => {
    expect(offsetsOf((await rivulet(t.url, ['read', '/r', '--after', '3', '--before', '7'])).out)).toEqual([4, 5, 6]);
    expect(offsetsOf((await rivulet(t.url, ['read', '/r', '--types', 'b, x', '--ephemeral'])).out)).toEqual([3, 5, 7, 9, 11, 12]);
    const ephemeral = await rivulet(t.url, ['read', '/r', '--after', '11', '--ephemeral']);
    expect(ephemeral.out[0]).toMatch(/x {2}\{\} {2}\(ephemeral\)$/);
  });

  it('says when one page was not everything, and --all reads every page', async () => {
    const page = await rivulet(t.url, ['read', '/r', '--limit', '4']);
    expect(offsetsOf(page.out)).toEqual([1, 2, 3, 4]);
    expect(page.stderr).toBe('more events follow: rivulet read /r --after 4 (or --all)');
    const all = await rivulet(t.url, ['read', '/r', '--limit', '4', '--all']);
    expect(offsetsOf(all.out)).toEqual(range(1, 11));
    expect(all.stderr).toBe('');
  });

  it('prints one JSON document with --json, and with --all one event per line with its streamId', async () => {
    type Doc = { streamId: string; streamMaxOffset: number; events: { offset: number }[] };
    const one = JSON.parse((await rivulet(t.url, ['read', '/r', '--limit', '2', '--json'])).stdout) as Doc;
    expect(one).toMatchObject({ streamMaxOffset: 12, streamId: expect.any(String) });
    expect(one.events.map((e) => e.offset)).toEqual([1, 2]);
    const run = await rivulet(t.url, ['read', '/r', '--limit', '3', '--all', '--json', '--after', '1']);
    const lines = run.out.map((line) => JSON.parse(line) as { offset: number; streamId: string; path: string; type: string });
    expect(lines.map((e) => e.offset)).toEqual(range(2, 11));
    expect(lines.every((e) => e.streamId === one.streamId && e.path === '/r')).toBe(true);
    expect(lines[0]).toMatchObject({ type: 'a', payload: { i: 0 }, createdAt: expect.any(String) });
    const none = await rivulet(t.url, ['read', '/nothing', '--all', '--json']);
    expect([none.code, none.stdout, none.stderr]).toEqual([0, '', '']);
  });

  it('tells a person that a stream does not exist, and --json gives the empty document', async () => {
    const run = await rivulet(t.url, ['read', '/nothing']);
    expect([run.code, run.stdout, run.stderr]).toEqual([0, '', 'stream /nothing does not exist']);
    const json = await rivulet(t.url, ['read', '/nothing', '--json']);
    expect(JSON.parse(json.stdout)).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    const none = await rivulet(t.url, ['read', '/r', '--after', '12']);
    expect([none.stdout, none.stderr]).toEqual(['', 'no events']);
  });

  it('reports the server refusing a page size above 500 (exit 1)', async () => {
    const run = await rivulet(t.url, ['read', '/r', '--limit', '501']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('rivulet read: INVALID_INPUT query.limit: limit must be at most 500');
  });

  it('--last N prints the last N matching events, like tail -n', async () => {
    expect(offsetsOf((await rivulet(t.url, ['read', '/r', '--last', '3'])).out)).toEqual([9, 10, 11]);
    expect(offsetsOf((await rivulet(t.url, ['read', '/r', '--last', '2', '--types', 'a'])).out)).toEqual([8, 10]);
    expect(offsetsOf((await rivulet(t.url, ['read', '/r', '--last', '2', '--ephemeral'])).out)).toEqual([11, 12]);
    expect(offsetsOf((await rivulet(t.url, ['read', '/r', '--last', '2', '--before', '5'])).out)).toEqual([3, 4]);
    expect(offsetsOf((await rivulet(t.url, ['read', '/r', '--last', '10000'])).out)).toEqual(range(1, 11));
    const json = JSON.parse((await rivulet(t.url, ['read', '/r', '--last', '1', '--json'])).stdout) as { streamMaxOffset: number; events: { offset: number }[] };
    expect(json).toMatchObject({ streamMaxOffset: 12, events: [{ offset: 11 }] });
    const missing = await rivulet(t.url, ['read', '/nothing', '--last', '5']);
    expect([missing.code, missing.stdout, missing.stderr]).toEqual([0, '', 'stream /nothing does not exist']);
  });

  describe('usage errors (exit 2)', () => {
    const cases: [string[], string][] = [
      [['/r', '--last', '0'], '--last must be at least 1, got "0"'],
      [['/r', '--last', '10001'], '--last must be at most 10000, got "10001"'],
      [['/r', '--last', '3', '--all'], '--last reads back from the head: it does not go with --all'],
      [['/r', '--last', '3', '--after', '2'], '--last reads back from the head: it does not go with --after'],
      [['/r', '--last', '3', '--limit', '2'], '--last reads back from the head: it does not go with --limit'],
      [['/r', '--after', 'ten'], '--after must be a whole number, got "ten"'],
      [['/r', '--before', '0'], '--before must be at least 1, got "0"'],
      [['/r', '--limit', '0'], '--limit must be at least 1, got "0"'],
      [['/r', '--types', ' , '], '--types needs at least one event type'],
      [[], 'missing PATH'],
      [['/r', '/s'], 'unexpected argument "/s"'],
      [['/r', '--follow'], "Unknown option '--follow'"],
    ];
    for (const [args, message] of cases) {
      it(`read ${args.join(' ')}`, async () => {
        const run = await rivulet(t.url, ['read', ...args]);
        expect(run.code).toBe(2);
        expect(run.err[0]).toContain(`rivulet read: ${message}`);
        expect(run.stderr).toContain('Usage: rivulet read PATH');
      });
    }
  });
});
