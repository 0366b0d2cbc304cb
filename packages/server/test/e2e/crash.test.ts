/**
 * Acknowledged appends survive `kill -9` of the server and a restart (protocol §4.1, §4.7, §10.1,
 * §16.5).
 * The built CLI runs as a child process; concurrent writers append to several streams until the
 * process is SIGKILLed mid-load; a new process on the same data folder must hold every
 * acknowledged event at its offset, dense offsets, and a core state equal to a fold of its log.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { CommittedEvent } from '@rivulet/contract';
import { reduce } from '../../src/core/reduce.js';
import { spawnNodeHost, spawnServe, type CliServer } from '../helpers/cli.js';
import { Api, type EventInput } from '../helpers/http.js';
import { tempDir } from '../helpers/server.js';

const STREAMS = ['/crash/a', '/crash/b', '/crash/c', '/crash/d/e'];
const WRITERS = 12;
const KILL_AFTER_ACKED = 300;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Load {
  acked: CommittedEvent[];
  /** Every event id sent, per stream, acknowledged or not. */
  sent: Map<string, Set<string>>;
  failedRequests: number;
}

/**
 * Writers append until the server dies: each request is one to three events (some ephemeral, some
 * with an idempotency key). The server is killed from inside the acknowledgement path as soon as
 * `KILL_AFTER_ACKED` events are acknowledged, so other requests are in flight at that moment.
 */
