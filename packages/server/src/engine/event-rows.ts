/**
 * The rows of the events table: every statement that writes, finds or deletes events by stream
 * and offset or by idempotency key, over the storage port (the read cache's chunk loads excepted,
 * read-cache.ts); where rows are by offset, and the fragments that statements over many streams
 * embed, are event-index.ts's. StreamStore (stream-store.ts) runs the rest of the engine's SQL and
 * hands event work here, so the events table's layout is known in two files beside each other
 * (docs/architecture.md "Storage"). Holds no state besides the read cache's chunk source and the
 * offsets' bound (event-index.ts MovedOffsets).
 */
import type { CommittedEvent } from '@rivulet/contract';
import type { FreshEvent } from '../core/decide-append.js';
import type { SqlStorage } from '../ports/storage.js';
import type { Timer } from '../ports/timer.js';
import { ClaimsBuilder, isCopyKey, splitCopyKey } from './copy-claims.js';
import { CopyRuns, EVENT_BODY, EVENTS_WITH_RUNS } from './copy-rows.js';
import { EVENTS_BY_OFFSET, MovedOffsets } from './event-index.js';
import { EventKeys } from './event-keys.js';
import { sqlChunkSource, type ChunkSource, type ReadCache } from './read-cache.js';

export interface RangeQuery {
  afterOffset: number;
  /** Exclusive upper bound. */
  beforeOffset: number;
  limit: number;
  includeEphemeral: boolean;
  /** With includeEphemeral: ephemeral events created before this time are past retention and hidden. */
  ephemeralSinceMs?: number | undefined;
  eventTypes?: readonly string[] | undefined;
}

export interface EventRowInput {
  offset: number;
  type: string;
  ephemeral: boolean;
  idempotencyKey: string | undefined;
  createdMs: number;
  json: string;
  /** A copy stored as parts (copy-rows.ts): its fresh event, whose `json` they make. */
  stored?: Required<Pick<FreshEvent, 'event' | 'parts'>> | undefined;
}

/** A committed event as stored: its offset and its JSON text. */
export interface RawEvent {
  offset: number;
  json: string;
}

/** Committed events of a range as one JSON text: the bodies in offset order joined by commas. */
export interface JoinedRange {
  count: number;
  /** Offsets of the first and last event (0 when there is none). */
  first: number;
  last: number;
  /** The bodies joined by ","; empty when there is none. */
  json: string;
  /** The UTF-8 length of `json` when it is known without counting (the read cache knows it for texts of ASCII only). */
  jsonBytes?: number;
}

/** What the event rows above a stream's checkpoint add to it (EventRows.afterCheckpoint). */
export interface RowsAfterCheckpoint {
  /** The highest offset above the checkpoint; null when there is no row above it. */
  head: number | null;
  /** Rows above it that are not ephemeral. */
  durable: number;
  /** The highest offset above it of an event that is not ephemeral; null when there is none. */
  last: number | null;
}

/** The select of a range's rows (offset, body) in offset order, shared by both range reads. */
function rangeSelect(sid: number, q: RangeQuery, parts: boolean): { sql: string; params: (string | number)[] } {
  const params: (string | number)[] = [sid, q.afterOffset, q.beforeOffset];
  // A stream without copies stored as parts reads its bodies as they are, without the join (copy-rows.ts).
  const from = parts ? `SELECT x.ofs AS ofs, ${EVENT_BODY} AS body FROM ${EVENTS_WITH_RUNS}` : `SELECT x.ofs AS ofs, e.body AS body FROM ${EVENTS_BY_OFFSET}`;
  let sql = `${from} WHERE x.sid = ? AND x.ofs > ? AND x.ofs < ?`;
  if (!q.includeEphemeral) sql += ` AND e.ephemeral = 0`;
  else if (q.ephemeralSinceMs !== undefined) {
    sql += ` AND (e.ephemeral = 0 OR e.created_ms >= ?)`;
    params.push(q.ephemeralSinceMs);
  }
  if (q.eventTypes && q.eventTypes.length > 0) {
    // One parameter whatever the number of types: the Durable Object SQL API binds at most 100
    // parameters per statement, and a filter may name 256 types.
    sql += ` AND e.type IN (SELECT value FROM json_each(?))`;
    params.push(JSON.stringify(q.eventTypes));
  }
  sql += ` ORDER BY x.ofs LIMIT ?`;
  params.push(q.limit);
  return { sql, params };
}

