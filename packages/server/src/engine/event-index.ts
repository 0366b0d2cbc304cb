/**
 * Where an event row is found by stream and offset (storage format 9; docs/architecture.md
 * "Offsets are indexed in batches"). The events table has no index of its own: an index on
 * `(sid, ofs)` dirtied one leaf page per append (each stream's newest entries sit on a page of
 * their own): one WAL frame per append on the Node host, whose removal cut a keyed append's CPU to
 * 0.86x (bench/README "Offsets indexed in batches").
 *
 * - `event_offsets (sid, ofs) → rid` holds the rows a move has indexed: a move (event-keys.ts, with
 *   the keys, under the same watermark) inserts the tail's entries sorted, so each stream's new
 *   entries share a page.
 * - `tail_offsets`, of the same shape, holds the rows written since the last move. Triggers on the
 *   events table keep it: every inserted row is entered (but copies stored as parts, which their
 *   batch enters in event_offsets at once: MovedOffsets.enter), every deleted row leaves both. On a
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
 * The tail, its triggers and the union view. `temp`: as connection-scoped objects. The tail's key
 * refuses an offset written twice since the last move; one at or below a stream's moved entries is
 * refused before its row is written (MovedOffsets), not by the trigger: a probe of event_offsets
 * per row there cost a copy about a sixth of its CPU (bench/README "Offsets indexed in batches").
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
    `CREATE ${t}TRIGGER IF NOT EXISTS events_offset_insert AFTER INSERT ON events WHEN new.copy_run IS NULL BEGIN
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

/** The meta row that says a persistent tail holds every row past the watermark (see openEventIndex). */
export const TAIL_FILLED = 'tail_filled';

/**
 * Creates the tail, its triggers and the view (as TEMP objects where the storage holds them), and
 * enters every row past the watermark `watermark` that the tail lacks. A TEMP tail starts empty
 * with every connection: it is filled every time. A persistent one (a Durable Object's) is kept
 * exact by its triggers, in the transactions of the rows themselves, from the moment it exists:
 * it is filled once, the first time the schema opens with it (a new database, or the first opening
 * after the upgrade that added it), and a meta row remembers that, so that an object's start does
 * not read every row past the watermark again (up to moveAfterRows, 2,048 there, each a row read
 * a Durable Object bills). Inside the schema's opening transaction.
 */
export function openEventIndex(storage: SqlStorage, watermark: number): void {
  const temp = storage.tempObjects === true;
  for (const ddl of tailDdl(temp)) storage.run(ddl);
  if (!temp && storage.execRows(`SELECT 1 FROM meta WHERE key = ?`, TAIL_FILLED).length > 0) return;
  storage.run(`INSERT OR IGNORE INTO tail_offsets (sid, ofs, rid) SELECT sid, ofs, rowid FROM events NOT INDEXED WHERE rowid > ? AND copy_run IS NULL`, watermark);
  if (!temp) storage.run(`INSERT INTO meta (key, value) VALUES (?, '1')`, TAIL_FILLED);
}

/**
 * The moved entries' highest offset per stream, the bound a new row's offset must pass: a row at or
 * below it would take an offset stored already (offsets only grow, so anything at or below it is
 * wrong), which the unique (sid, ofs) index of earlier formats refused. Read from event_offsets on a
 * stream's first write and kept; forgotten for a stream whose rows are deleted (its sid may go to a
 * new stream), all forgotten by a move and when the storage epoch changes (a failed group commit may
 * have undone a move).
 */
export class MovedOffsets {
  private readonly highest = new Map<number, number>();
  private epoch: number;

  constructor(private readonly storage: SqlStorage) {
    this.epoch = storage.epoch;
  }

