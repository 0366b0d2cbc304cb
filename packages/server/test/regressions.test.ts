/**
 * Regressions: each test pins a bug or a questionable behaviour found while writing the storage
 * conformance suite, the log properties and the unit tests, and fixed since. The comment of each
 * block says what went wrong.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventType, Limits, type CommittedEvent, type CoreState } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStorage } from '../src/adapters/memory/memory-storage.js';
import { SqliteStorage } from '../src/adapters/sqlite/sqlite-storage.js';
import { checkInput } from '../src/core/append-input.js';
import { decideAppend, type DecideEnv } from '../src/core/decide-append.js';
import { reduce } from '../src/core/reduce.js';
import { StreamActor, type ActorDeps } from '../src/engine/actor.js';
import { defaultEngineConfig } from '../src/engine/config.js';
import { openSchema } from '../src/engine/schema.js';
import { StreamStore } from '../src/engine/stream-store.js';
import { tailStream, type TailItem } from '../src/engine/tail.js';
import type { SqlStorage } from '../src/ports/storage.js';
import { systemTimer } from '../src/ports/timer.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function sqliteFile(options: ConstructorParameters<typeof SqliteStorage>[1] = {}): { storage: SqliteStorage; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-known-bugs-'));
  const file = join(dir, 'data.sqlite');
  const storage = new SqliteStorage(file, options);
  cleanups.push(() => {
    storage.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { storage, file };
}

function deps(storage: SqlStorage, afterCommit?: ActorDeps['afterCommit']): ActorDeps {
  let now = Date.parse('2025-01-01T00:00:00.000Z');
  let ids = 0;
  return {
    store: new StreamStore(storage),
    clock: { now: () => now++ },
    random: { next: () => 0.5, uuid: () => `00000000-0000-4000-8000-${(++ids).toString(16).padStart(12, '0')}` },
    timer: systemTimer,
    config: defaultEngineConfig,
    ...(afterCommit ? { afterCommit } : {}),
  };
}

describe('fixed bug 1: SqliteStorage with groupCommit=false swallows a failed COMMIT', () => {
  // sqlite-storage.ts transaction(): the `finally` calls commitGroup() at depth 0; commitGroup
  // catches the COMMIT error, rolls back, bumps the epoch and rejects `group.promise` — a promise
  // nobody holds, because flush() is only called after transaction() returned, when `this.group`
  // is already null, so flush() answers Promise.resolve().
  it('flush() must reject (or transaction() throw) when the commit failed', async () => {
    const { storage } = sqliteFile({ groupCommit: false });
    storage.db.pragma('foreign_keys = ON');
    storage.run(`CREATE TABLE parent (id INTEGER PRIMARY KEY)`);
    storage.run(`CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`);
    let threw = false;
    try {
      storage.transaction(() => storage.run(`INSERT INTO child (id, parent) VALUES (1, 999)`));
    } catch {
      threw = true;
    }
    const flushed = await storage.flush().then(
      () => 'resolved',
      () => 'rejected',
    );
    expect(storage.epoch).toBe(1); // the adapter knows the commit failed…
    expect(storage.exec(`SELECT * FROM child`)).toEqual([]); // …and the row is gone…
    expect(threw || flushed === 'rejected').toBe(true); // …but nobody is told: before the fix threw=false, flushed='resolved'.
  });

  it('the actor acknowledges an append that was never stored', async () => {
    const { storage } = sqliteFile({ groupCommit: false });
    openSchema(storage);
    storage.db.pragma('foreign_keys = ON');
    // A deferred constraint that the append's own rows violate stands in for any COMMIT failure
    // (disk full, I/O error).
    storage.run(`CREATE TABLE guard (id INTEGER PRIMARY KEY)`);
    storage.run(
      `CREATE TABLE orphan (id INTEGER PRIMARY KEY, guard INTEGER REFERENCES guard (id) DEFERRABLE INITIALLY DEFERRED)`,
    );
    storage.run(`CREATE TRIGGER poison AFTER INSERT ON events WHEN NEW.type = 'app/poison' BEGIN INSERT INTO orphan (guard) VALUES (999); END`);
    const actor = new StreamActor(null, '/s', deps(storage));
    const answer = await actor.append([{ type: 'app/poison' }], 'public').then(
      (events) => `acknowledged at offset ${events[0]!.offset}`,
      (error: unknown) => `rejected: ${String(error)}`,
    );
    expect(actor.exists).toBe(false); // nothing was stored…
    expect(answer).toMatch(/^rejected/); // …before the fix: "acknowledged at offset 2"
  });
});

describe('fixed bug 2: StreamActor.destroy() racing with an append in flight leaves a stale committed head', () => {
  // actor.ts published(): `if (last.offset <= this.committedHead) return;` and
  // `this.committedHead = last.offset`. When destroy() runs while an append awaits flush(), the
  // append resumes after the destroy reset committedHead to 0 and sets it to the old lifetime's
  // offset. The next lifetime's events (offsets from 1) are then <= committedHead: never published
  // to live readers nor to afterCommit (delivery), and reads report streamMaxOffset from the dead
  // lifetime. afterCommit is also handed an event of the destroyed lifetime, and `idle` (which
  // now requires committedHead === loaded.head) stays false, so the registry never evicts it.
  // Fix: count lifetimes (or compare sids) and drop the publication of a lifetime that ended.
  async function raced(): Promise<{ actor: StreamActor; committed: CommittedEvent[][] }> {
    const storage = await MemoryStorage.create();
    cleanups.push(() => storage.close());
    openSchema(storage);
    const committed: CommittedEvent[][] = [];
    const actor = new StreamActor(null, '/s', deps(storage, (_a, events) => committed.push([...events])));
    await actor.append([{ type: 'app/a' }, { type: 'app/a' }, { type: 'app/a' }, { type: 'app/a' }], 'public'); // 1..5
    const inFlight = actor.append([{ type: 'app/late' }], 'public'); // offset 6, awaiting flush
    await actor.destroy();
    await inFlight;
    return { actor, committed };
  }

  it('the durable head of a destroyed stream is 0', async () => {
    const { actor } = await raced();
    expect(actor.head).toBe(0);
    expect(actor.durableHead).toBe(0); // before the fix: 6
  });

  it('post-commit work never sees events of a destroyed lifetime', async () => {
    const { committed } = await raced();
    expect(committed.flat().map((e) => e.type)).not.toContain('app/late'); // before the fix: delivered to afterCommit after the destroy
  });

  it('a tail of the next lifetime receives its events', async () => {
    const { actor } = await raced();
    const tail = tailStream(actor, { afterOffset: 0 });
    // The tail registers and replays (nothing) before it answers its opening item.
    expect((await tail.next()).value).toEqual({ kind: 'opened', streamId: null, streamMaxOffset: 0 });
    await actor.append([{ type: 'app/new' }, { type: 'app/new' }], 'public'); // new lifetime: 1..3
    const item: TailItem | undefined = (await tail.next()).value ?? undefined;
    expect(item?.kind).toBe('events');
    expect(item?.kind === 'events' ? item.events.map((e) => e.offset) : []).toEqual([1, 2, 3]);
    await tail.return(undefined);
  });

  it('reads of the next lifetime report its own head', async () => {
    const { actor } = await raced();
    await actor.append([{ type: 'app/new' }, { type: 'app/new' }], 'public'); // new lifetime: 1..3
    expect(actor.read({ afterOffset: 0, limit: 10, includeEphemeral: true }).streamMaxOffset).toBe(3); // before the fix: 6
    expect(actor.runtimeState()!.streamMaxOffset).toBe(3); // before the fix: 6
  });
});

describe('fixed bug 3: MemoryStorage.run() answers a stale change count', () => {
  // memory-storage.ts run(): `return this.db.getRowsModified()` is sqlite3_changes(), which only
  // INSERT/UPDATE/DELETE reset. better-sqlite3 compares total_changes before and after instead.
  it('a statement that changes no rows answers 0, as SqliteStorage does', async () => {
    const storage = await MemoryStorage.create();
    cleanups.push(() => storage.close());
    storage.run(`CREATE TABLE t (x)`);
    expect(storage.run(`INSERT INTO t (x) VALUES (1), (2), (3)`)).toBe(3);
    expect(storage.run(`CREATE TABLE u (y)`)).toBe(0); // before the fix: 3
    expect(storage.run(`SELECT * FROM t`)).toBe(0); // before the fix: 3
  });
});

describe('fixed questionable 4: a statement that rolls back the whole transaction inside transaction()', () => {
  // Both adapters run `ROLLBACK TO <savepoint>` in the catch; when SQLite already rolled back the
  // entire transaction (INSERT OR ROLLBACK, RAISE(ROLLBACK) in a trigger, and — per the SQLite docs
  // — some SQLITE_FULL / SQLITE_IOERR / SQLITE_NOMEM failures) the savepoint no longer exists, so
  // "no such savepoint" replaces the original error. In SqliteStorage the open group's BEGIN is gone
  // too: later transactions of the same turn each autocommit on their own, and the group's COMMIT
  // then fails ("no transaction is active"), so flush() rejects and the epoch moves for writes that
  // were in fact committed (and the earlier transactions of the group were silently rolled back).
  for (const [name, open] of [
    ['MemoryStorage', async () => MemoryStorage.create()],
    ['SqliteStorage', async () => sqliteFile().storage],
  ] as const) {
    it(`${name}: the original error propagates`, async () => {
      const storage: SqlStorage = await open();
      storage.run(`CREATE TABLE t (id INTEGER PRIMARY KEY)`);
      storage.run(`INSERT INTO t (id) VALUES (1)`);
      let caught: unknown;
      try {
        storage.transaction(() => storage.run(`INSERT OR ROLLBACK INTO t (id) VALUES (1)`));
      } catch (error) {
        caught = error;
      }
      expect(String(caught)).toMatch(/UNIQUE/); // before the fix: "no such savepoint"
    });
  }

  it('SqliteStorage: a later transaction of the same turn is not reported lost when it was committed', async () => {
    const { storage } = sqliteFile();
    storage.run(`CREATE TABLE t (id INTEGER PRIMARY KEY)`);
    storage.run(`INSERT INTO t (id) VALUES (1)`);
    expect(() => storage.transaction(() => storage.run(`INSERT OR ROLLBACK INTO t (id) VALUES (1)`))).toThrow();
    storage.transaction(() => storage.run(`INSERT INTO t (id) VALUES (2)`));
    const outcome = await storage.flush().then(
      () => 'resolved',
      (error: unknown) => String(error),
    );
    expect(storage.exec(`SELECT id FROM t ORDER BY id`)).toEqual([{ id: 1 }, { id: 2 }]); // committed…
    expect(outcome).toBe('resolved'); // …before the fix: "cannot commit - no transaction is active", epoch 1
  });
});

describe('fixed questionable 5: inbound eviction can evict the record it just wrote', () => {
  // reduce.ts evictOldestInbound(): the oldest is chosen by lastEventReceivedAt, ties broken by
  // path then key, over all records *including the new one*. When the new record was received in
  // the same millisecond as the oldest ones and sorts first, it is evicted at once: the fence of the
  // source that just delivered is lost, so an older stamp from it is accepted next time.
  it('the record just received survives eviction', () => {
    const T = '2025-01-01T00:00:00.000Z';
    const hop = (path: string, subscriptionKey: string) => ({
      projectId: 'p',
      path,
      streamId: 'src',
      streamCreatedAt: T,
      offset: 1,
      type: 'app/x',
      createdAt: T,
      subscriptionKey,
      cursorChangedAtSourceOffset: 5,
    });
    let state: CoreState = reduce(null, {
      path: '/r',
      offset: 1,
      createdAt: T,
      type: EventType.created,
      payload: { projectId: 'p', path: '/r', streamId: 'r' },
    });
    for (let i = 0; i < Limits.inboundRecordsMax; i++) {
      state = reduce(state, { path: '/r', offset: i + 2, createdAt: T, type: 'app/x', source: { copiedFrom: [hop('/b', `k${i}`)] } });
    }
    const next = reduce(state, {
      path: '/r',
      offset: Limits.inboundRecordsMax + 2,
      createdAt: T,
      type: 'app/x',
      source: { copiedFrom: [hop('/a', 'newest')] },
    });
    expect(next.subscriptions.inbound.bySourcePath['/a']?.['newest']).toBeDefined(); // before the fix: undefined
  });
});

describe('fixed questionable 6: afterCommit is handed UTF-16 code units, not bytes', () => {
  // actor.ts append(): `bytes += f.json.length` — feeds rivulet_appended_bytes_total ("Bytes of
  // committed events as JSON"); utf8Length(f.json) is what every limit uses.
  it('counts UTF-8 bytes', async () => {
    const storage = await MemoryStorage.create();
    cleanups.push(() => storage.close());
    openSchema(storage);
    const seen: Array<{ events: CommittedEvent[]; bytes: number }> = [];
    const actor = new StreamActor(null, '/s', deps(storage, (_a, events, bytes) => seen.push({ events: [...events], bytes })));
    await actor.append([{ type: 'app/x', payload: { text: 'héllo 😀' } }], 'public');
    const expected = seen[0]!.events.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e)), 0);
    expect(seen[0]!.bytes).toBe(expected); // before the fix: 3 fewer (é counts 1 instead of 2, 😀 2 instead of 4)
  });
});

describe('fixed questionable 7: a public control event without payload is stored with payload {}', () => {
  // append-input.ts checkInput(): `parseOrThrow(schema, input.payload ?? {}, …)` always sets
  // out.payload. Protocol §3.1: an omitted payload or metadata stays omitted in the committed event.
  it('an omitted payload stays omitted', () => {
    expect(checkInput({ type: EventType.resumed }, 'public')).toEqual({ type: EventType.resumed }); // before the fix: payload {}
  });
});

describe('fixed bug 8: an identical retry of a subscription command whose payload the rules normalise is CONFLICT', () => {
  // decide-append.ts: the stored event is built from `checked = env.checkControl(input, …)`, but
  // a repeat is compared with bodyOf(input) — the raw input, before checkControl. The actor now
  // always installs createControlRules (subscription-rules.ts), which canonicalises
  // receivingStreamPath (protocol §9.3) and rewrites webhook URLs with URL#toString. So retrying
  // the very same request turns into CONFLICT, and a retry that turns into a conflict wedges
  // whoever retries (protocol §4.2, §13.2). Fix: compare against the checked input (or run
  // checkControl before the idempotency lookup for non-repeats only and compare checked bodies).
  const receivers = [
    { action: 'copy-to-stream', receivingStreamPath: '/r/./target', delivery: { start: 'now', onFailingEvent: 'halt' } },
    { action: 'webhook-post', url: 'https://EXAMPLE.com', delivery: { start: 'now', onFailingEvent: 'halt' } },
  ] as const;
  for (const receiver of receivers) {
    it(`${receiver.action}: the retry answers the stored event`, async () => {
      const storage = await MemoryStorage.create();
      cleanups.push(() => storage.close());
      openSchema(storage);
      const actor = new StreamActor(null, '/s', deps(storage));
      const request = { type: EventType.subscriptionConfigured, idempotencyKey: 'cfg', payload: { subscriptionKey: 'k', receiver } };
      const [stored] = await actor.append([checkInput(request, 'public')], 'public');
      const retry = await actor.append([checkInput(request, 'public')], 'public').catch((error: unknown) => String(error));
      expect(retry).toEqual([stored]); // before the fix: "RivuletError: events[0]: idempotency key "cfg" already names a different event (offset 2)"
    });
  }

  it('the same in decideAppend alone, with any normalising normalizeControl', () => {
    const receiver = { action: 'copy-to-stream', receivingStreamPath: '/r/../r2', delivery: { start: 'now', onFailingEvent: 'halt' } };
    const input = { type: EventType.subscriptionConfigured, idempotencyKey: 'cfg', payload: { subscriptionKey: 'k', receiver } };
    const stored: CommittedEvent[] = [];
    let state: CoreState | null = null;
    let head = 0;
    const env = (): DecideEnv => ({
      projectId: 'p',
      path: '/s',
      state,
      stateBytes: 0,
      head,
      now: '2025-01-01T00:00:00.000Z',
      authority: 'public',
      maxEventBytes: 1_000_000,
      maxCoreStateBytes: 1_000_000,
      newStreamId: () => 'sid',
      lookupIdempotent: (key) => stored.find((e) => e.idempotencyKey === key),
      normalizeControl: (i) =>
        i.type === EventType.subscriptionConfigured
          ? { ...i, payload: { ...i.payload, receiver: { ...receiver, receivingStreamPath: '/r2' } } }
          : i,
    });
    const first = decideAppend(env(), [input]);
    stored.push(...first.fresh.map((f) => f.event));
    state = first.state;
    head = first.head;
    expect(decideAppend(env(), [input]).results).toEqual(first.results); // before the fix: CONFLICT
  });
});
