/**
 * The stream actor over real storage: appends issued in one turn share a group commit and answer
 * in order; nothing uncommitted is ever readable; a group that fails to commit answers UNAVAILABLE
 * to every append in it and the actors reload from storage (protocol §4.1, §4.7, ports/storage.ts);
 * destroy starts a new lifetime (§2.5); post-commit work sees each new event once (§4.2).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventType, RivuletError, type CommittedEvent } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStorage } from '../adapters/memory/memory-storage.js';
import { SqliteStorage } from '../adapters/sqlite/sqlite-storage.js';
import type { AppendInput } from '../core/append-input.js';
import type { CopyBatch } from '../core/copy-builder.js';
import type { SqlStorage } from '../ports/storage.js';
import { systemTimer } from '../ports/timer.js';
import { StreamActor, type ActorDeps } from './actor.js';
import { defaultEngineConfig } from './config.js';
import { openSchema } from './schema.js';
import { StreamStore } from './stream-store.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function sqlite(): SqliteStorage {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-actor-'));
  const storage = new SqliteStorage(join(dir, 'data.sqlite'), { durability: 'relaxed' });
  cleanups.push(() => {
    storage.close();
    rmSync(dir, { recursive: true, force: true });
  });
  openSchema(storage);
  return storage;
}

async function memory(): Promise<MemoryStorage> {
  const storage = await MemoryStorage.create();
  cleanups.push(() => storage.close());
  openSchema(storage);
  return storage;
}

interface Committed {
  path: string;
  events: CommittedEvent[];
  bytes: number;
}

function depsFor(storage: SqlStorage, committed: Committed[] = []): ActorDeps {
  let now = Date.parse('2025-01-01T00:00:00.000Z');
  let ids = 0;
  return {
    store: new StreamStore(storage),
    clock: { now: () => now++ },
    random: { next: () => 0.5, uuid: () => `00000000-0000-4000-8000-${(++ids).toString(16).padStart(12, '0')}` },
    timer: systemTimer,
    config: defaultEngineConfig,
    afterCommit: (actor, events, bytes) => committed.push({ path: actor.path, events: [...events], bytes }),
  };
}

const x = (n: number, extra: Partial<AppendInput> = {}): AppendInput => ({ type: 'app/x', payload: { n }, ...extra });

const offsets = (actor: StreamActor, includeEphemeral = true): number[] =>
  actor.read({ afterOffset: 0, limit: 10_000, includeEphemeral }).events.map((e) => e.offset);

/**
 * Answers a function that makes the COMMIT of the current group fail, through a deferred foreign
 * key (see storage.test.ts). The pragma is ignored inside a transaction, so the pending group
 * (openSchema's) must commit first.
 */
async function armCommitFailure(storage: SqliteStorage): Promise<() => void> {
  await storage.flush();
  storage.db.pragma('foreign_keys = ON');
  expect(storage.db.pragma('foreign_keys', { simple: true })).toBe(1);
  storage.run(`CREATE TABLE IF NOT EXISTS parent (id INTEGER PRIMARY KEY)`);
  storage.run(`CREATE TABLE IF NOT EXISTS child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`);
  let n = 0;
  return () => storage.transaction(() => storage.run(`INSERT INTO child (id, parent) VALUES (?, 999)`, ++n));
}

