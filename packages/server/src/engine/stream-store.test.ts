/**
 * Storage format 3 (schema.ts, protocol §16.5): the streams row as a checkpoint that loading
 * completes from the event rows after it. Over both test adapters. (The format check and upgrades:
 * migrations.test.ts.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventType } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryTestStorage, type TestStorage } from '../../test/helpers/test-storages.js';
import { SqliteStorage } from '../adapters/sqlite/sqlite-storage.js';
import type { AppendInput } from '../core/append-input.js';
import type { SqlStorage } from '../ports/storage.js';
import { systemTimer } from '../ports/timer.js';
import { StreamActor, type ActorDeps } from './actor.js';
import { defaultEngineConfig, type EngineConfig } from './config.js';
import { openSchema } from './schema.js';
import { CHECKPOINT_EVERY, StreamStore, type StreamStoreOptions } from './stream-store.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function sqliteFile(): { file: string; open: () => SqliteStorage } {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-store-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'data.sqlite');
  return {
    file,
    open: () => {
      const storage = new SqliteStorage(file, { durability: 'relaxed' });
      cleanups.push(() => storage.close());
      return storage;
    },
  };
}

const adapters: TestStorage[] = [memoryTestStorage(cleanups), { name: 'SqliteStorage', open: async () => sqliteFile().open() }];

function depsFor(storage: SqlStorage, options: StreamStoreOptions = {}, config: Partial<EngineConfig> = {}, clock?: () => number): ActorDeps {
  let now = Date.parse('2025-01-01T00:00:00.000Z');
  let ids = 0;
  return {
    store: new StreamStore(storage, options),
    clock: { now: clock ?? (() => now++) },
    random: { next: () => 0.5, uuid: () => `00000000-0000-4000-8000-${(++ids).toString(16).padStart(12, '0')}` },
    timer: systemTimer,
    config: { ...defaultEngineConfig, ...config },
  };
}

const x = (n: number, extra: Partial<AppendInput> = {}): AppendInput => ({ type: 'app/x', payload: { n }, ...extra });
const xs = (count: number, extra: Partial<AppendInput> = {}): AppendInput[] => Array.from({ length: count }, (_, i) => x(i, extra));

const checkpointOf = (storage: SqlStorage, path: string) =>
  storage.exec<{ head: number; event_count: number; max_offset: number }>(
    `SELECT head, event_count, max_offset FROM streams WHERE path = ?`,
    path,
  )[0];

describe.each(adapters)('the streams row is a checkpoint ($name)', ({ open }) => {
  const K = 4;

  it('an append that changes only the counters writes the row once it is K behind, not before', async () => {
    const storage = await open();
    openSchema(storage);
    const actor = new StreamActor(null, '/s', depsFor(storage, { checkpointEvery: K }));
    await actor.append([x(0)], 'public'); // stream/created changes the state: checkpoint at 2
    expect(checkpointOf(storage, '/s')).toEqual({ head: 2, event_count: 2, max_offset: 2 });
    for (let i = 1; i < K; i++) await actor.append([x(i)], 'public');
    // K - 1 behind: still the old checkpoint.
    expect(actor.head).toBe(2 + K - 1);
    expect(checkpointOf(storage, '/s')).toEqual({ head: 2, event_count: 2, max_offset: 2 });
    await actor.append([x(K)], 'public');
    // K behind: written.
    expect(checkpointOf(storage, '/s')).toEqual({ head: 2 + K, event_count: 2 + K, max_offset: 2 + K });
    // An append that changes the state writes it at once.
    await actor.append([{ type: EventType.paused, payload: {} }], 'public');
    expect(checkpointOf(storage, '/s')).toEqual({ head: 3 + K, event_count: 3 + K, max_offset: 3 + K });
  });

  it(`the default is ${CHECKPOINT_EVERY} offsets: ${CHECKPOINT_EVERY - 1} behind leaves the row, ${CHECKPOINT_EVERY} writes it`, async () => {
    expect(CHECKPOINT_EVERY).toBe(1000);
    const storage = await open();
    openSchema(storage);
    const actor = new StreamActor(null, '/s', depsFor(storage));
    expect(actor.store.checkpointEvery).toBe(CHECKPOINT_EVERY);
    await actor.append([x(0)], 'public');
    await actor.append(xs(500), 'public');
    await actor.append(xs(CHECKPOINT_EVERY - 1 - 500), 'public');
    expect(actor.head).toBe(2 + CHECKPOINT_EVERY - 1);
    expect(checkpointOf(storage, '/s')!.head).toBe(2);
    await actor.append([x(1)], 'public');
    expect(checkpointOf(storage, '/s')!.head).toBe(2 + CHECKPOINT_EVERY);
  });

  it('loading derives head, eventCount and maxOffset from the rows after the checkpoint, ephemeral last events included', async () => {
    const storage = await open();
    openSchema(storage);
    const deps = depsFor(storage, { checkpointEvery: 100 });
    const actor = new StreamActor('p', '/s', deps);
    await actor.append([x(0)], 'public');
    await actor.append([x(1), x(2, { ephemeral: true }), x(3)], 'public');
    await actor.append([x(4), x(5, { ephemeral: true }), x(6, { ephemeral: true })], 'public');
    expect(checkpointOf(storage, '/s')).toEqual({ head: 2, event_count: 2, max_offset: 2 });
    const row = deps.store.find('p', '/s')!;
    expect({ head: row.head, checkpoint: row.checkpoint, event_count: row.event_count, max_offset: row.max_offset }).toEqual({
      head: 8,
      checkpoint: 2,
      event_count: 5,
      max_offset: 6,
    });
    const later = new StreamActor('p', '/s', deps);
    expect(later.head).toBe(8);
    expect(later.coreState).toEqual(actor.coreState);
    expect(later.coreState).toMatchObject({ eventCount: 5, maxOffset: 6 });
    const [next] = await later.append([x(7)], 'public');
    expect(next!.offset).toBe(9);
    expect(deps.store.list('p', '/', undefined, 10)).toEqual([
      { path: '/s', streamId: later.coreState!.streamId, createdAt: later.coreState!.createdAt, maxOffset: 9 },
    ]);
  });

  it('a prune saves the checkpoint at the head first, and never deletes an event above the checkpoint it is given', async () => {
    const storage = await open();
    openSchema(storage);
    let now = Date.parse('2025-01-01T00:00:00.000Z');
    const deps = depsFor(storage, { checkpointEvery: 100 }, { ephemeralRetentionMs: 1000 }, () => now);
    const actor = new StreamActor(null, '/s', deps);
    await actor.append([x(0)], 'public'); // prunes (first append of the actor): checkpoint 2
    await actor.append([x(1), x(2, { ephemeral: true }), x(3, { ephemeral: true })], 'public');
    expect(checkpointOf(storage, '/s')!.head).toBe(2);
    // The store refuses to go above the checkpoint it is given, whatever the retention says.
    const sid = actor.sid!;
    expect(deps.store.events.pruneEphemeral(sid, now + 1, 0, 4)).toBe(1);
    expect(storage.exec(`SELECT ofs FROM events WHERE ephemeral = 1`)).toEqual([{ ofs: 5 }]);
    now += 20_000;
    await actor.append([x(4, { ephemeral: true })], 'public');
    // The prune ran in this append: checkpoint at its head, the old ephemeral event gone.
    expect(checkpointOf(storage, '/s')).toEqual({ head: 6, event_count: 3, max_offset: 3 });
    expect(storage.exec(`SELECT ofs FROM events WHERE ephemeral = 1`)).toEqual([{ ofs: 6 }]);
    const later = new StreamActor(null, '/s', deps);
    expect(later.head).toBe(6);
    expect(later.coreState).toEqual(actor.coreState);
  });

  it('with the newest offsets pruned, the checkpoint still holds the head: no offset is used twice', async () => {
    const storage = await open();
    openSchema(storage);
    let now = Date.parse('2025-01-01T00:00:00.000Z');
    const deps = depsFor(storage, { checkpointEvery: 100 }, { ephemeralRetentionMs: 1000, ephemeralRetentionCount: 1 }, () => now);
    const actor = new StreamActor(null, '/s', deps);
    await actor.append([x(0)], 'public');
    await actor.append(xs(3, { ephemeral: true }), 'public'); // offsets 3-5
    now += 20_000;
    // This append prunes 3-5 (too old) and 6 (beyond the newest one kept): the checkpoint moves to 7 first.
    await actor.append([x(9, { ephemeral: true }), x(10, { ephemeral: true })], 'public'); // offsets 6-7
    expect(storage.exec(`SELECT ofs FROM events WHERE ephemeral = 1 ORDER BY ofs`)).toEqual([{ ofs: 7 }]);
    expect(checkpointOf(storage, '/s')).toEqual({ head: 7, event_count: 2, max_offset: 2 });
    // Even with the highest row gone (as a harsher prune could do), the head stays.
    storage.transaction(() => storage.run(`DELETE FROM events WHERE ofs = 7`));
    const later = new StreamActor(null, '/s', deps);
    expect(later.head).toBe(7);
    expect(later.coreState).toMatchObject({ eventCount: 2, maxOffset: 2 });
    const [next] = await later.append([x(11)], 'public');
    expect(next!.offset).toBe(8);
  });

  it('lags of subscriptions count from the derived head', async () => {
    const storage = await open();
    openSchema(storage);
    const deps = depsFor(storage, { checkpointEvery: 100 });
    const actor = new StreamActor(null, '/src', deps);
    await actor.append(
      [
        {
          type: EventType.subscriptionConfigured,
          payload: {
            subscriptionKey: 'k',
            receiver: { action: 'copy-to-stream', receivingStreamPath: '/dst', delivery: { start: 'beginning', onFailingEvent: 'halt' } },
          },
        },
      ],
      'public',
    );
    await actor.append(xs(10), 'public');
    expect(checkpointOf(storage, '/src')!.head).toBe(2);
    expect(deps.store.largestLags(10)).toEqual([{ projectId: null, path: '/src', key: 'k', lag: 12 }]);
  });
});

describe.each(adapters)('EventRows.insertIfNewKey ($name)', ({ open }) => {
  it('writes a new key, writes nothing for a key stored in the stream, and still refuses an offset given twice', async () => {
    const storage = await open();
    openSchema(storage);
    const store = new StreamStore(storage);
    const a = store.create(null, '/a', 'a', '2025-01-01T00:00:00.000Z');
    const b = store.create(null, '/b', 'b', '2025-01-01T00:00:00.000Z');
    const row = (offset: number, idempotencyKey: string) => ({ offset, type: 'app/x', ephemeral: false, idempotencyKey, createdMs: 0, json: `{"offset":${offset}}` });
    expect(storage.transaction(() => store.events.insertIfNewKeys(a, [row(1, 'k')]))).toBe(true);
    expect(storage.transaction(() => store.events.insertIfNewKeys(a, [row(2, 'k')]))).toBe(false);
    // The same key in another stream is another key.
    expect(storage.transaction(() => store.events.insertIfNewKeys(b, [row(1, 'k')]))).toBe(true);
    expect(() => storage.transaction(() => store.events.insertIfNewKeys(a, [row(1, 'other')]))).toThrow(/UNIQUE/);
    expect(storage.exec(`SELECT sid, ofs, idem, body FROM events ORDER BY sid, ofs`)).toEqual([
      { sid: a, ofs: 1, idem: 'k', body: '{"offset":1}' },
      { sid: b, ofs: 1, idem: 'k', body: '{"offset":1}' },
    ]);
  });
});
