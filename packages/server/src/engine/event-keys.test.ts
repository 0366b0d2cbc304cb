/**
 * Idempotency keys in storage format 6 (event-keys.ts, docs/architecture.md "Storage"): keys
 * since the last move are found in memory, older ones in event_keys, and every lookup checks the
 * row an entry names. Over both test adapters. (What the engine answers a repeat: the actor and
 * idempotency suites; the upgrade from format 5: migrations.test.ts.)
 */
import { afterEach, describe, expect, it } from 'vitest';
import { testStorages } from '../../test/helpers/test-storages.js';
import type { SqlStorage } from '../ports/storage.js';
import { MOVE_AFTER_KEYS, MOVE_KEYS, moveAfterRows } from './event-keys.js';
import { EventRows, ROWS_PER_INSERT, type EventRowInput } from './event-rows.js';
import { openSchema } from './schema.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

const adapters = testStorages(cleanups, 'rivulet-event-keys-');

function row(offset: number, key?: string, extra: Partial<EventRowInput> = {}): EventRowInput {
  return { offset, type: 't', ephemeral: false, idempotencyKey: key, createdMs: 0, json: JSON.stringify({ offset, key }), ...extra };
}

function keyed(offset: number, key: string, extra: Partial<EventRowInput> = {}): EventRowInput & { idempotencyKey: string } {
  return { ...row(offset, key, extra), idempotencyKey: key };
}

/**
 * Runs `fn` in a transaction and undoes it, as the engine undoes an append whose keys were
 * refused: answers the message `fn` threw, or 'undone' if it returned.
 */
function undone(storage: SqlStorage, fn: () => void): string {
  try {
    storage.transaction(() => {
      fn();
      throw new Error('undone');
    });
  } catch (error) {
    return (error as Error).message;
  }
  return 'not undone';
}