describe('StreamActor over SQLite with group commit', () => {
  it('appends issued in one turn answer in order with dense offsets, after one shared commit', async () => {
    const storage = sqlite();
    const committed: Committed[] = [];
    const actor = new StreamActor('p', '/s', depsFor(storage, committed));
    const answers = await Promise.all([actor.append([x(1)], 'public'), actor.append([x(2), x(3)], 'public'), actor.append([x(4)], 'public')]);
    expect(answers.map((events) => events.map((e) => e.offset))).toEqual([[2], [3, 4], [5]]);
    expect(offsets(actor)).toEqual([1, 2, 3, 4, 5]);
    // Post-commit work sees every new event exactly once, in order.
    expect(committed.flatMap((c) => c.events.map((e) => e.offset))).toEqual([1, 2, 3, 4, 5]);
  });

  it('never shows what is not committed yet: reads, the durable head and live readers wait for the commit', async () => {
    const storage = sqlite();
    const actor = new StreamActor('p', '/s', depsFor(storage));
    await actor.append([x(1)], 'public');
    const seen: number[] = [];
    actor.watch({ onEvents: (events) => seen.push(...events.map((e) => e.offset)), onDestroyed: () => undefined });
    const pending = actor.append([x(2), x(3)], 'public');
    expect(actor.head).toBe(4);
    expect(actor.durableHead).toBe(2);
    expect(offsets(actor)).toEqual([1, 2]);
    expect(actor.read({ afterOffset: 0, limit: 10, includeEphemeral: true }).streamMaxOffset).toBe(2);
    expect(actor.runtimeState()!.streamMaxOffset).toBe(2);
    expect(seen).toEqual([]);
    await pending;
    expect(actor.durableHead).toBe(4);
    expect(offsets(actor)).toEqual([1, 2, 3, 4]);
    expect(seen).toEqual([3, 4]);
  });

  it('a group that fails to commit answers UNAVAILABLE to its appends; the actor reloads and the offsets are reused', async () => {
    const storage = sqlite();
    const poison = await armCommitFailure(storage);
    const committed: Committed[] = [];
    const deps = depsFor(storage, committed);
    const actor = new StreamActor('p', '/s', deps);
    await actor.append([x(1, { idempotencyKey: 'first' })], 'public');
    const before = { state: actor.coreState, head: actor.head, events: offsets(actor) };
    const seen: number[] = [];
    actor.watch({ onEvents: (events) => seen.push(...events.map((e) => e.offset)), onDestroyed: () => undefined });
    committed.length = 0;

    const failing = actor.append([x(2, { idempotencyKey: 'lost' }), x(3)], 'public');
    poison();
    const error = await failing.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RivuletError);
    expect((error as RivuletError).code).toBe('UNAVAILABLE');
    expect((error as RivuletError).message).toMatch(/not stored/);
    expect(String((error as RivuletError).cause)).toMatch(/FOREIGN KEY/);
    expect(storage.epoch).toBe(1);

    // Nothing of the failed group is visible or was announced; the state is the stored one.
    expect(seen).toEqual([]);
    expect(committed).toEqual([]);
    expect({ state: actor.coreState, head: actor.head, events: offsets(actor) }).toEqual(before);
    expect(actor.durableHead).toBe(2);

    // The next append takes the same offsets; the lost idempotency key was never stored.
    const again = await actor.append([x(2, { idempotencyKey: 'lost' }), x(3)], 'public');
    expect(again.map((e) => e.offset)).toEqual([3, 4]);
    expect(seen).toEqual([3, 4]);
    expect(new StreamActor('p', '/s', deps).coreState).toEqual(actor.coreState);
  });

  it('a repeat found by its insert inside a group leaves the group and its other appends alone', async () => {
    const storage = sqlite();
    const committed: Committed[] = [];
    const deps = depsFor(storage, committed);
    const a = new StreamActor('p', '/a', deps);
    const b = new StreamActor('p', '/b', deps);
    const [stored] = await a.append([x(1, { idempotencyKey: 'k' })], 'public');
    await b.append([x(1)], 'public');
    committed.length = 0;
    // One turn, one group: a's repeat is a single write that finds its key stored (and writes
    // nothing), between writes of other appends that must commit with the group.
    const answers = await Promise.all([
      b.append([x(2, { idempotencyKey: 'k' })], 'public'),
      a.append([x(1, { idempotencyKey: 'k' })], 'public'),
      a.append([x(3, { idempotencyKey: 'other' })], 'public'),
      a.append([x(4), x(1, { idempotencyKey: 'k' })], 'public'),
    ]);
    expect(answers.map((events) => events.map((e) => e.offset))).toEqual([[3], [2], [3], [4, 2]]);
    expect(answers[1]).toEqual([stored]);
    expect(storage.epoch).toBe(0);
    expect(committed.map((c) => [c.path, c.events.map((e) => e.offset)])).toEqual([
      ['/b', [3]],
      ['/a', [3]],
      ['/a', [4]],
    ]);
    expect(offsets(a)).toEqual([1, 2, 3, 4]);
    expect(new StreamActor('p', '/a', deps).coreState).toEqual(a.coreState);
    expect(new StreamActor('p', '/b', deps).coreState).toEqual(b.coreState);
  });

  it('a lone copy inside a group writes its row and its claim; redelivered, in a group or alone, it is not written again', async () => {
    const storage = sqlite();
    const deps = depsFor(storage);
    const other = new StreamActor('p', '/other', deps);
    const dst = new StreamActor('p', '/dst', deps);
    await Promise.all([other.append([x(1)], 'public'), dst.append([x(1)], 'public')]);
    const batch = (offset: number): CopyBatch => ({
      projectId: 'p',
      path: '/src',
      streamId: 'src-id',
      streamCreatedAt: '2025-01-01T00:00:00.000Z',
      cursorChangedAtSourceOffset: 1,
      subscriptionKey: 'k',
      receivingStreamPath: '/dst',
      events: [{ offset, type: 'app/x', createdAt: '2025-01-01T00:00:00.000Z', shaped: { type: 'app/x', payload: { n: offset } } }],
    });
    // The other stream's append opens the group: the copy is a later member (one event; its row, its
    // claim and the receiving stream's state are written in its savepoint).
    await Promise.all([other.append([x(2)], 'public'), dst.receiveCopies(batch(5))]);
    expect(storage.epoch).toBe(0);
    expect(offsets(dst)).toEqual([1, 2, 3]);
    expect(storage.exec(`SELECT src_first, count, ofs_first FROM copy_claims`)).toEqual([{ src_first: 5, count: 1, ofs_first: 3 }]);
    await Promise.all([other.append([x(3)], 'public'), dst.receiveCopies(batch(5)), dst.receiveCopies(batch(6))]);
    await dst.receiveCopies(batch(5));
    expect(offsets(dst)).toEqual([1, 2, 3, 4]);
    expect(storage.exec(`SELECT src_first, count, ofs_first FROM copy_claims`)).toEqual([{ src_first: 5, count: 2, ofs_first: 3 }]);
    expect(new StreamActor('p', '/dst', deps).coreState).toEqual(dst.coreState);
  });

  it('the same new key twice in one group: the second append answers the event of the first', async () => {
    const storage = sqlite();
    const committed: Committed[] = [];
    const deps = depsFor(storage, committed);
    const a = new StreamActor('p', '/a', deps);
    await a.append([x(1)], 'public');
    committed.length = 0;
    const [first, second, other] = await Promise.all([
      a.append([x(2, { idempotencyKey: 'k' })], 'public'),
      a.append([x(2, { idempotencyKey: 'k' })], 'public'),
      a.append([x(3, { idempotencyKey: 'k' })], 'public').catch((e: unknown) => e),
    ]);
    expect(first!.map((e) => e.offset)).toEqual([3]);
    expect(second).toEqual(first);
    expect(other).toMatchObject({ code: 'CONFLICT', message: 'events[0]: idempotency key "k" already names a different event (offset 3)' });
    expect(committed.map((c) => c.events.map((e) => e.offset))).toEqual([[3]]);
    expect(offsets(a)).toEqual([1, 2, 3]);
    expect(storage.epoch).toBe(0);
  });

  it('every stream of a failed group fails together, and each reloads', async () => {
    const storage = sqlite();
    const poison = await armCommitFailure(storage);
    const deps = depsFor(storage);
    const a = new StreamActor('p', '/a', deps);
    const b = new StreamActor('p', '/b', deps);
    await a.append([x(1)], 'public');
    const results = await Promise.allSettled([a.append([x(2)], 'public'), b.append([x(1)], 'public'), Promise.resolve(poison())]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'fulfilled']);
    expect(a.head).toBe(2);
    expect(b.exists).toBe(false);
    expect(b.head).toBe(0);
    // b's next append still creates it at offset 1.
    const [first] = await b.append([x(1)], 'public');
    expect(first!.offset).toBe(2);
    expect(offsets(b)).toEqual([1, 2]);
  });
});

