import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type CommittedEvent, type RivuletClient } from '@rivulet/client';
import { rivulet, startTestServer, type TestServer } from './harness.js';
import { spawnCli } from './processes.js';

let source: TestServer;
let target: TestServer;
let from: RivuletClient;
let to: RivuletClient;
let files: string;

beforeAll(() => {
  files = mkdtempSync(join(tmpdir(), 'rivulet-cli-export-'));
});
afterAll(() => rmSync(files, { recursive: true, force: true }));
beforeEach(async () => {
  [source, target] = await Promise.all([startTestServer(), startTestServer()]);
  from = createClient({ url: source.url });
  to = createClient({ url: target.url });
});
afterEach(() => Promise.all([source.dispose(), target.dispose()]));

type Line = CommittedEvent & { streamId: string };

async function all(client: RivuletClient, path: string): Promise<CommittedEvent[]> {
  const events: CommittedEvent[] = [];
  for await (const event of client.readAll(path)) events.push(event);
  return events;
}

async function exportTo(name: string, args: string[]): Promise<string> {
  const run = await rivulet(source.url, ['export', ...args]);
  expect(run.code).toBe(0);
  const path = join(files, name);
  writeFileSync(path, run.out.map((l) => `${l}\n`).join(''));
  return path;
}

describe('rivulet export', () => {
  it('writes one line per committed event with its streamId, from --after on', async () => {
    await from.append('/shop/orders', [{ type: 'a', payload: { n: 1 }, metadata: { m: 1 }, idempotencyKey: 'k1' }, { type: 'b' }]);
    const { streamId } = await from.getEvents('/shop/orders', { limit: 1 });
    const run = await rivulet(source.url, ['export', 'shop/orders']);
    expect(run.code).toBe(0);
    const lines = run.out.map((l) => JSON.parse(l) as Line);
    expect(lines).toEqual((await all(from, '/shop/orders')).map((e) => ({ ...e, streamId })));
    expect(lines[1]).toMatchObject({ offset: 2, type: 'a', payload: { n: 1 }, metadata: { m: 1 }, idempotencyKey: 'k1' });
    expect(run.stderr).toBe('rivulet export: 3 event(s) from 1 stream(s)');
    const after = await rivulet(source.url, ['export', '/shop/orders', '--after', '2']);
    expect(after.out.map((l) => (JSON.parse(l) as Line).offset)).toEqual([3]);
    const missing = await rivulet(source.url, ['export', '/nothing']);
    expect([missing.code, missing.stdout, missing.stderr]).toEqual([0, '', 'rivulet export: 0 event(s) from 0 stream(s)']);
  });

  it('--prefix exports the streams at or below it, in path order; no argument exports every stream', async () => {
    for (const path of ['/a/b', '/ab', '/a', '/z']) await from.append(path, { type: 't', payload: { path } });
    const prefixed = await rivulet(source.url, ['export', '--prefix', '/a']);
    const paths = prefixed.out.map((l) => (JSON.parse(l) as Line).path);
    expect(paths).toEqual(['/a', '/a', '/a/b', '/a/b']);
    const every = await rivulet(source.url, ['export']);
    expect(new Set(every.out.map((l) => (JSON.parse(l) as Line).path))).toEqual(new Set(['/a', '/a/b', '/ab', '/z']));
    expect(every.stderr).toBe('rivulet export: 8 event(s) from 4 stream(s)');
  });

  it('refuses PATH with --prefix, two paths, and a bad --after (exit 2)', async () => {
    for (const [args, message] of [
      [['/a', '--prefix', '/b'], 'give either PATH or --prefix, not both'],
      [['/a', '/b'], 'unexpected argument "/b"'],
      [['/a', '--after', 'ten'], '--after must be a whole number, got "ten"'],
    ] as const) {
      const run = await rivulet(source.url, ['export', ...args]);
      expect([run.code, run.err[0]]).toEqual([2, `rivulet export: ${message}`]);
      expect(run.stderr).toContain('Usage: rivulet export');
    }
    const badPath = await rivulet(source.url, ['export', '/a//b']);
    expect([badPath.code, badPath.stderr]).toEqual([1, 'rivulet export: INVALID_INPUT stream path "/a//b" has an empty segment']);
  });
});

describe('a reader that goes away (rivulet export | head -1)', () => {
  for (const args of [['export', '/long'], ['read', '/long', '--all', '--json']]) {
    it(`rivulet ${args.join(' ')} stops quietly with exit code 0`, async () => {
      await from.append('/long', Array.from({ length: 5000 }, (_, i) => ({ type: 't', payload: { i, text: 'x'.repeat(200) } })));
      const cli = spawnCli(args, { url: source.url, pipeOut: true });
      const first = await new Promise<string>((resolve) => {
        let text = '';
        cli.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk;
          if (text.includes('\n')) {
            cli.child.stdout!.destroy();
            resolve(text.slice(0, text.indexOf('\n')));
          }
        });
      });
      expect(JSON.parse(first)).toMatchObject({ offset: 1, path: '/long' });
      expect(await cli.exit).toBe(0);
      expect(cli.stderr()).toBe('');
    });
  }
});