/** Lets queued microtasks (a queued move) run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

const movedKeys = (storage: SqlStorage) => storage.exec<{ n: number }>(`SELECT count(*) AS n FROM event_keys`)[0]!.n;
const watermark = (storage: SqlStorage) => Number(storage.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'keys_moved'`)[0]!.value);

for (const adapter of adapters) {
  describe(`idempotency keys in event rows (${adapter.name})`, () => {
    async function open(): Promise<{ storage: SqlStorage; rows: EventRows }> {
      const storage = await adapter.open();
      openSchema(storage);
      return { storage, rows: new EventRows(storage, undefined) };
    }

    it('a key is stored once per stream, found before and after its move, and by a new instance (a restart)', async () => {
      const { storage, rows } = await open();
      expect(rows.insertIfNewKeys(1, [keyed(1, 'k')])).toBe(true);
      expect(rows.insertIfNewKeys(2, [keyed(1, 'k')])).toBe(true);
      expect(rows.insertIfNewKeys(1, [keyed(2, 'k')])).toBe(false);
      expect(rows.byKey(1, 'k')).toEqual({ offset: 1, key: 'k' });
      expect(new EventRows(storage, undefined).insertIfNewKeys(1, [keyed(2, 'k')])).toBe(false);
      expect(movedKeys(storage)).toBe(0);

      rows.keys.move();
      expect(storage.exec(`SELECT sid, idem, ofs FROM event_keys ORDER BY sid`)).toEqual([
        { sid: 1, idem: 'k', ofs: 1 },
        { sid: 2, idem: 'k', ofs: 1 },
      ]);
      expect(watermark(storage)).toBe(2);
      expect(rows.insertIfNewKeys(1, [keyed(2, 'k')])).toBe(false);
      expect(rows.byKey(2, 'k')).toEqual({ offset: 1, key: 'k' });
      expect(new EventRows(storage, undefined).insertIfNewKeys(2, [keyed(2, 'k')])).toBe(false);
      expect(rows.byKey(1, 'other')).toBeUndefined();
      expect(storage.exec(`SELECT count(*) AS n FROM events`)).toEqual([{ n: 2 }]);
    });

    it('insert of a keyed row whose key is stored throws and writes nothing (the safety net of a unique index)', async () => {
      const { storage, rows } = await open();
      rows.insert(1, row(1, 'k'));
      expect(() => rows.insert(1, row(2, 'k'))).toThrow('storage: idempotency key "k" is stored in stream 1 already');
      rows.keys.move();
      expect(() => rows.insert(1, row(2, 'k'))).toThrow('storage: idempotency key "k" is stored in stream 1 already');
      expect(storage.exec(`SELECT ofs FROM events`)).toEqual([{ ofs: 1 }]);
    });

    it('the rows of a batch claim their keys in event_keys together; a claim meets keys in memory and in event_keys alike', async () => {
      const { storage, rows } = await open();
      expect(rows.insertIfNewKeys(1, [keyed(1, 'a'), row(2), keyed(3, 'b')])).toBe(true);
      expect(storage.exec(`SELECT idem, ofs FROM event_keys ORDER BY idem`)).toEqual([
        { idem: 'a', ofs: 1 },
        { idem: 'b', ofs: 3 },
      ]);
      expect(rows.insertIfNewKeys(1, [keyed(4, 'a')])).toBe(false);
      expect(undone(storage, () => rows.insertAll(1, [row(4), row(5, 'b')]))).toBe('storage: idempotency key "b" is stored in stream 1 already');
      // A lone row's key stays in memory until a move; a batch meets it there, and a checked batch too.
      expect(rows.insertIfNewKeys(1, [keyed(4, 'c')])).toBe(true);
      expect(undone(storage, () => expect(rows.insertIfNewKeys(1, [keyed(5, 'd'), keyed(6, 'c')])).toBe(false))).toBe('undone');
      expect(undone(storage, () => rows.insertAll(1, [row(5, 'd'), row(6, 'c')]))).toBe('storage: idempotency key "c" is stored in stream 1 already');
      rows.insertAll(2, [row(1, 'c'), row(2, 'a')]);
      expect(storage.exec(`SELECT sid, idem FROM event_keys WHERE sid = 2 ORDER BY idem`)).toEqual([
        { sid: 2, idem: 'a' },
        { sid: 2, idem: 'c' },
      ]);
      // A move adds the key from memory and leaves the claimed ones as they are.
      rows.keys.move();
      expect(storage.exec(`SELECT sid, idem, ofs FROM event_keys WHERE sid = 1 ORDER BY idem`)).toEqual([
        { sid: 1, idem: 'a', ofs: 1 },
        { sid: 1, idem: 'b', ofs: 3 },
        { sid: 1, idem: 'c', ofs: 4 },
      ]);
      expect(rows.byKeys(1, ['a', 'b', 'c', 'd'])).toEqual(
        new Map([
          ['a', { offset: 1, key: 'a' }],
          ['b', { offset: 3, key: 'b' }],
          ['c', { offset: 4, key: 'c' }],
        ]),
      );
    });

    it(`a batch goes in ${ROWS_PER_INSERT} rows to a statement: batches of one statement, one row past it and several are stored row for row`, async () => {
      const { storage, rows } = await open();
      let next = 1;
      for (const size of [2, ROWS_PER_INSERT, ROWS_PER_INSERT + 1, 2 * ROWS_PER_INSERT + 3]) {
        const batch = Array.from({ length: size }, (_, i) =>
          row(next + i, i % 3 === 1 ? undefined : `k${next + i}`, { type: `t${i}`, ephemeral: i % 5 === 4, createdMs: next + i }),
        );
        expect(rows.insertIfNewKeys(1, batch)).toBe(true);
        const stored = storage.exec<{ ofs: number; type: string; ephemeral: number; idem: string | null; created_ms: number; body: string }>(
          `SELECT ofs, type, ephemeral, idem, created_ms, body FROM events WHERE sid = 1 AND ofs >= ? ORDER BY ofs`,
          next,
        );
        expect(stored).toEqual(
          batch.map((r) => ({ ofs: r.offset, type: r.type, ephemeral: r.ephemeral ? 1 : 0, idem: r.idempotencyKey ?? null, created_ms: r.createdMs, body: r.json })),
        );
        const keys = batch.filter((r) => r.idempotencyKey !== undefined).map((r) => ({ idem: r.idempotencyKey!, ofs: r.offset }));
        expect(storage.exec(`SELECT idem, ofs FROM event_keys WHERE sid = 1 AND ofs >= ? ORDER BY ofs`, next)).toEqual(keys);
        next += size;
      }
    });

    it('a batch whose keys repeat one another, or meet a stale entry, is refused whole; written one by one, a stale entry is taken over', async () => {
      const { storage, rows } = await open();
      expect(undone(storage, () => expect(rows.insertIfNewKeys(1, [keyed(1, 'k'), keyed(2, 'k')])).toBe(false))).toBe('undone');
      rows.insertAll(1, [row(1, 'e', { ephemeral: true }), row(2)]);
      expect(rows.pruneEphemeral(1, 1, 0, 2)).toBe(1);
      // The pruned event's entry is stale: the key is free, but the batch is refused (the engine
      // decides again with its keys looked up) ...
      expect(rows.byKey(1, 'e')).toBeUndefined();
      expect(undone(storage, () => expect(rows.insertIfNewKeys(1, [keyed(3, 'e'), row(4)])).toBe(false))).toBe('undone');
      // ... and the checked writes take the entry over.
      rows.insertAll(1, [row(3, 'e'), row(4)]);
      expect(storage.exec(`SELECT idem, ofs FROM event_keys`)).toEqual([{ idem: 'e', ofs: 3 }]);
      expect(rows.insertIfNewKeys(1, [keyed(5, 'e')])).toBe(false);
      expect(storage.exec(`SELECT ofs FROM events ORDER BY ofs`)).toEqual([{ ofs: 2 }, { ofs: 3 }, { ofs: 4 }]);
    });

    it('a claim undone by a savepoint leaves no key', async () => {
      const { storage, rows } = await open();
      expect(() =>
        storage.transaction(() => {
          rows.insertIfNewKeys(1, [keyed(1, 'k'), keyed(2, 'j')]);
          throw new Error('undo');
        }),
      ).toThrow('undo');
      expect(movedKeys(storage)).toBe(0);
      expect(rows.insertIfNewKeys(1, [keyed(1, 'k')])).toBe(true);
    });

    it('byKeys answers recent, moved and absent keys together, and nothing for keys of another stream', async () => {
      const { rows } = await open();
      rows.insert(1, row(1, 'old'));
      rows.insert(2, row(1, 'mine'));
      rows.keys.move();
      rows.insert(1, row(2, 'new'));
      rows.insert(2, row(2, 'theirs'));
      expect(rows.byKeys(1, ['old', 'new', 'absent', 'mine', 'theirs'])).toEqual(
        new Map([
          ['old', { offset: 1, key: 'old' }],
          ['new', { offset: 2, key: 'new' }],
        ]),
      );
      expect(rows.byKeys(1, [])).toEqual(new Map());
    });

    it(`a move runs by itself once ${MOVE_AFTER_KEYS} keys were written since the last one, not one key before`, async () => {
      const { storage, rows } = await open();
      storage.transaction(() => {
        for (let i = 1; i < MOVE_AFTER_KEYS; i++) rows.insertIfNewKeys(1 + (i % 7), [keyed(i, `key-${i}`)]);
      });
      await settle();
      expect([movedKeys(storage), watermark(storage)]).toEqual([0, 0]);
      rows.insertIfNewKeys(1, [keyed(MOVE_AFTER_KEYS, 'last')]);
      await settle();
      expect([movedKeys(storage), watermark(storage)]).toEqual([MOVE_AFTER_KEYS, MOVE_AFTER_KEYS]);
      expect(rows.insertIfNewKeys(1 + (5 % 7), [keyed(MOVE_AFTER_KEYS + 1, 'key-5')])).toBe(false);
    });

    it('a move runs by itself once moveAfterRows rows were written since the last one (16384; 2048 where the tail persists), keyed or not, not one row before', async () => {
      const { storage, rows } = await open();
      const due = moveAfterRows(storage);
      // Where the tail persists (a Durable Object), as often as keys move: an object's start reads the rows past the watermark.
      expect(due).toBe(storage.tempObjects === true ? 16384 : MOVE_AFTER_KEYS);
      rows.insert(1, row(1, 'k'));
      storage.transaction(() => {
        for (let i = 2; i < due; i++) rows.insert(1, row(i));
      });
      await settle();
      expect([movedKeys(storage), watermark(storage)]).toEqual([0, 0]);
      rows.insert(1, row(due));
      await settle();
      expect([movedKeys(storage), watermark(storage)]).toEqual([1, due]);
    });

    it('with no key written since the last move, a move only raises the watermark', async () => {
      const { storage, rows } = await open();
      const due = moveAfterRows(storage);
      storage.transaction(() => {
        for (let i = 1; i <= due; i++) rows.insert(1 + (i % 3), row(i));
      });
      await settle();
      expect([movedKeys(storage), watermark(storage)]).toEqual([0, due]);
      expect(rows.insertIfNewKeys(1, [keyed(due + 1, 'k')])).toBe(true);
      expect(new EventRows(storage, undefined).byKey(1, 'k')).toEqual({ offset: due + 1, key: 'k' });
    });

    it('a key whose row a savepoint undid is free: the memory entry it left is checked against the rows', async () => {
      const { storage, rows } = await open();
      expect(() =>
        storage.transaction(() => {
          rows.insertIfNewKeys(1, [keyed(1, 'k')]);
          throw new Error('undo');
        }),
      ).toThrow('undo');
      expect(rows.byKey(1, 'k')).toBeUndefined();
      expect(rows.insertIfNewKeys(1, [keyed(1, 'k', { json: '{"again":true}' })])).toBe(true);
      expect(rows.byKey(1, 'k')).toEqual({ again: true });
    });

    it('memory is loaded again when the storage epoch changes (a failed group commit)', async () => {
      const { storage } = await open();
      let epoch = 0;
      const view = new Proxy(storage, { get: (target, name) => (name === 'epoch' ? epoch : Reflect.get(target, name, target)) });
      const rows = new EventRows(view, undefined);
      expect(rows.insertIfNewKeys(1, [keyed(1, 'a')])).toBe(true);
      // A row this instance did not write (as a group commit that failed would leave memory out of
      // step with the rows): unseen until the epoch moves.
      storage.run(`INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (1, 2, 't', 0, 'b', 0, '{}')`);
      storage.run(`DELETE FROM events WHERE ofs = 1`);
      epoch++;
      expect(rows.byKeys(1, ['a', 'b'])).toEqual(new Map([['b', {}]]));
      expect(rows.insertIfNewKeys(1, [keyed(3, 'b')])).toBe(false);
      expect(rows.insertIfNewKeys(1, [keyed(3, 'a')])).toBe(true);
    });

    /** Counts the probes of event_keys for one key (event-keys.ts MOVED_KEY) from here on. */
    function countProbes(storage: SqlStorage): { count: number } {
      const probes = { count: 0 };
      const execRows = storage.execRows.bind(storage);
      storage.execRows = (sql, ...params) => {
        if (sql.startsWith('SELECT k.ofs FROM event_keys')) probes.count++;
        return execRows(sql, ...params);
      };
      return probes;
    }

    it('a fresh key makes no probe of event_keys; a key that got there by any path (move, claim, batch claim) is found by one', async () => {
      const { storage, rows } = await open();
      const probes = countProbes(storage);
      // The first lookup builds the stream's filter (moved-key-filter.ts); every key below comes after it.
      expect(rows.insertIfNewKeys(1, [keyed(1, 'lone')])).toBe(true);
      expect(rows.insertIfNewKeys(1, [keyed(2, 'batch-a'), keyed(3, 'batch-b')])).toBe(true);
      rows.insertAll(1, [row(4, 'checked-a'), row(5, 'checked-b')]);
      expect(probes.count).toBe(0);
      rows.keys.move();
      expect(movedKeys(storage)).toBe(5);
      for (const key of ['lone', 'batch-a', 'batch-b', 'checked-a', 'checked-b']) expect(rows.insertIfNewKeys(1, [keyed(6, key)])).toBe(false);
      expect(probes.count).toBe(5);
      expect(rows.insertIfNewKeys(1, [keyed(6, 'fresh')])).toBe(true);
      expect(rows.insertIfNewKeys(2, [keyed(1, 'lone')])).toBe(true);
      expect(probes.count).toBe(5);
      // A restart builds the filter from event_keys.
      expect(new EventRows(storage, undefined).insertIfNewKeys(1, [keyed(7, 'batch-b')])).toBe(false);
      expect(probes.count).toBe(6);
    });

    it('a stream whose moved keys were deleted has its filter built again: its old keys make no probe', async () => {
      const { storage, rows } = await open();
      rows.insert(1, row(1, 'k'));
      rows.keys.move();
      expect(rows.byKey(1, 'k')).toEqual({ offset: 1, key: 'k' });
      const probes = countProbes(storage);
      rows.deleteAll(1);
      expect(rows.insertIfNewKeys(1, [keyed(1, 'k')])).toBe(true);
      expect(probes.count).toBe(0);
    });

    it('a destroyed stream takes its moved keys along: a stream given the same sid starts with none', async () => {
      const { storage, rows } = await open();
      rows.insert(1, row(1, 'k'));
      rows.insert(1, row(2, 'j'));
      rows.keys.move();
      rows.insert(1, row(3, 'i'));
      rows.deleteAll(1);
      expect(movedKeys(storage)).toBe(0);
      for (const key of ['k', 'j', 'i']) expect(rows.byKey(1, key)).toBeUndefined();
      expect(rows.insertIfNewKeys(1, [keyed(1, 'j')])).toBe(true);
      expect(rows.insertIfNewKeys(1, [keyed(2, 'i')])).toBe(true);
      expect(rows.insertIfNewKeys(1, [keyed(3, 'i')])).toBe(false);
    });

    it('a purge in chunks deletes the moved keys first, then the rows, counting both against the chunk', async () => {
      const { storage, rows } = await open();
      for (let i = 1; i <= 5; i++) rows.insert(1, row(i, `k${i}`));
      rows.insert(2, row(1, 'k1'));
      rows.keys.move();
      expect(rows.deleteSome(1, 3)).toBe(3);
      expect(rows.deleteSome(1, 3)).toBe(3);
      expect(rows.deleteSome(1, 3)).toBe(3);
      expect(rows.deleteSome(1, 3)).toBe(1);
      expect(storage.exec(`SELECT sid, idem FROM event_keys`)).toEqual([{ sid: 2, idem: 'k1' }]);
      expect(storage.exec(`SELECT sid, ofs FROM events`)).toEqual([{ sid: 2, ofs: 1 }]);
      expect(rows.insertIfNewKeys(2, [keyed(2, 'k1')])).toBe(false);
    });

    it('a pruned ephemeral event frees its key, moved or not', async () => {
      const { rows } = await open();
      rows.insert(1, row(1, 'moved', { ephemeral: true }));
      rows.keys.move();
      rows.insert(1, row(2, 'recent', { ephemeral: true }));
      expect(rows.pruneEphemeral(1, 1, 0, 2)).toBe(2);
      expect(rows.insertIfNewKeys(1, [keyed(3, 'moved')])).toBe(true);
      expect(rows.insertIfNewKeys(1, [keyed(4, 'recent')])).toBe(true);
      rows.keys.move();
      expect(rows.byKeys(1, ['moved', 'recent'])).toEqual(
        new Map([
          ['moved', { offset: 3, key: 'moved' }],
          ['recent', { offset: 4, key: 'recent' }],
        ]),
      );
    });

    it('deleting the newest rows lowers the watermark, so a row given a reused rowid is still moved and its key still found', async () => {
      const { storage, rows } = await open();
      rows.insert(1, row(1, 'a'));
      rows.insert(2, row(1, 'b'));
      rows.insert(2, row(2, 'c'));
      rows.keys.move();
      expect(watermark(storage)).toBe(3);
      // The newest rows go: SQLite gives the next row rowid 2, at or below the old watermark.
      rows.deleteAll(2);
      expect(watermark(storage)).toBe(1);
      rows.insert(3, row(1, 'reused'));
      expect(storage.exec(`SELECT rowid AS r FROM events WHERE sid = 3`)).toEqual([{ r: 2 }]);
      // A restart before any move finds it past the watermark; a move takes it into event_keys.
      expect(new EventRows(storage, undefined).insertIfNewKeys(3, [keyed(2, 'reused')])).toBe(false);
      rows.keys.move();
      expect(storage.exec(`SELECT sid, idem FROM event_keys ORDER BY sid`)).toEqual([
        { sid: 1, idem: 'a' },
        { sid: 3, idem: 'reused' },
      ]);
      expect(new EventRows(storage, undefined).insertIfNewKeys(3, [keyed(2, 'reused')])).toBe(false);
    });

    it('a move reads only the rows past the watermark (a range of rowids), not the whole table', async () => {
      const { storage } = await open();
      const plan = storage.exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${MOVE_KEYS}`, 16, 0).map((r) => r.detail);
      expect(plan.join(' | ')).toMatch(/^SEARCH events USING INTEGER PRIMARY KEY \(rowid>\?\)/);
    });

    it('opening the schema brings a watermark above the highest rowid down to it', async () => {
      const { storage, rows } = await open();
      rows.insert(1, row(1, 'a'));
      rows.keys.move();
      // As a copy that renumbered rows could leave it.
      storage.run(`UPDATE meta SET value = '40' WHERE key = 'keys_moved'`);
      openSchema(storage);
      expect(watermark(storage)).toBe(1);
    });
  });
}
