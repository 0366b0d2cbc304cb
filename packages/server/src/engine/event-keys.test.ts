/**
 * Idempotency keys in storage format 6 (event-keys.ts, docs/architecture.md "Storage"): keys
 * since the last move are found in memory, older ones in event_keys, and every lookup checks the
 * row an entry names. Over both test adapters. (What the engine answers a repeat: the actor and
 * idempotency suites; the upgrade from format 5: migrations.test.ts.)
 */
import { afterEach, describe, expect, it } from 'vitest';
import { testStorages } from '../../test/helpers/test-storages.js';
import type { SqlStorage } from '../ports/storage.js';
import { MOVE_AFTER_KEYS, MOVE_AFTER_ROWS } from './event-keys.js';
import { EventRows, type EventRowInput } from './event-rows.js';
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
      expect(rows.insertIfNewKey(1, keyed(1, 'k'))).toBe(true);
      expect(rows.insertIfNewKey(2, keyed(1, 'k'))).toBe(true);
      expect(rows.insertIfNewKey(1, keyed(2, 'k'))).toBe(false);
      expect(rows.byKey(1, 'k')).toEqual({ offset: 1, key: 'k' });
      expect(new EventRows(storage, undefined).insertIfNewKey(1, keyed(2, 'k'))).toBe(false);
      expect(movedKeys(storage)).toBe(0);

      rows.keys.move();
      expect(storage.exec(`SELECT sid, idem, ofs FROM event_keys ORDER BY sid`)).toEqual([
        { sid: 1, idem: 'k', ofs: 1 },
        { sid: 2, idem: 'k', ofs: 1 },
      ]);
      expect(watermark(storage)).toBe(2);
      expect(rows.insertIfNewKey(1, keyed(2, 'k'))).toBe(false);
      expect(rows.byKey(2, 'k')).toEqual({ offset: 1, key: 'k' });
      expect(new EventRows(storage, undefined).insertIfNewKey(2, keyed(2, 'k'))).toBe(false);
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
        for (let i = 1; i < MOVE_AFTER_KEYS; i++) rows.insertIfNewKey(1 + (i % 7), keyed(i, `key-${i}`));
      });
      await settle();
      expect([movedKeys(storage), watermark(storage)]).toEqual([0, 0]);
      rows.insertIfNewKey(1, keyed(MOVE_AFTER_KEYS, 'last'));
      await settle();
      expect([movedKeys(storage), watermark(storage)]).toEqual([MOVE_AFTER_KEYS, MOVE_AFTER_KEYS]);
      expect(rows.insertIfNewKey(1 + (5 % 7), keyed(MOVE_AFTER_KEYS + 1, 'key-5'))).toBe(false);
    });

    it(`a move runs by itself once ${MOVE_AFTER_ROWS} rows were written since the last one, keyed or not, not one row before`, async () => {
      const { storage, rows } = await open();
      rows.insert(1, row(1, 'k'));
      storage.transaction(() => {
        for (let i = 2; i < MOVE_AFTER_ROWS; i++) rows.insert(1, row(i));
      });
      await settle();
      expect([movedKeys(storage), watermark(storage)]).toEqual([0, 0]);
      rows.insert(1, row(MOVE_AFTER_ROWS));
      await settle();
      expect([movedKeys(storage), watermark(storage)]).toEqual([1, MOVE_AFTER_ROWS]);
    });

    it('with no key written since the last move, a move only raises the watermark', async () => {
      const { storage, rows } = await open();
      storage.transaction(() => {
        for (let i = 1; i <= MOVE_AFTER_ROWS; i++) rows.insert(1 + (i % 3), row(i));
      });
      await settle();
      expect([movedKeys(storage), watermark(storage)]).toEqual([0, MOVE_AFTER_ROWS]);
      expect(rows.insertIfNewKey(1, keyed(MOVE_AFTER_ROWS + 1, 'k'))).toBe(true);
      expect(new EventRows(storage, undefined).byKey(1, 'k')).toEqual({ offset: MOVE_AFTER_ROWS + 1, key: 'k' });
    });

    it('a key whose row a savepoint undid is free: the memory entry it left is checked against the rows', async () => {
      const { storage, rows } = await open();
      expect(() =>
        storage.transaction(() => {
          rows.insertIfNewKey(1, keyed(1, 'k'));
          throw new Error('undo');
        }),
      ).toThrow('undo');
      expect(rows.byKey(1, 'k')).toBeUndefined();
      expect(rows.insertIfNewKey(1, keyed(1, 'k', { json: '{"again":true}' }))).toBe(true);
      expect(rows.byKey(1, 'k')).toEqual({ again: true });
    });

    it('memory is loaded again when the storage epoch changes (a failed group commit)', async () => {
      const { storage } = await open();
      let epoch = 0;
      const view = new Proxy(storage, { get: (target, name) => (name === 'epoch' ? epoch : Reflect.get(target, name, target)) });
      const rows = new EventRows(view, undefined);
      expect(rows.insertIfNewKey(1, keyed(1, 'a'))).toBe(true);
      // A row this instance did not write (as a group commit that failed would leave memory out of
      // step with the rows): unseen until the epoch moves.
      storage.run(`INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (1, 2, 't', 0, 'b', 0, '{}')`);
      storage.run(`DELETE FROM events WHERE ofs = 1`);
      epoch++;
      expect(rows.byKeys(1, ['a', 'b'])).toEqual(new Map([['b', {}]]));
      expect(rows.insertIfNewKey(1, keyed(3, 'b'))).toBe(false);
      expect(rows.insertIfNewKey(1, keyed(3, 'a'))).toBe(true);
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
      expect(rows.insertIfNewKey(1, keyed(1, 'j'))).toBe(true);
      expect(rows.insertIfNewKey(1, keyed(2, 'i'))).toBe(true);
      expect(rows.insertIfNewKey(1, keyed(3, 'i'))).toBe(false);
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
      expect(rows.insertIfNewKey(2, keyed(2, 'k1'))).toBe(false);
    });

    it('a pruned ephemeral event frees its key, moved or not', async () => {
      const { rows } = await open();
      rows.insert(1, row(1, 'moved', { ephemeral: true }));
      rows.keys.move();
      rows.insert(1, row(2, 'recent', { ephemeral: true }));
      expect(rows.pruneEphemeral(1, 1, 0, 2)).toBe(2);
      expect(rows.insertIfNewKey(1, keyed(3, 'moved'))).toBe(true);
      expect(rows.insertIfNewKey(1, keyed(4, 'recent'))).toBe(true);
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
      expect(new EventRows(storage, undefined).insertIfNewKey(3, keyed(2, 'reused'))).toBe(false);
      rows.keys.move();
      expect(storage.exec(`SELECT sid, idem FROM event_keys ORDER BY sid`)).toEqual([
        { sid: 1, idem: 'a' },
        { sid: 3, idem: 'reused' },
      ]);
      expect(new EventRows(storage, undefined).insertIfNewKey(3, keyed(2, 'reused'))).toBe(false);
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