describe('rivulet import', () => {
  it('appends the events into another server with their type, payload, metadata and provenance', async () => {
    await from.append('/shop/orders', [{ type: 'a', payload: { n: 1 }, metadata: { m: 1 }, idempotencyKey: 'k1' }, { type: 'b' }]);
    await from.append('/shop/users', { type: 'u', payload: { id: 3 } });
    const file = await exportTo('shop.ndjson', ['--prefix', '/shop']);
    const orders = (await from.getEvents('/shop/orders', { limit: 1 })).streamId!;
    const run = await rivulet(target.url, ['import', '--file', file]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('imported 3 event(s) into 2 stream(s), 0 already there; skipped 2 control and 0 ephemeral event(s)');
    const imported = await all(to, '/shop/orders');
    expect(imported[0]!.type).toBe('events.iterate.com/stream/created');
    expect(imported[0]!.payload?.streamId).not.toBe(orders);
    const original = await all(from, '/shop/orders');
    expect(imported.slice(1).map((e) => [e.offset, e.type, e.payload, e.idempotencyKey])).toEqual([
      [2, 'a', { n: 1 }, `import:${orders}:2`],
      [3, 'b', undefined, `import:${orders}:3`],
    ]);
    expect(imported[1]!.metadata).toEqual({
      m: 1,
      importedFrom: [{ path: '/shop/orders', streamId: orders, offset: 2, createdAt: original[1]!.createdAt, idempotencyKey: 'k1' }],
    });
    expect((await all(to, '/shop/users')).map((e) => e.type)).toEqual(['events.iterate.com/stream/created', 'u']);
  });

  it('appends nothing when the same file is imported again', async () => {
    await from.append('/s', Array.from({ length: 1200 }, (_, i) => ({ type: 't', payload: { i } })));
    const file = await exportTo('again.ndjson', ['/s']);
    expect((await rivulet(target.url, ['import', '--file', file, '--json'])).stdout).toBe(
      JSON.stringify({ appended: 1200, alreadyPresent: 0, streams: 1, skipped: { control: 1, ephemeral: 0 } }),
    );
    const before = await to.getEvents('/s', { limit: 1 });
    await to.append('/s', { type: 'meanwhile' });
    const again = await rivulet(target.url, ['import', '--file', file]);
    expect(again.code).toBe(0);
    expect(again.stdout).toBe('imported 0 event(s) into 1 stream(s), 1200 already there; skipped 1 control and 0 ephemeral event(s)');
    const after = await to.getEvents('/s', { limit: 1 });
    expect([after.streamId, after.streamMaxOffset]).toEqual([before.streamId, before.streamMaxOffset + 1]);
  });

  it('takes read --json and read --last --json documents, with the keys an export gives', async () => {
    await from.append('/doc', [{ type: 'a' }, { type: 'b' }, { type: 'c' }]);
    const page = await rivulet(source.url, ['read', '/doc', '--json', '--limit', '3']);
    const first = await rivulet(target.url, ['import', '--file', '-'], { readStdin: async () => page.stdout });
    expect(first.stdout).toMatch(/^imported 2 event\(s\) into 1 stream\(s\), 0 already there; skipped 1 control/);
    const last = await rivulet(source.url, ['read', '/doc', '--json', '--last', '2']);
    const second = await rivulet(target.url, ['import', '--file', '-'], { readStdin: async () => last.stdout });
    expect(second.stdout).toMatch(/^imported 1 event\(s\) into 1 stream\(s\), 1 already there;/);
    const again = await rivulet(target.url, ['import', '--file', await exportTo('doc.ndjson', ['/doc'])]);
    expect(again.stdout).toMatch(/^imported 0 event\(s\) into 1 stream\(s\), 3 already there;/);
  });

  it('a file imported again after it grew appends only the new lines', async () => {
    await from.append('/g', [{ type: 'a' }, { type: 'b' }]);
    await rivulet(target.url, ['import', '--file', await exportTo('g1.ndjson', ['/g'])]);
    await from.append('/g', { type: 'c' });
    const run = await rivulet(target.url, ['import', '--file', await exportTo('g2.ndjson', ['/g'])]);
    expect(run.stdout).toMatch(/^imported 1 event\(s\) into 1 stream\(s\), 2 already there;/);
    expect((await all(to, '/g')).map((e) => e.type).slice(1)).toEqual(['a', 'b', 'c']);
  });

  it('--to sends one stream elsewhere; --prefix-map moves a subtree, the longest match winning', async () => {
    for (const path of ['/shop/orders', '/shop/eu/orders', '/other']) await from.append(path, { type: 't', payload: { path } });
    const orders = await exportTo('orders.ndjson', ['/shop/orders']);
    expect((await rivulet(target.url, ['import', '--file', orders, '--to', 'archive/orders'])).code).toBe(0);
    expect((await all(to, '/archive/orders')).map((e) => e.payload?.path)).toEqual([expect.any(String), '/shop/orders']);
    const every = await exportTo('every.ndjson', []);
    const run = await rivulet(target.url, ['import', '--file', every, '--prefix-map', '/shop=/r/shop', '--prefix-map', '/shop/eu=/eu']);
    expect(run.code).toBe(0);
    const listed = (await to.list()).streams.map((s) => s.path);
    expect(listed).toEqual(['/archive/orders', '/eu/orders', '/other', '/r/shop/orders']);
  });

  it('skips control and ephemeral events; --include-control replays what a caller may append', async () => {
    await from.append('/c', [{ type: 'a' }, { type: 'events.iterate.com/stream/paused', payload: { reason: 'x' } }]);
    await from.append('/c', [{ type: 'events.iterate.com/stream/resumed' }, { type: 'b' }]);
    await from.subscribeToEventsFrom('/c-copy', { sourceStreamPath: '/c', subscriptionKey: 'mirror' });
    const file = await exportTo('control.ndjson', ['/c']);
    const withEphemeral = `${readFileSync(file, 'utf8')}${JSON.stringify({ path: '/c', offset: 99, createdAt: new Date().toISOString(), type: 'e', ephemeral: true })}\n`;
    const plain = await rivulet(target.url, ['import', '--file', '-'], { readStdin: async () => withEphemeral });
    expect(plain.stdout).toBe('imported 2 event(s) into 1 stream(s), 0 already there; skipped 4 control and 1 ephemeral event(s)');
    expect((await to.state('/c')).core?.subscriptions.outbound.byKey).toEqual({});

    const replay = await rivulet(target.url, ['import', '--file', file, '--to', '/c2', '--include-control']);
    expect(replay.stdout).toBe('imported 5 event(s) into 1 stream(s), 0 already there; skipped 1 control and 0 ephemeral event(s)');
    const types = (await all(to, '/c2')).map((e) => e.type.replace('events.iterate.com/stream/', ''));
    expect(types).toEqual(['created', 'a', 'paused', 'resumed', 'b', 'subscription-configured']);
    const state = await to.state('/c2');
    expect(state.core?.paused).toBe(false);
    expect(Object.keys(state.core?.subscriptions.outbound.byKey ?? {})).toEqual(['mirror']);
  });
});

describe('pipes into rivulet import', () => {
  it('rivulet export | rivulet import between two servers, and read --all --json | import', async () => {
    await from.append('/p', [{ type: 'a' }, { type: 'b' }]);
    const exporter = spawnCli(['export', '/p'], { url: source.url, pipeOut: true });
    const importer = spawnCli(['import', '--file', '-'], { url: target.url, stdin: exporter.child.stdout! });
    expect([await exporter.exit, await importer.exit]).toEqual([0, 0]);
    expect(await importer.stdout).toMatch(/^imported 2 event\(s\) into 1 stream\(s\)/);
    const reader = spawnCli(['read', '/p', '--all', '--json'], { url: source.url, pipeOut: true });
    const again = spawnCli(['import', '--file', '-'], { url: target.url, stdin: reader.child.stdout! });
    expect([await reader.exit, await again.exit]).toEqual([0, 0]);
    expect(await again.stdout).toMatch(/^imported 0 event\(s\) into 1 stream\(s\), 2 already there/);
    expect(importer.stderr() + again.stderr()).toBe('');
  });

  it('rivulet tail --json | rivulet import --to imports live events, with the same keys as export', async () => {
    await from.append('/live', { type: 'first' });
    const tail = spawnCli(['tail', '/live', '--json'], { url: source.url, pipeOut: true });
    const importer = spawnCli(['import', '--file', '-', '--to', '/mirror'], { url: target.url, stdin: tail.child.stdout! });
    await until(async () => (await to.getEvents('/mirror')).events.length === 2);
    await from.append('/live', { type: 'second' });
    await until(async () => (await to.getEvents('/mirror')).events.length === 3);
    const exported = await exportTo('live.ndjson', ['/live']);
    await from.destroy('/live');
    expect([await tail.exit, await importer.exit]).toEqual([0, 0]);
    const again = await rivulet(target.url, ['import', '--file', exported, '--to', '/mirror']);
    expect(again.stdout).toMatch(/^imported 0 event\(s\) into 1 stream\(s\), 2 already there/);
    expect((await all(to, '/mirror')).map((e) => e.type).slice(1)).toEqual(['first', 'second']);
  });
});

/** Polls the server (not a clock): resolves once `ready` holds. */
async function until(ready: () => Promise<boolean>): Promise<void> {
  while (!(await ready())) await new Promise((resolve) => setTimeout(resolve, 20));
}