/**
 * Rows per INSERT when a batch's rows go in together: 14 rows of 7 values stay under the 100
 * parameters a Durable Object statement binds. One statement per 14 rows instead of one per row
 * spares the driver's call, bind and reset per row (docs/performance.md "A batch's rows go in 14
 * to a statement").
 */
export const ROWS_PER_INSERT = 14;
const insertRows: string[] = [];
/** The INSERT of `n` rows (1 ≤ n ≤ ROWS_PER_INSERT), made once per n. */
function insertOf(n: number): string {
  return (insertRows[n] ??= `INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES ${Array.from({ length: n }, () => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`);
}

/** What a row's `idem` column holds: its key, except a copy's, which its claim holds (copy-claims.ts). */
function storedKey(row: EventRowInput): string | null {
  return isCopyKey(row.idempotencyKey) ? null : (row.idempotencyKey ?? null);
}

export class EventRows {
  private chunkSource: ChunkSource | undefined;
  /** The idempotency keys of these rows (event-keys.ts). */
  readonly keys: EventKeys;
  private readonly runs: CopyRuns;
  /** The bound each new row's offset must pass (event-index.ts). */
  private readonly offsets: MovedOffsets;
  constructor(
    private readonly storage: SqlStorage,
    private readonly readCache: ReadCache | undefined,
    /** With one, the keys' merge work runs in slices after each move (event-keys.ts). */
    timer?: Timer,
  ) {
    this.offsets = new MovedOffsets(storage);
    this.keys = new EventKeys(storage, this.offsets, timer);
    this.runs = new CopyRuns(storage);
  }

  /** What the rows of stream `sid` above offset `checkpoint` add to its checkpoint (StreamStore.find). */
  afterCheckpoint(sid: number, checkpoint: number): RowsAfterCheckpoint {
    return this.storage.exec<RowsAfterCheckpoint>(
      `SELECT max(x.ofs) AS head, coalesce(sum(1 - e.ephemeral), 0) AS durable, max(CASE WHEN e.ephemeral = 0 THEN x.ofs END) AS last
       FROM ${EVENTS_BY_OFFSET} WHERE x.sid = ? AND x.ofs > ?`,
      sid,
      checkpoint,
    )[0]!;
  }

  /** Inserts an event row; a keyed one as one of `insertAll`. */
  insert(sid: number, row: EventRowInput): void {
    this.insertAll(sid, [row]);
  }

  /**
   * Inserts the rows of one decision. Their keys must not be stored in the stream: the caller
   * looked them up; should one be stored all the same, this throws before writing that row (no
   * unique index holds keys any more, so this check is the safety net one was).
   */
  insertAll(sid: number, rows: readonly EventRowInput[]): void {
    const refused = this.writeUnlessStored(sid, rows);
    if (refused !== undefined) throw new Error(`storage: idempotency key ${JSON.stringify(refused.idempotencyKey)} is stored in stream ${sid} already`);
  }