async function loadUntilKilled(api: Api, kill: () => void): Promise<Load> {
  const load: Load = { acked: [], sent: new Map(STREAMS.map((s) => [s, new Set<string>()])), failedRequests: 0 };
  let killed = false;
  const writer = async (w: number) => {
    for (let round = 0; !killed; round++) {
      const path = STREAMS[(w + round) % STREAMS.length]!;
      const inputs: EventInput[] = [];
      for (let i = 0; i <= (w + round) % 3; i++) {
        const id = `w${w}-r${round}-i${i}`;
        const input: EventInput = { type: 'crash.test/load', payload: { id, w, round } };
        if ((round + i) % 5 === 4) input.ephemeral = true;
        else if ((round + i) % 2 === 0) input.idempotencyKey = `key-${id}`;
        if (i === 0) input.metadata = { writer: w };
        inputs.push(input);
        load.sent.get(path)!.add(id);
      }
      let res;
      try {
        res = await api.post(path, inputs);
      } catch {
        load.failedRequests++;
        return; // the server is gone
      }
      expect(res.status, res.text).toBe(200);
      load.acked.push(...(res.body as { events: CommittedEvent[] }).events);
      if (!killed && load.acked.length >= KILL_AFTER_ACKED) {
        killed = true;
        kill();
      }
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  return load;
}

async function start(dir: string, durability: string): Promise<CliServer> {
  const server = await spawnServe(['--data', dir, '--durability', durability]);
  cleanups.push(() => server.kill('SIGKILL'));
  return server;
}

describe('kill -9', () => {
  for (const durability of ['full', 'relaxed']) {
    it(`acknowledged appends survive kill -9 of the server and a restart (--durability ${durability})`, async () => {
      const { dir, remove } = await tempDir('rivulet-s11-');
      cleanups.push(remove);

      const first = await start(dir, durability);
      const load = await loadUntilKilled(new Api(first.url), () => {
        first.child.kill('SIGKILL');
      });
      const exit = await first.exited;
      expect(exit.signal).toBe('SIGKILL');
      expect(load.acked.length).toBeGreaterThanOrEqual(KILL_AFTER_ACKED);

      const second = await start(dir, durability);
      const api = new Api(second.url);
      for (const path of STREAMS) {
        const all = await api.readAll(path, { includeEphemeral: true });
        const head = all.length;
        // Dense offsets from 1, stream/created first, every event where it belongs.
        expect(all.map((e) => e.offset)).toEqual(Array.from({ length: head }, (_, i) => i + 1));
        expect(all[0]!.type).toBe('events.iterate.com/stream/created');
        expect(all.every((e) => e.path === path)).toBe(true);

        // Every acknowledged event is there, at its offset, byte for byte the same.
        const acked = load.acked.filter((e) => e.path === path);
        expect(acked.length).toBeGreaterThan(0);
        for (const event of acked) expect(all[event.offset - 1], `offset ${event.offset} of ${path}`).toEqual(event);

        // Nothing invented, nothing doubled: every stored id was sent to this stream, once.
        const ids = all.slice(1).map((e) => (e.payload as { id: string }).id);
        expect(new Set(ids).size).toBe(ids.length);
        for (const id of ids) expect(load.sent.get(path)!.has(id), `unexpected event ${id} in ${path}`).toBe(true);

        // The stored core state equals the fold of the recovered log; the heads agree.
        const read = await api.read(path, { afterOffset: head });
        expect(read.streamMaxOffset).toBe(head);
        expect(read.streamId).toBe((all[0]!.payload as { streamId: string }).streamId);
        const { core, runtime } = await api.state(path);
        let folded: ReturnType<typeof reduce> | null = null;
        for (const event of all) folded = reduce(folded, event);
        expect(core).toEqual(folded);
        expect(core!.eventCount).toBe(all.filter((e) => !e.ephemeral).length);
        expect(runtime!.streamMaxOffset).toBe(head);

        // The idempotency index survived: repeating an acknowledged keyed event returns it.
        const keyed = acked.find((e) => e.idempotencyKey !== undefined)!;
        const { path: _path, offset: _offset, createdAt: _createdAt, ...input } = keyed;
        const [repeat] = await api.append(path, input as EventInput);
        expect(repeat).toEqual(keyed);
        // And the stream continues right after its head.
        const [next] = await api.append(path, { type: 'after-restart' });
        expect(next!.offset).toBe(head + 1);
      }
      await second.kill('SIGTERM');
    }, 60_000);
  }
});

/** The streams rows' checkpoints as stored, read from the data file of a server that is gone. */
function checkpoints(dir: string): Map<string, number> {
  const db = new Database(join(dir, 'rivulet.db'));
  try {
    const rows = db.prepare(`SELECT path, head FROM streams`).all() as Array<{ path: string; head: number }>;
    return new Map(rows.map((r) => [r.path, r.head]));
  } finally {
    db.close();
  }
}

/** Head, counters, listing and state of a stream after a restart, all against a fold of its log. */
async function expectRecovered(api: Api, path: string, head: number): Promise<void> {
  const all = await api.readAll(path, { includeEphemeral: true });
  const durable = all.filter((e) => !e.ephemeral);
  expect((await api.read(path, { afterOffset: head })).streamMaxOffset).toBe(head);
  const { core, runtime } = await api.state(path);
  let folded: ReturnType<typeof reduce> | null = null;
  for (const event of durable) folded = reduce(folded, event);
  expect(core).toEqual(folded);
  expect(core!.eventCount).toBe(durable.length);
  expect(core!.maxOffset).toBe(durable[durable.length - 1]!.offset);
  expect(runtime!.streamMaxOffset).toBe(head);
  const listed = await api.request<{ streams: Array<{ path: string; maxOffset: number }> }>('GET', `/v1/streams?prefix=${encodeURIComponent(path)}`);
  expect(listed.status, listed.text).toBe(200);
  expect(listed.body.streams.find((s) => s.path === path)?.maxOffset).toBe(head);
}

describe('storage format 3: the streams row is a checkpoint; a restart derives the rest', () => {
  it('kill -9 after hundreds of appends that wrote no checkpoint: head, eventCount, maxOffset and the listing come back', async () => {
    const { dir, remove } = await tempDir('rivulet-s11-checkpoint-');
    cleanups.push(remove);
    const first = await start(dir, 'relaxed');
    const api = new Api(first.url);
    const paths = ['/checkpoint/a', '/checkpoint/b'];
    const acked = new Map<string, CommittedEvent[]>(paths.map((p) => [p, []]));
    // Four writers per stream, 1-2 events per request; the last requests end with ephemeral events.
    await Promise.all(
      paths.flatMap((path) =>
        Array.from({ length: 4 }, async (_, w) => {
          for (let round = 0; round < 80; round++) {
            const inputs: EventInput[] = [{ type: 'checkpoint/e', payload: { w, round } }];
            if (round % 7 === 3 || round >= 78) inputs.push({ type: 'checkpoint/eph', ephemeral: true });
            acked.get(path)!.push(...(await api.append(path, inputs)));
          }
        }),
      ),
    );
    const heads = new Map(paths.map((p) => [p, Math.max(...acked.get(p)!.map((e) => e.offset))]));
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');

    // The checkpoints were written by the first append only (stream/created changes the state).
    const stored = checkpoints(dir);
    for (const path of paths) {
      expect(heads.get(path)).toBeGreaterThan(300);
      expect(stored.get(path)).toBeLessThan(10);
    }

    const second = await start(dir, 'relaxed');
    const again = new Api(second.url);
    for (const path of paths) {
      const head = heads.get(path)!;
      const all = await again.readAll(path, { includeEphemeral: true });
      expect(all.map((e) => e.offset)).toEqual(Array.from({ length: head }, (_, i) => i + 1));
      expect(all[head - 1]!.ephemeral).toBe(true);
      for (const event of acked.get(path)!) expect(all[event.offset - 1]).toEqual(event);
      await expectRecovered(again, path, head);
      const [next] = await again.append(path, { type: 'after-restart' });
      expect(next!.offset).toBe(head + 1);
    }
    await second.kill('SIGTERM');
  }, 60_000);

  it('newest events ephemeral and pruned, kill -9, restart: the next offset is above every offset ever used', async () => {
    const { dir, remove } = await tempDir('rivulet-s11-pruned-');
    cleanups.push(remove);
    // Ephemeral events expire after 1 ms and one is kept; each loaded stream prunes on its first append.
    const options = { durability: 'relaxed', ephemeralRetentionMs: 1, ephemeralRetentionCount: 1 };
    const host = async () => {
      const server = await spawnNodeHost(dir, options);
      cleanups.push(() => server.kill('SIGKILL'));
      return server;
    };
    const path = '/checkpoint/pruned';

    const first = await host();
    let api = new Api(first.url);
    await api.append(path, { type: 'kept' });
    const tail = await api.append(path, [1, 2, 3].map((n) => ({ type: 'eph', payload: { n }, ephemeral: true })));
    expect(tail.map((e) => e.offset)).toEqual([3, 4, 5]);
    first.child.kill('SIGKILL');
    await first.exited;

    // The first append after the restart prunes 3-5 (expired) and its own first event (beyond the one kept).
    const second = await host();
    api = new Api(second.url);
    const more = await api.append(path, [{ type: 'eph', ephemeral: true }, { type: 'eph', ephemeral: true }]);
    expect(more.map((e) => e.offset)).toEqual([6, 7]);
    second.child.kill('SIGKILL');
    await second.exited;
    expect(checkpoints(dir).get(path)).toBe(7);
    const db = new Database(join(dir, 'rivulet.db'));
    expect(db.prepare(`SELECT ofs FROM events ORDER BY ofs`).all()).toEqual([{ ofs: 1 }, { ofs: 2 }, { ofs: 7 }]);
    db.close();

    const third = await host();
    api = new Api(third.url);
    await expectRecovered(api, path, 7);
    const [next] = await api.append(path, { type: 'after-restart' });
    expect(next!.offset).toBe(8);
    await third.kill('SIGTERM');
  }, 60_000);
});

describe('storage format 6: idempotency keys are moved in batches; kill -9 keeps every key', () => {
  it('keys moved before the kill and keys only in the rows past the watermark both refuse a repeat after a restart', async () => {
    const { dir, remove } = await tempDir('rivulet-s11-keys-');
    cleanups.push(remove);
    const paths = ['/keys/a', '/keys/b', '/keys/c'];
    const first = await start(dir, 'full');
    const api = new Api(first.url);
    // 3,000 acknowledged keyed events: past one move (every 2,048 keys, docs/architecture.md
    // "Storage") and about 950 keys beyond it, which live only in memory when the process dies.
    const acked: Array<{ path: string; inputs: EventInput[]; events: CommittedEvent[] }> = [];
    let killed = false;
    const writer = async (w: number) => {
      for (let round = 0; !killed; round++) {
        const path = paths[(w + round) % paths.length]!;
        const inputs = Array.from({ length: 10 }, (_, i): EventInput => ({ type: 'keys', payload: { w, round, i }, idempotencyKey: `w${w}-r${round}-i${i}` }));
        let res;
        try {
          res = await api.post(path, inputs);
        } catch {
          return; // the server is gone
        }
        expect(res.status, res.text).toBe(200);
        acked.push({ path, inputs, events: (res.body as { events: CommittedEvent[] }).events });
        if (!killed && acked.length * 10 >= 3000) {
          killed = true;
          first.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: 6 }, (_, w) => writer(w)));
    expect((await first.exited).signal).toBe('SIGKILL');

    // The kill came after a move and before the next: both kinds of key are on disk.
    const db = new Database(join(dir, 'rivulet.db'), { readonly: true });
    const watermark = Number((db.prepare(`SELECT value FROM meta WHERE key = 'keys_moved'`).get() as { value: string }).value);
    expect((db.prepare(`SELECT count(*) AS n FROM event_keys`).get() as { n: number }).n).toBeGreaterThanOrEqual(2048);
    expect((db.prepare(`SELECT count(*) AS n FROM events WHERE rowid > ? AND idem IS NOT NULL`).get(watermark) as { n: number }).n).toBeGreaterThan(0);
    // Storage format 9 (docs/architecture.md "Offsets are indexed in batches"): the rows up to the
    // watermark are entered in event_offsets; those past it were in the tail, which lived with the
    // killed process's connection and is not in the file.
    const count = (sql: string, ...args: number[]) => (db.prepare(sql).get(...args) as { n: number }).n;
    expect(count(`SELECT count(*) AS n FROM event_offsets`)).toBe(count(`SELECT count(*) AS n FROM events WHERE rowid <= ? OR copy_run IS NOT NULL`, watermark));
    expect(count(`SELECT count(*) AS n FROM events WHERE rowid > ?`, watermark)).toBeGreaterThan(0);
    expect(count(`SELECT count(*) AS n FROM sqlite_master WHERE name = 'tail_offsets'`)).toBe(0);
    db.close();

    const second = await start(dir, 'full');
    const again = new Api(second.url);
    const heads = new Map<string, number>();
    for (const path of paths) heads.set(path, (await again.read(path)).streamMaxOffset);
    // Every acknowledged batch, sent again, answers the events stored for it and writes nothing.
    for (const { path, inputs, events } of acked) expect(await again.append(path, inputs)).toEqual(events);
    for (const path of paths) expect((await again.read(path)).streamMaxOffset).toBe(heads.get(path));
    // Every row, moved or in the rebuilt tail, reads back at its offset: dense from 1 to the head.
    for (const path of paths) {
      const offsets = (await again.readAll(path)).map((e) => e.offset);
      expect(offsets).toEqual(Array.from({ length: heads.get(path)! }, (_, i) => i + 1));
    }
    const [next] = await again.append(paths[0]!, { type: 'after-restart', idempotencyKey: 'fresh' });
    expect(next!.offset).toBe(heads.get(paths[0]!)! + 1);
    await second.kill('SIGTERM');
  }, 90_000);
  it('storage format 10: with a merge of key runs under way (eight moves of one stream), kill -9 loses no key, and the restart resumes the merge', async () => {
    const { dir, remove } = await tempDir('rivulet-s11-runs-');
    cleanups.push(remove);
    const path = '/runs/a';
    const first = await start(dir, 'full');
    const api = new Api(first.url);
    // Lone keyed appends go to the map of recent keys; a move every 2,048 writes a run; the eighth
    // run begins a merge of 16,384 entries, more than one move's 8,192 (engine/key-runs.ts).
    const target = 8 * 2048 + 1000;
    const acked: Array<{ input: EventInput; event: CommittedEvent }> = [];
    let killed = false;
    const writer = async (w: number) => {
      for (let n = 0; !killed; n++) {
        const input: EventInput = { type: 'keys', payload: { w, n }, idempotencyKey: `w${w}-n${n}` };
        let res;
        try {
          res = await api.post(path, [input]);
        } catch {
          return; // the server is gone
        }
        expect(res.status, res.text).toBe(200);
        acked.push({ input, event: (res.body as { events: CommittedEvent[] }).events[0]! });
        if (!killed && acked.length >= target) {
          killed = true;
          first.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, (_, w) => writer(w)));
    expect((await first.exited).signal).toBe('SIGKILL');

    // The merge is under way: recorded, its output (a run of level 1, run % 16) holding entries,
    // its inputs the rest; every key moved is in one of them, once.
    const db = new Database(join(dir, 'rivulet.db'), { readonly: true });
    expect(db.prepare(`SELECT count(*) AS n FROM key_merges`).get()).toEqual({ n: 1 });
    const levels = db.prepare(`SELECT run % 16 AS level, count(*) AS n FROM event_keys GROUP BY level ORDER BY level`).all() as Array<{ level: number; n: number }>;
    expect(levels.map((l) => l.level)).toEqual([0, 1]);
    const watermark = Number((db.prepare(`SELECT value FROM meta WHERE key = 'keys_moved'`).get() as { value: string }).value);
    const moved = (db.prepare(`SELECT count(*) AS n FROM events WHERE rowid <= ? AND idem IS NOT NULL`).get(watermark) as { n: number }).n;
    expect(moved).toBeGreaterThanOrEqual(8 * 2048);
    expect(levels[0]!.n + levels[1]!.n).toBe(moved);
    db.close();

    const second = await start(dir, 'full');
    const again = new Api(second.url);
    const head = (await again.read(path)).streamMaxOffset;
    // Every acknowledged event, sent again (a hundred to a request), answers the stored event and writes nothing.
    for (let i = 0; i < acked.length; i += 100) {
      const slice = acked.slice(i, i + 100);
      expect(await again.append(path, slice.map((a) => a.input))).toEqual(slice.map((a) => a.event));
    }
    expect((await again.read(path)).streamMaxOffset).toBe(head);
    // More lone appends, two moves' worth: the next moves resume the merge and finish it; old keys
    // still refuse a repeat.
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let n = 0; n < 540; n++) await again.append(path, { type: 'after', idempotencyKey: `after-${w}-${n}` });
      }),
    );
    const [repeat] = await again.append(path, acked[0]!.input);
    expect(repeat).toEqual(acked[0]!.event);
    await second.kill('SIGTERM');
    const after = new Database(join(dir, 'rivulet.db'), { readonly: true });
    expect(after.prepare(`SELECT count(*) AS n FROM key_merges`).get()).toEqual({ n: 0 });
    after.close();
  }, 120_000);
});