describe.each([
  { name: 'MemoryStorage', open: memory },
  { name: 'SqliteStorage', open: async () => sqlite() },
])('StreamActor over $name', ({ open }) => {
  it('idempotent repeats answer the stored event and trigger no post-commit work', async () => {
    const committed: Committed[] = [];
    const actor = new StreamActor(null, '/s', depsFor(await open(), committed));
    const [stored] = await actor.append([x(1, { idempotencyKey: 'k' })], 'public');
    const before = committed.length;
    expect(await actor.append([{ type: 'app/x', idempotencyKey: 'k', payload: { n: 1 } }], 'public')).toEqual([stored]);
    expect(committed.length).toBe(before);
    expect(actor.head).toBe(2);
  });

  // A keyed append is first decided as if its keys were new and written with inserts that skip a
  // stored key (actor.ts commitSync); a stored key makes it decide again against the stored keys.
  // These hold that the answers are those of a decision that looked every key up first.
  it('a stored key inside a batch of fresh events: the fresh ones are written once, the repeat answers the stored event', async () => {
    const storage = await open();
    const committed: Committed[] = [];
    const actor = new StreamActor(null, '/s', depsFor(storage, committed));
    const [stored] = await actor.append([x(1, { idempotencyKey: 'k' })], 'public');
    committed.length = 0;
    const answers = await actor.append([x(2, { idempotencyKey: 'new' }), x(1, { idempotencyKey: 'k' }), x(3), x(2, { idempotencyKey: 'new' })], 'public');
    expect(answers.map((e) => e.offset)).toEqual([3, 2, 4, 3]);
    expect(answers[1]).toEqual(stored);
    expect(answers[3]).toEqual(answers[0]);
    expect(offsets(actor)).toEqual([1, 2, 3, 4]);
    expect(storage.exec(`SELECT idem FROM events WHERE idem IS NOT NULL ORDER BY ofs`)).toEqual([{ idem: 'k' }, { idem: 'new' }]);
    expect(committed.flatMap((c) => c.events.map((e) => e.offset))).toEqual([3, 4]);
    expect(new StreamActor(null, '/s', depsFor(storage)).coreState).toEqual(actor.coreState);
  });

  it('a repeat is judged before the pause, the offset assertion and the size limit, as when keys were looked up first', async () => {
    const storage = await open();
    const actor = new StreamActor(null, '/s', depsFor(storage));
    const [stored] = await actor.append([x(1, { idempotencyKey: 'k' })], 'public');
    // The offset assertion names the stored offset: the repeat answers it (a new event would be refused).
    await expect(actor.append([x(1, { idempotencyKey: 'k', offset: 2 })], 'public')).resolves.toEqual([stored]);
    await expect(actor.append([x(1, { idempotencyKey: 'k', offset: 3 })], 'public')).rejects.toMatchObject({
      code: 'CONFLICT',
      message: 'events[0]: offset assertion failed: idempotency key "k" is stored at offset 2, not 3',
    });
    await expect(actor.append([x(9, { idempotencyKey: 'k' })], 'public')).rejects.toMatchObject({
      code: 'CONFLICT',
      message: 'events[0]: idempotency key "k" already names a different event (offset 2)',
    });
    await actor.append([{ type: EventType.paused, payload: { reason: 'm' } }], 'public');
    await expect(actor.append([x(1, { idempotencyKey: 'k' })], 'public')).resolves.toEqual([stored]);
    await expect(actor.append([x(2, { idempotencyKey: 'fresh' })], 'public')).rejects.toMatchObject({ code: 'PRECONDITION_FAILED' });
    expect(actor.head).toBe(3);
    expect(storage.exec(`SELECT count(*) AS n FROM events WHERE idem = 'fresh'`)).toEqual([{ n: 0 }]);
  });

  it('a rejected append writes nothing, also when it would have created the stream', async () => {
    const storage = await open();
    const deps = depsFor(storage);
    const actor = new StreamActor(null, '/s', deps);
    await expect(actor.append([x(1), x(2, { offset: 9 })], 'public')).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(actor.exists).toBe(false);
    expect(deps.store.find(null, '/s')).toBeUndefined();
    expect(storage.exec(`SELECT count(*) AS n FROM events`)).toEqual([{ n: 0 }]);
  });

  it('destroy erases the lifetime; the next append starts a new one at offset 1 with another streamId', async () => {
    const storage = await open();
    const deps = depsFor(storage);
    const actor = new StreamActor('p', '/s', deps);
    await actor.append([x(1, { idempotencyKey: 'k' }), x(2, { ephemeral: true })], 'public');
    const oldId = actor.coreState!.streamId;
    let destroyed = 0;
    actor.watch({ onEvents: () => undefined, onDestroyed: () => destroyed++ });
    await expect(actor.destroy()).resolves.toBe(true);
    expect(destroyed).toBe(1);
    expect(actor.listenerCount).toBe(0);
    expect(actor.exists).toBe(false);
    expect(actor.coreState).toBeNull();
    expect(actor.runtimeState()).toBeNull();
    expect(actor.read({ afterOffset: 0, limit: 10, includeEphemeral: true })).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    expect(storage.exec(`SELECT count(*) AS n FROM events`)).toEqual([{ n: 0 }]);
    await expect(actor.destroy()).resolves.toBe(false);

    // The idempotency key of the old lifetime is forgotten.
    const [again] = await actor.append([x(99, { idempotencyKey: 'k' })], 'public');
    expect(again!.offset).toBe(2);
    expect(actor.coreState!.streamId).not.toBe(oldId);
    const created = actor.read({ afterOffset: 0, limit: 1, includeEphemeral: false }).events[0]!;
    expect(created).toMatchObject({ type: EventType.created, offset: 1, payload: { streamId: actor.coreState!.streamId } });
    expect(new StreamActor('p', '/s', deps).coreState).toEqual(actor.coreState);
  });

  it('a paused stream accepts platform facts and refuses copies', async () => {
    const actor = new StreamActor('p', '/s', depsFor(await open()));
    await actor.append([x(1), { type: EventType.paused, payload: { reason: 'm' } }], 'public');
    await expect(actor.append([x(2)], 'public')).rejects.toMatchObject({ code: 'PRECONDITION_FAILED' });
    await expect(actor.append([{ type: EventType.connectionOpened, payload: { key: 'c' } }], 'platform')).resolves.toHaveLength(1);
    const hop = {
      projectId: 'p',
      path: '/src',
      streamId: 'src',
      streamCreatedAt: '2025-01-01T00:00:00.000Z',
      offset: 2,
      type: 'app/x',
      createdAt: '2025-01-01T00:00:00.000Z',
      subscriptionKey: 'k',
      cursorChangedAtSourceOffset: 0,
    };
    await expect(actor.append([{ type: 'app/x', source: { copiedFrom: [hop] } }], 'platform')).rejects.toMatchObject({
      code: 'PRECONDITION_FAILED',
    });
    expect(actor.head).toBe(4);
  });

  it('ephemeral events past retention leave reads, then storage; their offsets are never reused', async () => {
    const storage = await open();
    let now = Date.parse('2025-01-01T00:00:00.000Z');
    const deps: ActorDeps = {
      ...depsFor(storage),
      clock: { now: () => now },
      config: { ...defaultEngineConfig, ephemeralRetentionMs: 1000 },
    };
    const actor = new StreamActor('p', '/s', deps);
    await actor.append([x(1, { ephemeral: true }), x(2)], 'public');
    expect(offsets(actor)).toEqual([1, 2, 3]);
    now += 1001;
    expect(offsets(actor)).toEqual([1, 3]);
    expect(offsets(actor, false)).toEqual([1, 3]);
    now += 20_000;
    const [next] = await actor.append([x(3, { ephemeral: true })], 'public');
    expect(next!.offset).toBe(4);
    expect(storage.exec(`SELECT ofs FROM events WHERE ephemeral = 1`)).toEqual([{ ofs: 4 }]);
    expect(offsets(actor)).toEqual([1, 3, 4]);
  });

  it('an actor loaded later (as after eviction) answers the same state, head and events', async () => {
    const storage = await open();
    const deps = depsFor(storage);
    const actor = new StreamActor('p', '/s', deps);
    await actor.append([x(1), x(2, { ephemeral: true }), { type: EventType.paused, payload: {} }], 'public');
    const later = new StreamActor('p', '/s', deps);
    expect(later.coreState).toEqual(actor.coreState);
    expect(later.head).toBe(4);
    expect(later.durableHead).toBe(4);
    expect(offsets(later)).toEqual([1, 2, 3, 4]);
    expect(offsets(later, false)).toEqual([1, 2, 4]);
    await expect(later.append([x(3)], 'public')).rejects.toMatchObject({ code: 'PRECONDITION_FAILED' });
  });
});