  /**
   * Inserts the rows of one decision unless a key of theirs is stored in this stream (docs/
   * architecture.md "Storage"). A lone row costs a look in memory, one probe of event_keys and no
   * index entry; then false means nothing was written. Several rows (their offsets consecutive)
   * are written, then claim their keys in event_keys in one statement, where a batch's keys share
   * pages; then false (a key stored, given twice, or met by a stale entry) means rows may be
   * written, and the caller must undo them (a savepoint) and decide again with the keys looked
   * up, whose writes (insertAll) claim them one by one. An offset given twice fails as in insertAll.
   */
  insertIfNewKeys(sid: number, rows: readonly EventRowInput[]): boolean {
    if (rows.length === 1) return this.writeUnlessStored(sid, rows) === undefined;
    let keyed: string[] | undefined;
    let copies: ClaimsBuilder | undefined;
    // The map holds copy keys only from rows storage format 6 wrote: copies are looked for in it only then.
    const legacyCopies = this.keys.recentHoldsCopyKeys();
    for (const row of rows) {
      const key = row.idempotencyKey;
      if (key === undefined) continue;
      // A copy's key is claimed with its batch's as a range (copy-claims.ts), not in event_keys. A
      // copy stored as parts carries its key's head and source offset; others are cut from the key.
      const parts = row.stored?.parts;
      if (parts !== undefined) {
        if (legacyCopies && this.keys.recentOffset(sid, key) !== undefined) return false;
        (copies ??= new ClaimsBuilder()).add(parts.copyRun.keyHead, parts.source.copiedFrom[0].offset, row.offset);
        continue;
      }
      const copy = splitCopyKey(key);
      if ((copy === undefined || legacyCopies) && this.keys.recentOffset(sid, key) !== undefined) return false;
      if (copy !== undefined) (copies ??= new ClaimsBuilder()).add(copy.head, copy.offset, row.offset);
      else (keyed ??= []).push(key);
    }
    if (copies !== undefined && !this.keys.copies.claimIfFree(sid, copies.claims)) return false;
    this.writeClaimed(sid, rows);
    return keyed === undefined || this.keys.claimWritten(sid, rows[0]!.offset, rows[rows.length - 1]!.offset, keyed);
  }

  /** Writes the rows in order up to the first whose key is stored, and answers that row (undefined when all were written). */
  private writeUnlessStored(sid: number, rows: readonly EventRowInput[]): EventRowInput | undefined {
    const batch = rows.length > 1;
    let copies: ClaimsBuilder | undefined;
    for (const row of rows) {
      const key = row.idempotencyKey;
      const copy = key === undefined ? undefined : splitCopyKey(key);
      if (copy !== undefined) {
        // Looked up one by one (format 6 may have claimed it in event_keys), claimed as ranges below.
        if (this.keys.offsetOf(sid, key!, copy) !== undefined) return row;
        (copies ??= new ClaimsBuilder()).add(copy.head, copy.offset, row.offset);
        this.write(sid, row, true);
        continue;
      }
      if (key !== undefined && !(batch ? this.keys.claim(sid, key, row.offset) : this.keys.offsetOf(sid, key) === undefined)) return row;
      this.write(sid, row, batch);
    }
    if (copies !== undefined) this.keys.copies.claim(sid, copies.claims);
    return undefined;
  }

  /**
   * Writes rows whose keys are claimed (or absent), in order: ROWS_PER_INSERT to a statement, copies
   * stored as parts COPY_ROWS_PER_INSERT to one of their own.
   */
  private writeClaimed(sid: number, rows: readonly EventRowInput[]): void {
    let start = 0;
    while (start < rows.length) {
      const stored = rows[start]!.stored !== undefined;
      let end = start + 1;
      while (end < rows.length && (rows[end]!.stored !== undefined) === stored) end++;
      if (stored) this.writeCopies(sid, rows, start, end);
      else this.writePlain(sid, rows, start, end);
      start = end;
    }
  }

  private writePlain(sid: number, rows: readonly EventRowInput[], from: number, to: number): void {
    for (let start = from; start < to; start += ROWS_PER_INSERT) {
      const n = Math.min(ROWS_PER_INSERT, to - start);
      const params: (string | number | null)[] = new Array<string | number | null>(n * 7);
      for (let i = 0; i < n; i++) {
        const row = rows[start + i]!;
        this.offsets.check(sid, row.offset);
        const at = i * 7;
        params[at] = sid;
        params[at + 1] = row.offset;
        params[at + 2] = row.type;
        params[at + 3] = row.ephemeral ? 1 : 0;
        params[at + 4] = storedKey(row);
        params[at + 5] = row.createdMs;
        params[at + 6] = row.json;
      }
      this.storage.run(insertOf(n), ...params);
      this.keys.writtenClaimed(n);
    }
  }

