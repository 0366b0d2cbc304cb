import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createClient, type CommittedEvent } from '@rivulet/client';
import { rivulet, startTestServer, useServerAndFiles } from './harness.js';
import { spawnCli } from './processes.js';

const t = useServerAndFiles('rivulet-cli-ndjson-');

const ndjson = (values: unknown[]) => values.map((v) => JSON.stringify(v)).join('\n') + '\n';
const caller = async (path: string) => (await collect(t.client.readAll(path))).slice(1);

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

describe('rivulet append --file with NDJSON', () => {
  it('appends one event per line in order, skipping blank lines, and prints each', async () => {
    const input = t.file('three.ndjson', `{"type":"a","payload":{"n":1}}\n\n{"type":"b"}\r\n{"type":"c","metadata":{"m":true}}`);
    const run = await rivulet(t.url, ['append', '/nd', '--file', input]);
    expect(run.code).toBe(0);
    expect(run.out.map((l) => l.split(/\s+/)[2])).toEqual(['a', 'b', 'c']);
    const events = await caller('/nd');
    expect(events.map((e) => [e.offset, e.type, e.payload, e.metadata])).toEqual([
      [2, 'a', { n: 1 }, undefined],
      [3, 'b', undefined, undefined],
      [4, 'c', undefined, { m: true }],
    ]);
  });

  it('prints one committed event per line with --json, and takes a pretty-printed single event', async () => {
    const run = await rivulet(t.url, ['append', '/j', '--file', '-', '--json'], { stdin: Readable.from(['{"type":"x"}\n{"ty', 'pe":"y"}\n']) });
    expect(run.code).toBe(0);
    expect(run.out.map((l) => (JSON.parse(l) as CommittedEvent).offset)).toEqual([2, 3]);
    const pretty = await rivulet(t.url, ['append', '/j', '--file', t.file('pretty.json', '{\n  "type": "z"\n}\n')]);
    expect(pretty.code).toBe(0);
    expect((await caller('/j')).map((e) => e.type)).toEqual(['x', 'y', 'z']);
  });

  it('appends 2 500 lines in order, in batches', async () => {
    const lines = Array.from({ length: 2500 }, (_, i) => ({ type: 't', payload: { i } }));
    const run = await rivulet(t.url, ['append', '/many', '--file', t.file('many.ndjson', ndjson(lines)), '--json']);
    expect(run.code).toBe(0);
    const events = await caller('/many');
    expect(events.map((e) => e.payload?.i)).toEqual(lines.map((_, i) => i));
    expect(events.at(-1)?.offset).toBe(2501);
  });

  it('stops at the first refused line, naming it: the lines before are appended, none after (exit 1)', async () => {
    const lines: unknown[] = Array.from({ length: 1500 }, (_, i) => ({ type: 't', payload: { i } }));
    lines[1233] = { type: 't', colour: 'red' };
    const run = await rivulet(t.url, ['append', '/stop', '--file', t.file('stop.ndjson', ndjson(lines))]);
    expect(run.code).toBe(1);
    expect(run.err[0]).toMatch(/^rivulet append: line 1234: INVALID_INPUT .*colour/);
    expect(run.err[1]).toBe('rivulet append: 1233 event(s) before line 1234 were appended, nothing after it');
    const events = await caller('/stop');
    expect(events.map((e) => e.payload?.i)).toEqual(Array.from({ length: 1233 }, (_, i) => i));
    expect(run.out).toHaveLength(1233);
  });

  it('names a line that is not JSON, or not an event object, after appending the lines before it (exit 1)', async () => {
    const bad = await rivulet(t.url, ['append', '/bad', '--file', t.file('bad.ndjson', '{"type":"a"}\n{"type":"b"}\n{"type":\n{"type":"c"}\n')]);
    expect(bad.code).toBe(1);
    expect(bad.err[0]).toMatch(/^rivulet append: line 3: not valid JSON \(/);
    expect((await caller('/bad')).map((e) => e.type)).toEqual(['a', 'b']);
    const notObject = await rivulet(t.url, ['append', '/bad2', '--file', '-'], { readStdin: async () => '{"type":"a"}\n[1]\n' });
    expect([notObject.code, notObject.err[0]]).toEqual([1, 'rivulet append: line 2: not an event object']);
    expect((await caller('/bad2')).map((e) => e.type)).toEqual(['a']);
  });

  it('reports the server refusing a CONFLICT by line', async () => {
    await t.client.append('/c', { type: 't', idempotencyKey: 'k', payload: { n: 1 } });
    const run = await rivulet(t.url, ['append', '/c', '--file', '-'], {
      readStdin: async () => ndjson([{ type: 'u' }, { type: 't', idempotencyKey: 'k', payload: { n: 2 } }]),
    });
    expect(run.code).toBe(1);
    expect(run.err[0]).toMatch(/^rivulet append: line 2: CONFLICT idempotency key "k" already names a different event/);
  });

  it('says nothing was appended from a line on when the server cannot be reached', async () => {
    const url = t.url;
    await t.stop();
    const run = await rivulet(url, ['append', '/x', '--file', '-'], { readStdin: async () => '{"type":"a"}\n' });
    expect(run.code).toBe(1);
    expect(run.err[0]).toMatch(/^rivulet append: line 1: UNAVAILABLE cannot reach .* \(nothing from line 1 on was appended\)$/);
  });

  it('takes committed events from read --all --json and read --json, skipping their control events', async () => {
    await t.client.append('/src', [{ type: 'a', payload: { n: 1 }, metadata: { m: 1 }, idempotencyKey: 'ka' }, { type: 'b' }]);
    const all = await rivulet(t.url, ['read', '/src', '--all', '--json']);
    const run = await rivulet(t.url, ['append', '/dst', '--file', '-'], { readStdin: async () => all.stdout });
    expect(run.code).toBe(0);
    expect(run.err).toEqual(['rivulet append: skipped 1 committed control event(s) of events.iterate.com/stream/ (see rivulet import --include-control)']);
    const copied = await caller('/dst');
    expect(copied.map((e) => [e.offset, e.type, e.payload, e.metadata, e.idempotencyKey])).toEqual([
      [2, 'a', { n: 1 }, { m: 1 }, 'ka'],
      [3, 'b', undefined, undefined, undefined],
    ]);
    const page = await rivulet(t.url, ['read', '/src', '--json', '--after', '1']);
    expect((await rivulet(t.url, ['append', '/dst2', '--file', '-'], { readStdin: async () => page.stdout })).code).toBe(0);
    expect((await caller('/dst2')).map((e) => e.type)).toEqual(['a', 'b']);
  });
});

describe('a server with a smaller body limit than a batch', () => {
  it('still appends every line in order, and names a line too large for any body', async () => {
    const small = await startTestServer({ maxBodyBytes: 16 * 1024, maxEventBytes: 8 * 1024 });
    try {
      const lines: unknown[] = Array.from({ length: 600 }, (_, i) => ({ type: 't', payload: { i, text: 'y'.repeat(100) } }));
      const ok = await rivulet(small.url, ['append', '/s', '--file', t.file('small-body.ndjson', ndjson(lines)), '--json']);
      expect(ok.code).toBe(0);
      const events = (await collect(createClient({ url: small.url }).readAll('/s'))).slice(1);
      expect(events.map((e) => e.payload?.i)).toEqual(lines.map((_, i) => i));
      lines[300] = { type: 't', payload: { text: 'z'.repeat(20 * 1024) } };
      const big = await rivulet(small.url, ['append', '/s2', '--file', t.file('too-big.ndjson', ndjson(lines))]);
      expect(big.code).toBe(1);
      expect(big.err[0]).toMatch(/^rivulet append: line 301: PAYLOAD_TOO_LARGE /);
      expect(big.err[1]).toBe('rivulet append: 300 event(s) before line 301 were appended, nothing after it');
    } finally {
      await small.dispose();
    }
  });
});

describe('shell pipes into append --file -', () => {
  it('rivulet tail A --json | rivulet append B --file - appends live events as they come', async () => {
    await t.client.append('/a', { type: 'before' });
    const tail = spawnCli(['tail', '/a', '--json'], { url: t.url, pipeOut: true });
    const append = spawnCli(['append', '/b', '--file', '-'], { url: t.url, stdin: tail.child.stdout! });
    await until(async () => (await caller('/b')).length === 1);
    await t.client.append('/a', [{ type: 'live', payload: { n: 1 } }, { type: 'live', payload: { n: 2 } }]);
    await until(async () => (await caller('/b')).length === 3);
    await t.client.destroy('/a');
    expect(await tail.exit).toBe(0);
    expect(await append.exit).toBe(0);
    expect((await caller('/b')).map((e) => [e.type, e.payload])).toEqual([
      ['before', undefined],
      ['live', { n: 1 }],
      ['live', { n: 2 }],
    ]);
    expect(append.stderr()).toContain('skipped 1 committed control event(s)');
  });
});

/** Polls the server (not a clock): resolves once `ready` holds. */
async function until(ready: () => Promise<boolean>): Promise<void> {
  while (!(await ready())) await new Promise((resolve) => setTimeout(resolve, 20));
}
