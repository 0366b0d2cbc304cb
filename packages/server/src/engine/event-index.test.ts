/**
 * Offsets indexed in batches (storage format 9, event-index.ts): rows are found by stream and
 * offset through event_offsets and the tail alike, in offset order across a move; an offset is
 * stored once per stream; deletes, savepoints and a reopen keep both tables exact. Over every test
 * adapter, the one without TEMP objects (a Durable Object's case) included.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { testStorages } from '../../test/helpers/test-storages.js';
import { SqliteStorage } from '../adapters/sqlite/sqlite-storage.js';
import type { SqlStorage } from '../ports/storage.js';
import { MovedOffsets, TAIL_FILLED, derivedHeadSql } from './event-index.js';
import { EventRows, type EventRowInput } from './event-rows.js';
import { openSchema } from './schema.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function row(offset: number, extra: Partial<EventRowInput> = {}): EventRowInput {
  return { offset, type: 't', ephemeral: false, idempotencyKey: undefined, createdMs: 0, json: JSON.stringify({ offset }), ...extra };
}

const all = { afterOffset: 0, beforeOffset: 1_000_000, limit: 1000, includeEphemeral: true };
const count = (storage: SqlStorage, table: string) => storage.execRows(`SELECT count(*) FROM ${table}`)[0]![0];
const offsets = (rows: EventRows, sid: number) => rows.range(sid, all).map((e) => e.offset);

for (const adapter of testStorages(cleanups, 'rivulet-event-index-')) {
  describe(`offsets indexed in batches (${adapter.name})`, () => {
    async function open(): Promise<{ storage: SqlStorage; rows: EventRows }> {
      const storage = await adapter.open();
      openSchema(storage);
      return { storage, rows: new EventRows(storage, undefined) };
    }

    it('rows written before and after a move read back in offset order, in pages and joined; a move empties the tail into event_offsets', async () => {
      const { storage, rows } = await open();
      for (let offset = 1; offset <= 5; offset++) for (const sid of [1, 2]) rows.insert(sid, row(offset));
      expect([count(storage, 'tail_offsets'), count(storage, 'event_offsets')]).toEqual([10, 0]);
      rows.keys.move();
      expect([count(storage, 'tail_offsets'), count(storage, 'event_offsets')]).toEqual([0, 10]);
      for (let offset = 6; offset <= 9; offset++) for (const sid of [2, 1]) rows.insert(sid, row(offset));
      expect([count(storage, 'tail_offsets'), count(storage, 'event_offsets')]).toEqual([8, 10]);
      expect(offsets(rows, 1)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      // A page across the watermark, and one limited inside the moved part.
      expect(rows.range(2, { ...all, afterOffset: 3, beforeOffset: 8 }).map((e) => e.offset)).toEqual([4, 5, 6, 7]);
      expect(rows.range(2, { ...all, limit: 3 }).map((e) => e.offset)).toEqual([1, 2, 3]);
      const joined = rows.rangeJoined(1, { ...all, afterOffset: 4, limit: 3 });
      expect(joined).toEqual({ count: 3, first: 5, last: 7, json: '{"offset":5},{"offset":6},{"offset":7}' });
      expect(rows.afterCheckpoint(1, 5)).toEqual({ head: 9, durable: 4, last: 9 });
    });

    it('an offset is stored once per stream: again in the tail, or at or below the moved ones, it is refused and nothing is written', async () => {
      const { storage, rows } = await open();
      rows.insert(1, row(1));
      rows.insert(1, row(2));
      expect(() => rows.insert(1, row(2))).toThrow('UNIQUE constraint failed');
      rows.keys.move();
      expect(() => rows.insert(1, row(2))).toThrow('storage: offset 2 of stream 1 is stored already');
      // Lower than the moved ones, though free: offsets only grow, so it is refused as well.
      storage.run(`DELETE FROM events WHERE ofs = 1`);
      expect(() => rows.insert(1, row(1))).toThrow('storage: offset 1 of stream 1 is stored already');
      // In a batch, inside the append's transaction, which its refusal undoes whole.
      expect(() => storage.transaction(() => rows.insertAll(1, [row(3), row(2)]))).toThrow('is stored already');
      // Another stream starts at 1, and this one goes on above its moved rows.
      rows.insert(2, row(1));
      rows.insert(1, row(3));
      expect(offsets(rows, 1)).toEqual([2, 3]);
      expect(count(storage, 'events')).toBe(3);
    });

    it('deleted rows leave both tables; a sid given to a new stream after its rows were deleted starts from offset 1', async () => {
      const { storage, rows } = await open();
      for (let offset = 1; offset <= 4; offset++) rows.insert(7, row(offset, { ephemeral: offset % 2 === 0 }));
      rows.keys.move();
      rows.insert(7, row(5));
      rows.insert(7, row(6, { ephemeral: true }));
      rows.insert(8, row(1));
      expect(rows.pruneEphemeral(7, 1, 0, 6)).toBe(3);
      expect(storage.execRows(`SELECT ofs FROM event_index WHERE sid = 7 ORDER BY ofs`)).toEqual([[1], [3], [5]]);
      expect(rows.deleteSome(7, 2)).toBe(2);
      expect(storage.execRows(`SELECT ofs FROM event_index WHERE sid = 7 ORDER BY ofs`)).toEqual([[5]]);
      rows.deleteAll(7);
      expect(storage.execRows(`SELECT sid, ofs FROM event_index ORDER BY sid, ofs`)).toEqual([[8, 1]]);
      rows.insert(7, row(1));
      expect(offsets(rows, 7)).toEqual([1]);
    });

    it('a transaction undone takes its tail entries along; one that commits keeps them', async () => {
      const { storage, rows } = await open();
      rows.insert(1, row(1));
      expect(() =>
        storage.transaction(() => {
          rows.insert(1, row(2));
          storage.transaction(() => rows.insert(1, row(3)));
          throw new Error('undone');
        }),
      ).toThrow('undone');
      expect(storage.execRows(`SELECT ofs FROM tail_offsets ORDER BY ofs`)).toEqual([[1]]);
      storage.transaction(() => {
        rows.insert(1, row(2));
        expect(() => storage.transaction(() => rows.insert(1, row(2)))).toThrow('UNIQUE constraint failed');
      });
      expect(offsets(rows, 1)).toEqual([1, 2]);
    });

    it('copies stored as parts skip the tail; their batch enters them in event_offsets, unless the tail holds one of their offsets', async () => {
      const { storage, rows } = await open();
      const offsets = new MovedOffsets(storage);
      const copy = (offset: number) =>
        storage.run(`INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body, copy_run, src_ofs) VALUES (1, ?, 't', 0, NULL, 0, '', 1, ?)`, offset, offset);
      rows.insert(1, row(1));
      copy(2);
      copy(3);
      expect(storage.execRows(`SELECT ofs FROM tail_offsets`)).toEqual([[1]]);
      offsets.enter(1, 2, 2, 3);
      expect(storage.execRows(`SELECT ofs FROM event_offsets`)).toEqual([[2], [3]]);
      // The bound is read again: offset 3 is taken now.
      expect(() => offsets.check(1, 3)).toThrow('storage: offset 3 of stream 1 is stored already');
      offsets.check(1, 4);
      rows.insert(1, row(4));
      expect(() => storage.transaction(() => {
        copy(4);
        offsets.enter(1, 1, 4, 4);
      })).toThrow('storage: an offset from 4 to 4 of stream 1 is stored already');
      // Undone with its transaction: the plain row at 4 alone holds the offset.
      expect(storage.execRows(`SELECT ofs, copy_run FROM events WHERE sid = 1 ORDER BY ofs`)).toEqual([[1, null], [2, 1], [3, 1], [4, null]]);
    });

    /** Counts the statements run from here on that begin with `prefix`. */
    function countRuns(storage: SqlStorage, prefix: string): { count: number } {
      const runs = { count: 0 };
      const run = storage.run.bind(storage);
      storage.run = (sql, ...params) => {
        if (sql.startsWith(prefix)) runs.count++;
        return run(sql, ...params);
      };
      return runs;
    }

    /** Row 1 of stream 1, moved; then row 2 of stream 1 and row 1 of stream 2, past the watermark. */
    function writeAcrossMove(rows: EventRows): void {
      rows.insert(1, row(1));
      rows.keys.move();
      rows.insert(1, row(2));
      rows.insert(2, row(1));
    }

    /** The tail holds the rows writeAcrossMove wrote past the watermark, and stream 1 reads back whole. */
    function expectRowsPastTheMove(storage: SqlStorage): void {
      expect(storage.execRows(`SELECT sid, ofs FROM tail_offsets ORDER BY sid, ofs`)).toEqual([
        [1, 2],
        [2, 1],
      ]);
      expect(offsets(new EventRows(storage, undefined), 1)).toEqual([1, 2]);
    }

    it('a tail kept in the file is filled once, when the schema first opens with it; one kept with the connection, at every opening', async () => {
      const { storage, rows } = await open();
      writeAcrossMove(rows);
      const fills = countRuns(storage, 'INSERT OR IGNORE INTO tail_offsets');
      // Opened again, as at a Durable Object's next start.
      openSchema(storage);
      expect(fills.count).toBe(storage.tempObjects === true ? 1 : 0);
      expectRowsPastTheMove(storage);
    });

    it('a tail kept in the file that was never filled (a database from before the mark, or just upgraded from format 8) is filled at the next opening', async () => {
      const { storage, rows } = await open();
      writeAcrossMove(rows);
      // As the upgrade from format 8 leaves it: rows past the watermark, a tail without them, no mark.
      storage.run(`DELETE FROM tail_offsets`);
      storage.run(`DELETE FROM meta WHERE key = ?`, TAIL_FILLED);
      openSchema(storage);
      expectRowsPastTheMove(storage);
      expect(storage.execRows(`SELECT value FROM meta WHERE key = ?`, TAIL_FILLED)).toEqual(storage.tempObjects === true ? [] : [['1']]);
    });

    it('the derived head of many streams reads each table once per stream, moved and tail alike', async () => {
      const { storage, rows } = await open();
      storage.run(`INSERT INTO streams VALUES (1, '', '/a', 'a', 't', 0, 0, 0, '{}', 9), (2, '', '/b', 'b', 't', 2, 0, 0, '{}', 9), (3, '', '/c', 'c', 't', 0, 0, 0, '{}', 9)`);
      rows.insert(1, row(1));
      rows.insert(1, row(2));
      rows.keys.move();
      rows.insert(1, row(3));
      rows.insert(3, row(1));
      rows.keys.move();
      expect(storage.execRows(`SELECT s.sid, ${derivedHeadSql('s')} FROM streams s ORDER BY s.sid`)).toEqual([
        [1, 3],
        [2, 2],
        [3, 1],
      ]);
    });
  });
}