  private writeCopies(sid: number, rows: readonly EventRowInput[], from: number, to: number): void {
    for (let i = from; i < to; i++) this.offsets.check(sid, rows[i]!.offset);
    this.runs.write(sid, rows, from, to);
    this.offsets.enter(sid, to - from, rows[from]!.offset, rows[to - 1]!.offset);
    this.keys.writtenClaimed(to - from);
  }

  private write(sid: number, row: EventRowInput, claimed: boolean): void {
    if (row.stored !== undefined) {
      this.writeCopies(sid, [row], 0, 1);
      return;
    }
    this.offsets.check(sid, row.offset);
    this.storage.run(insertOf(1), sid, row.offset, row.type, row.ephemeral ? 1 : 0, storedKey(row), row.createdMs, row.json);
    this.keys.written(sid, claimed ? undefined : row.idempotencyKey, row.offset);
  }

  byKey(sid: number, key: string): CommittedEvent | undefined {
    const offset = this.keys.offsetOf(sid, key);
    if (offset === undefined) return undefined;
    const row = this.storage.execRows(`SELECT ${EVENT_BODY} FROM ${EVENTS_WITH_RUNS} WHERE x.sid = ? AND x.ofs = ?`, sid, offset)[0];
    if (row === undefined) return undefined;
    const event = JSON.parse(row[0] as string) as CommittedEvent;
    // A copy's claim names its row by offset alone (copy-claims.ts): the row must carry the key.
    return event.idempotencyKey === key || splitCopyKey(key) === undefined ? event : undefined;
  }

  /**
   * The stored events of many idempotency keys at once (EventKeys.bodiesOf: a statement or two
   * for them all, where `byKey` per key is one or two each). Keys not stored are absent from the
   * answer.
   */
  byKeys(sid: number, keys: readonly string[]): Map<string, CommittedEvent> {
    const found = new Map<string, CommittedEvent>();
    for (const [key, body] of this.keys.bodiesOf(sid, keys)) found.set(key, JSON.parse(body) as CommittedEvent);
    return found;
  }

