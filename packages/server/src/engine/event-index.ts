/**
 * Where an event row is found by stream and offset (storage format 9; docs/architecture.md
 * "Offsets are indexed in batches"). The events table has no index of its own: an index on
 * `(sid, ofs)` dirtied one leaf page per append (each stream's newest entries sit on a page of
 * their own), which was one WAL frame per append on the Node host, about a fifth of its CPU.
 *
 * - `event_offsets (sid, ofs) → rid` holds the rows a move has indexed: a move (event-keys.ts, with
 *   the keys, under the same watermark) inserts the tail's entries sorted, so each stream's new
 *   entries share a page.
 * - `tail_offsets`, of the same shape, holds the rows written since the last move. Triggers on the
 *   events table keep it: every inserted row is entered, every deleted row leaves both tables. On a
 *   storage that can hold connection-scoped (TEMP) objects (the Node host, the in-memory adapter)
 *   the tail, its triggers and the view live with the connection and cost the WAL nothing; they are
 *   built again from the rows past the watermark when the connection opens. Elsewhere (the Durable
 *   Object host, which refuses TEMP objects and holds one stream, so an index page per append is
 *   shared anyway) they are ordinary schema objects.
 * - `event_index` is the union of the two, with the same columns: statements find rows through it
 *   (`EVENTS_BY_OFFSET`), naming `x.sid` and `x.ofs` in their conditions and order, so SQLite merges
 *   the two primary keys in offset order. Aggregates over one stream use each table's key
 *   separately (`maxOffsetSql`): through the union SQLite would read every entry of the stream.
 *
 * The tail is written in the same transaction as its rows, so a savepoint or a failed commit
 * undoes both; a row is never in both tables (a move empties the tail in its transaction).
 */
import type { SqlStorage } from '../ports/storage.js';

/** The moved entries: one per event row at or below the watermark. */
export const EVENT_OFFSETS_TABLE = `CREATE TABLE IF NOT EXISTS event_offsets (
     sid INTEGER NOT NULL,
     ofs INTEGER NOT NULL,
     rid INTEGER NOT NULL,
     PRIMARY KEY (sid, ofs)
   ) WITHOUT ROWID`;

/** The rows of the events table found by stream and offset: `x` (sid, ofs, rid) joined to `e`. */
export const EVENTS_BY_OFFSET = `event_index x JOIN events e ON e.rowid = x.rid`;

/**
 * The tail, its triggers and the union view. `temp`: as connection-scoped objects. The insert
 * trigger refuses an offset the moved entries hold already (the unique index of earlier formats
 * refused it too): a read of one key, no write.
 */
function tailDdl(temp: boolean): string[] {
  const t = temp ? 'TEMP ' : '';
  return [
    `CREATE ${t}TABLE IF NOT EXISTS tail_offsets (
       sid INTEGER NOT NULL,
       ofs INTEGER NOT NULL,
       rid INTEGER NOT NULL,
       PRIMARY KEY (sid, ofs)
     ) WITHOUT ROWID`,
    `CREATE ${t}TRIGGER IF NOT EXISTS events_offset_insert AFTER INSERT ON events BEGIN
       SELECT RAISE(ABORT, 'UNIQUE constraint failed: events.sid, events.ofs')
         WHERE EXISTS (SELECT 1 FROM event_offsets WHERE sid = new.sid AND ofs = new.ofs);
       INSERT INTO tail_offsets (sid, ofs, rid) VALUES (new.sid, new.ofs, new.rowid);
     END`,
    `CREATE ${t}TRIGGER IF NOT EXISTS events_offset_delete AFTER DELETE ON events BEGIN
       DELETE FROM tail_offsets WHERE sid = old.sid AND ofs = old.ofs;
       DELETE FROM event_offsets WHERE sid = old.sid AND ofs = old.ofs;
     END`,
    `CREATE ${t}VIEW IF NOT EXISTS event_index AS
       SELECT sid, ofs, rid FROM event_offsets UNION ALL SELECT sid, ofs, rid FROM tail_offsets`,
  ];
}

/**
 * Creates the tail, its triggers and the view (as TEMP objects where the storage holds them), and
 * enters every row past the watermark `watermark` that the tail lacks: all of them for a new
 * connection's TEMP tail, none for a persistent one. Inside the schema's opening transaction.
 */
export function openEventIndex(storage: SqlStorage, watermark: number): void {
  for (const ddl of tailDdl(storage.tempObjects === true)) storage.run(ddl);
  storage.run(`INSERT OR IGNORE INTO tail_offsets (sid, ofs, rid) SELECT sid, ofs, rowid FROM events NOT INDEXED WHERE rowid > ?`, watermark);
}

/**
 * A move's part: the tail's entries into event_offsets, sorted, and the tail emptied (event-keys.ts
 * `move`, in its transaction). An entry event_offsets holds already for the same offset is replaced
 * (it can only name a row that is gone).
 */
export function moveOffsets(storage: SqlStorage): void {
  storage.run(`INSERT OR REPLACE INTO event_offsets (sid, ofs, rid) SELECT sid, ofs, rid FROM tail_offsets ORDER BY sid, ofs`);
  storage.run(`DELETE FROM tail_offsets`);
}

/**
 * The highest offset of a stream's rows, 0 when it has none, for statements (`sid` is an SQL
 * expression): one key lookup in each table.
 */
export function maxOffsetSql(sid: string): string {
  return `max(coalesce((SELECT max(ofs) FROM event_offsets WHERE sid = ${sid}), 0), coalesce((SELECT max(ofs) FROM tail_offsets WHERE sid = ${sid}), 0))`;
}