describe('offsets indexed in batches: the Node host', () => {
  it('the tail lives with the connection, off the file, and is built again from the rows past the watermark when the database opens', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rivulet-event-index-reopen-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'data.sqlite');
    const first = new SqliteStorage(file, { durability: 'relaxed', groupCommit: false });
    openSchema(first);
    const rows = new EventRows(first, undefined);
    for (let offset = 1; offset <= 3; offset++) rows.insert(1, row(offset));
    rows.keys.move();
    rows.insert(1, row(4));
    rows.insert(2, row(1));
    expect(first.execRows(`SELECT name FROM sqlite_master WHERE name IN ('tail_offsets', 'event_index') OR type = 'trigger'`)).toEqual([]);
    expect(first.execRows(`SELECT type, name FROM sqlite_temp_master ORDER BY name`)).toEqual([
      ['view', 'event_index'],
      ['trigger', 'events_offset_delete'],
      ['trigger', 'events_offset_insert'],
      ['table', 'tail_offsets'],
    ]);
    first.close();

    const second = new SqliteStorage(file, { durability: 'relaxed', groupCommit: false });
    cleanups.push(() => second.close());
    openSchema(second);
    expect(second.execRows(`SELECT sid, ofs FROM tail_offsets ORDER BY sid, ofs`)).toEqual([
      [1, 4],
      [2, 1],
    ]);
    const again = new EventRows(second, undefined);
    expect(offsets(again, 1)).toEqual([1, 2, 3, 4]);
    expect(() => again.insert(1, row(4))).toThrow('UNIQUE constraint failed');
    again.insert(1, row(5));
    expect(offsets(again, 1)).toEqual([1, 2, 3, 4, 5]);
  });
});