  /** Raw JSON bodies of a range, in offset order. */
  range(sid: number, q: RangeQuery): RawEvent[] {
    const { sql, params } = rangeSelect(sid, q, this.runs.hasParts(sid));
    // Rows as arrays: no object per row from the driver (reads of 500 events spent ~0.5 µs per
    // event on it; docs/performance.md "Read rows as arrays").
    const rows = this.storage.execRows(sql, ...params);
    const out: RawEvent[] = new Array<RawEvent>(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = { offset: rows[i]![0] as number, json: rows[i]![1] as string };
    return out;
  }

  /**
   * The same range as `range`, joined by SQLite into one text: the bodies in offset order
   * separated by commas, with their count and first and last offsets. A read page is this text
   * inside its brackets; building it in SQL spares one driver string per event and the join of
   * them (docs/architecture.md "Read pages come joined from SQL").
   *
   * The order: the inner select orders by offset and limits, so SQLite produces its rows in that
   * order (a LIMIT keeps a subquery's ORDER BY), and group_concat appends them as they come. An
   * aggregate `ORDER BY` would say so in SQL too, but it sorts the page again (about as slow as
   * the rows it replaces); the storage conformance checks hold the order on every adapter.
   */
  rangeJoined(sid: number, q: RangeQuery): JoinedRange {
    const cached = this.readCache?.page(sid, q, (this.chunkSource ??= sqlChunkSource(this.storage, (s) => this.runs.hasParts(s))));
    if (cached !== undefined) return cached;
    const { sql, params } = rangeSelect(sid, q, this.runs.hasParts(sid));
    const row = this.storage.execRows(`SELECT count(*), min(ofs), max(ofs), group_concat(body, ',') FROM (${sql})`, ...params)[0]!;
    const count = row[0] as number;
    if (count === 0) return { count: 0, first: 0, last: 0, json: '' };
    return { count, first: row[1] as number, last: row[2] as number, json: row[3] as string };
  }

  /** Deletes every row of stream `sid`, and its moved keys (the caller forgets it in the read cache). */
  deleteAll(sid: number): void {
    this.storage.run(`DELETE FROM events WHERE rowid IN (SELECT rid FROM event_index WHERE sid = ?)`, sid);
    this.offsets.forget(sid);
    this.runs.deleteStream(sid);
    this.keys.deleteStream(sid);
    this.keys.rowsDeleted();
  }

  /** Deletes up to `maxRows` rows of stream `sid`, its moved keys first; answers how many it deleted. */
  deleteSome(sid: number, maxRows: number): number {
    let removed = this.keys.deleteStream(sid, maxRows);
    if (removed < maxRows) {
      const rows = this.storage.run(`DELETE FROM events WHERE rowid IN (SELECT rid FROM event_index WHERE sid = ? LIMIT ?)`, sid, maxRows - removed);
      this.offsets.forget(sid);
      // The runs go with the last rows that name them.
      if (rows < maxRows - removed) this.runs.deleteStream(sid);
      removed += rows;
      this.keys.rowsDeleted();
    }
    return removed;
  }

  /** The UTF-8 bytes of the stored JSON of the events of stream `streamId` in (afterOffset, throughOffset]. */
  storedBytes(streamId: string, afterOffset: number, throughOffset: number): number {
    return this.storage.exec<{ bytes: number }>(
      // length() of a BLOB counts bytes: the stored JSON's UTF-8 bytes, as the engine counts them.
      `SELECT coalesce(sum(length(CAST(${EVENT_BODY} AS BLOB))), 0) AS bytes FROM ${EVENTS_WITH_RUNS} WHERE x.sid = (SELECT sid FROM streams WHERE stream_id = ?) AND x.ofs > ? AND x.ofs <= ?`,
      streamId,
      afterOffset,
      throughOffset,
    )[0]!.bytes;
  }

  /** Rows of the streams whose streams row is in `project`. */
  countInProject(project: string): number {
    return this.storage.exec<{ n: number }>(
      `SELECT (SELECT count(*) FROM event_offsets WHERE sid IN (SELECT sid FROM streams WHERE project = ?)) +
              (SELECT count(*) FROM tail_offsets WHERE sid IN (SELECT sid FROM streams WHERE project = ?)) AS n`,
      project,
      project,
    )[0]!.n;
  }

  /**
   * Drops ephemeral events older than `beforeMs`, and beyond the newest `keep`, never above
   * `checkpoint`: the caller passes the head it has just saved with `StreamStore.saveHead` (in the
   * same transaction), because the head of a stream is derived from its highest event row above
   * the checkpoint and offsets are never reused. Answers how many it dropped.
   */
  pruneEphemeral(sid: number, beforeMs: number, keep: number, checkpoint: number): number {
    let removed = this.storage.run(`DELETE FROM events WHERE sid = ? AND ephemeral = 1 AND created_ms < ? AND ofs <= ?`, sid, beforeMs, checkpoint);
    const count = this.storage.exec<{ n: number }>(`SELECT count(*) AS n FROM events WHERE sid = ? AND ephemeral = 1`, sid)[0]!.n;
    if (count > keep) {
      removed += this.storage.run(
        `DELETE FROM events WHERE sid = ? AND ephemeral = 1 AND ofs <= ? AND ofs IN
           (SELECT ofs FROM events WHERE sid = ? AND ephemeral = 1 ORDER BY ofs LIMIT ?)`,
        sid,
        checkpoint,
        sid,
        count - keep,
      );
    }
    if (removed > 0) {
      this.readCache?.forget(sid);
      this.offsets.forget(sid);
      this.keys.rowsDeleted();
    }
    return removed;
  }
}