describe('subscription keys and live connection keys share one namespace (protocol §9.2, §19.2)', () => {
  const configure = (subscriptionKey: string): AppendInput => ({
    type: EventType.subscriptionConfigured,
    payload: {
      subscriptionKey,
      receiver: { action: 'copy-to-stream', receivingStreamPath: '/r', delivery: { start: 'now', onFailingEvent: 'halt' } },
    },
  });

  it('a key held by a live connection on the stream is CONFLICT, and nothing is appended', async () => {
    const actor = new StreamActor(null, '/s', depsFor(await memory()));
    await actor.append([{ type: 'app/x' }], 'public');
    actor.connectionKeys.add('live-1');
    const error = await actor.append([configure('live-1')], 'public').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RivuletError);
    expect((error as RivuletError).code).toBe('CONFLICT');
    expect((error as RivuletError).message).toBe('subscription key "live-1" is held by a live connection on /s');
    expect(actor.head).toBe(2);
    // Another key, or the same key once the connection closed, is accepted.
    await actor.append([configure('other')], 'public');
    actor.connectionKeys.delete('live-1');
    await actor.append([configure('live-1')], 'public');
    expect(Object.keys(actor.coreState!.subscriptions.outbound.byKey).sort()).toEqual(['live-1', 'other']);
  });
});