  /** Throws, before anything is written, when `offset` is at or below stream `sid`'s moved entries. */
  check(sid: number, offset: number): void {
    if (this.storage.epoch !== this.epoch) {
      this.highest.clear();
      this.epoch = this.storage.epoch;
    }
    let highest = this.highest.get(sid);
    if (highest === undefined) {
      highest = this.storage.execRows(`SELECT coalesce(max(ofs), 0) FROM event_offsets WHERE sid = ?`, sid)[0]![0] as number;
      this.highest.set(sid, highest);
    }
    if (offset <= highest) throw new Error(`storage: offset ${offset} of stream ${sid} is stored already (UNIQUE constraint failed: events.sid, events.ofs)`);
  }

  /**
   * A move's part: the tail's entries into event_offsets, sorted, and the tail emptied (event-keys.ts
   * `move`, in its transaction). An entry event_offsets holds already for the same offset is
   * replaced (it can only name a row that is gone).
   */
  move(): void {
    this.storage.run(`INSERT OR REPLACE INTO event_offsets (sid, ofs, rid) SELECT sid, ofs, rid FROM tail_offsets ORDER BY sid, ofs`);
    this.storage.run(`DELETE FROM tail_offsets`);
    this.highest.clear();
  }

  /**
   * Enters the last `count` rows inserted, copies stored as parts of one batch of stream `sid`, in
   * event_offsets directly (the insert trigger leaves them out of the tail): a
   * batch's copies have consecutive offsets in one stream, so their entries share a page as a
   * move's do, and going through the tail cost a copy about a tenth more CPU (bench/README "Offsets
   * indexed in batches"). In the batch's transaction, right after its INSERTs (their rowids are the
   * last `count` given), their offsets `first` to `last`. Throws when the tail holds one of them
   * (event_offsets' own key refuses the rest); the caller's transaction then undoes the rows. The
   * stream's bound is read again at its next write (not raised here: the batch may yet be undone).
   */
  enter(sid: number, count: number, first: number, last: number): void {
    if ((this.storage.execRows(`SELECT count(*) FROM tail_offsets WHERE sid = ? AND ofs BETWEEN ? AND ?`, sid, first, last)[0]![0] as number) > 0) {
      throw new Error(`storage: an offset from ${first} to ${last} of stream ${sid} is stored already (UNIQUE constraint failed: events.sid, events.ofs)`);
    }
    const top = this.storage.execRows(`SELECT last_insert_rowid()`)[0]![0] as number;
    this.storage.run(`INSERT INTO event_offsets (sid, ofs, rid) SELECT sid, ofs, rowid FROM events WHERE rowid > ? AND rowid <= ?`, top - count, top);
    this.highest.delete(sid);
  }

  /** Rows of stream `sid` were deleted. */
  forget(sid: number): void {
    this.highest.delete(sid);
  }
}

/**
 * The highest offset of a stream's rows, 0 when it has none, for statements (`sid` is an SQL
 * expression): one key lookup in each table.
 */
export function maxOffsetSql(sid: string): string {
  return `max(coalesce((SELECT max(ofs) FROM event_offsets WHERE sid = ${sid}), 0), coalesce((SELECT max(ofs) FROM tail_offsets WHERE sid = ${sid}), 0))`;
}

/**
 * The head as stored, for statements over many streams (`alias` names the streams row, or a row
 * with its `sid` and `head`): the checkpoint or the highest event offset, whichever is higher (one
 * index lookup per stream).
 */
export function derivedHeadSql(alias: string): string {
  return `max(${alias}.head, ${maxOffsetSql(`${alias}.sid`)})`;
}

/**
 * The creation time of a stream's first event after an offset that is not ephemeral, for
 * statements over many streams (`alias` names a row with the stream's `sid`; `after` is an SQL
 * expression of the offset): the oldest event a subscription owes.
 */
export function firstOwedCreatedSql(alias: string, after: string): string {
  return `(SELECT e.created_ms FROM ${EVENTS_BY_OFFSET} WHERE x.sid = ${alias}.sid AND x.ofs > ${after} AND e.ephemeral = 0 ORDER BY x.ofs LIMIT 1)`;
}
