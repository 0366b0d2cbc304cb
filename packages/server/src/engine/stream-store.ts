/**
 * Row access of the engine: every SQL statement the stream actor runs (but the read cache's, in
 * read-cache.ts), over the storage port. Holds no state; one instance serves every stream of a database.
 */
import type { CommittedEvent, CoreState, StreamListEntry } from '@rivulet/contract';
import type { SqlStorage } from '../ports/storage.js';
import { sqlChunkSource, type ChunkSource, type ReadCache } from './read-cache.js';
import { FORMAT_VERSION } from './schema.js';

/** A stream as loaded: the streams row's checkpoint with the event rows after it added in (`find`). */
export interface StreamRow {
  sid: number;
  stream_id: string;
  created_at: string;
  /** The stream's head: the highest offset it ever gave (ephemeral events included). */
  head: number;
  event_count: number;
  max_offset: number;
  /** The head stored in the streams row (the checkpoint); `head` may be ahead of it (see `find`). */
  checkpoint: number;
  /** Core state JSON; its eventCount and maxOffset may lag: the fields above hold them (stateOf). */
  state: string;
}

/**
 * How far the streams row's checkpoint may fall behind the head before an append writes it again
 * (appends that change only the counters write no streams row below this). Bounds the event rows
 * that loading a stream reads to derive its head and counters.
 */
export const CHECKPOINT_EVERY = 1000;

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
}

/**
 * The head as stored, for statements over many streams (`s` is the streams row): the checkpoint or
 * the highest event offset, whichever is higher (one index lookup per stream).
 */
const DERIVED_HEAD = `max(s.head, coalesce((SELECT max(e.ofs) FROM events e WHERE e.sid = s.sid), 0))`;

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

/** The select of a range's rows (offset, body) in offset order, shared by both range reads. */
function rangeSelect(sid: number, q: RangeQuery): { sql: string; params: (string | number)[] } {
  const params: (string | number)[] = [sid, q.afterOffset, q.beforeOffset];
  let sql = `SELECT ofs, body FROM events WHERE sid = ? AND ofs > ? AND ofs < ?`;
  if (!q.includeEphemeral) sql += ` AND ephemeral = 0`;
  else if (q.ephemeralSinceMs !== undefined) {
    sql += ` AND (ephemeral = 0 OR created_ms >= ?)`;
    params.push(q.ephemeralSinceMs);
  }
  if (q.eventTypes && q.eventTypes.length > 0) {
    // One parameter whatever the number of types: the Durable Object SQL API binds at most 100
    // parameters per statement, and a filter may name 256 types.
    sql += ` AND type IN (SELECT value FROM json_each(?))`;
    params.push(JSON.stringify(q.eventTypes));
  }
  sql += ` ORDER BY ofs LIMIT ?`;
  params.push(q.limit);
  return { sql, params };
}

const projectKey = (projectId: string | null): string => projectId ?? '';

/** One event row (insertEvent), and the same unless its key is stored (insertEventIfNewKey). */
const INSERT_EVENT = `INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (?, ?, ?, ?, ?, ?, ?)`;
const INSERT_EVENT_IF_NEW_KEY = `${INSERT_EVENT} ON CONFLICT (idem, sid) WHERE idem IS NOT NULL DO NOTHING`;

/** The project of a streams row whose lifetime was destroyed and whose events are still being purged. */
export const ERASED_PROJECT = '\u0000erased';

export interface StreamStoreOptions {
  /**
   * Erase a destroyed lifetime's events later, in chunks (`purgeErased`), rather than inside the
   * destroy's transaction: where one database holds every stream (the Node host), deleting millions
   * of rows at once would stop every other stream for seconds. Called (inside the destroy's
   * transaction) each time such work is left; the host schedules the purge.
   */
  onDeferredErase?(): void;
  /** CHECKPOINT_EVERY unless given (tests use small values to load through derivation often). */
  checkpointEvery?: number;
  /** Joined pages read again come from it (the Node host's); deleting a readable stream's rows forgets its chunks. */
  readCache?: ReadCache;
}

export class StreamStore {
  readonly checkpointEvery: number;
  private chunkSource: ChunkSource | undefined;
  /** The streams' subscription runtimes holding progress not written yet (readers across streams flush them first). */
  readonly unpersisted = new Set<{ persistDirty(): void }>();

  constructor(
    readonly storage: SqlStorage,
    private readonly options: StreamStoreOptions = {},
  ) {
    this.checkpointEvery = options.checkpointEvery ?? CHECKPOINT_EVERY;
  }

  /**
   * Loads a stream: the checkpoint of its streams row plus the event rows after the checkpoint's
   * head (fewer than `checkpointEvery`). Offsets are dense and no event above the checkpoint is
   * ever deleted, so the highest offset after it is the head; eventCount and maxOffset count only
   * events that are not ephemeral, as the reducer does.
   */
  find(projectId: string | null, path: string): StreamRow | undefined {
    const row = this.storage.exec<Omit<StreamRow, 'checkpoint'>>(
      `SELECT sid, stream_id, created_at, head, event_count, max_offset, state FROM streams WHERE project = ? AND path = ?`,
      projectKey(projectId),
      path,
    )[0];
    if (!row) return undefined;
    const after = this.storage.exec<{ head: number | null; durable: number; last: number | null }>(
      `SELECT max(ofs) AS head, coalesce(sum(1 - ephemeral), 0) AS durable, max(CASE WHEN ephemeral = 0 THEN ofs END) AS last
       FROM events WHERE sid = ? AND ofs > ?`,
      row.sid,
      row.head,
    )[0]!;
    const loaded: StreamRow = { ...row, checkpoint: row.head };
    if (after.head !== null) {
      loaded.head = after.head;
      loaded.event_count += after.durable;
      if (after.last !== null) loaded.max_offset = after.last;
    }
    return loaded;
  }

  create(projectId: string | null, path: string, streamId: string, createdAt: string): number {
    const row = this.storage.exec<{ sid: number }>(
      `INSERT INTO streams (project, path, stream_id, created_at, head, event_count, max_offset, state, format)
       VALUES (?, ?, ?, ?, 0, 0, 0, '', ?) RETURNING sid`,
      projectKey(projectId),
      path,
      streamId,
      createdAt,
      FORMAT_VERSION,
    )[0]!;
    return row.sid;
  }

  /** The core state of a row, with its counters from their columns. */
  stateOf(row: StreamRow): CoreState {
    const state = JSON.parse(row.state) as CoreState;
    state.eventCount = row.event_count;
    state.maxOffset = row.max_offset;
    return state;
  }

  /**
   * Writes the checkpoint (head and counters), and the state when it changed (stateJson not null).
   * Appends that change only the counters call it once the checkpoint is `checkpointEvery` behind,
   * and before anything deletes events of the stream.
   */
  saveHead(sid: number, head: number, state: CoreState, stateJson: string | null): void {
    if (stateJson === null) {
      this.storage.run(
        `UPDATE streams SET head = ?, event_count = ?, max_offset = ? WHERE sid = ?`,
        head,
        state.eventCount,
        state.maxOffset,
        sid,
      );
    } else {
      this.storage.run(
        `UPDATE streams SET head = ?, event_count = ?, max_offset = ?, state = ? WHERE sid = ?`,
        head,
        state.eventCount,
        state.maxOffset,
        stateJson,
        sid,
      );
    }
  }

  insertEvent(sid: number, row: EventRowInput): void {
    this.storage.run(
      INSERT_EVENT,
      sid,
      row.offset,
      row.type,
      row.ephemeral ? 1 : 0,
      row.idempotencyKey ?? null,
      row.createdMs,
      row.json,
    );
  }

  /**
   * Inserts a keyed event unless its key is stored in this stream (then answers false, having
   * written nothing): a fresh key costs this one statement, no lookup first (docs/architecture.md
   * "Storage"). Only the key's conflict is absorbed: an offset given twice fails as in insertEvent.
   */
  insertEventIfNewKey(sid: number, row: EventRowInput & { idempotencyKey: string }): boolean {
    return this.storage.run(INSERT_EVENT_IF_NEW_KEY, sid, row.offset, row.type, row.ephemeral ? 1 : 0, row.idempotencyKey, row.createdMs, row.json) === 1;
  }

  findByIdempotencyKey(sid: number, key: string): CommittedEvent | undefined {
    const row = this.storage.exec<{ body: string }>(`SELECT body FROM events WHERE sid = ? AND idem = ?`, sid, key)[0];
    return row ? (JSON.parse(row.body) as CommittedEvent) : undefined;
  }

  /**
   * The stored events of many idempotency keys at once: one statement, each key one probe of the
   * (idem, sid) index, where `findByIdempotencyKey` per key is one statement each. Keys not stored
   * are absent from the answer.
   */
  findByIdempotencyKeys(sid: number, keys: readonly string[]): Map<string, CommittedEvent> {
    const found = new Map<string, CommittedEvent>();
    if (keys.length === 0) return found;
    // One parameter for all keys (the Durable Object SQL API binds at most 100 per statement).
    const rows = this.storage.execRows(`SELECT idem, body FROM events WHERE idem IN (SELECT value FROM json_each(?)) AND sid = ?`, JSON.stringify(keys), sid);
    for (const row of rows) found.set(row[0] as string, JSON.parse(row[1] as string) as CommittedEvent);
    return found;
  }

  /** Raw JSON bodies of a range, in offset order. */
  readRange(sid: number, q: RangeQuery): RawEvent[] {
    const { sql, params } = rangeSelect(sid, q);
    // Rows as arrays: no object per row from the driver (reads of 500 events spent ~0.5 µs per
    // event on it; bench/README).
    const rows = this.storage.execRows(sql, ...params);
    const out: RawEvent[] = new Array<RawEvent>(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = { offset: rows[i]![0] as number, json: rows[i]![1] as string };
    return out;
  }

  /**
   * The same range as `readRange`, joined by SQLite into one text: the bodies in offset order
   * separated by commas, with their count and first and last offsets. A read page is this text
   * inside its brackets; building it in SQL spares one driver string per event and the join of
   * them (bench/README "Levers: reads and copy drain").
   *
   * The order: the inner select orders by offset and limits, so SQLite produces its rows in that
   * order (a LIMIT keeps a subquery's ORDER BY), and group_concat appends them as they come. An
   * aggregate `ORDER BY` would say so in SQL too, but it sorts the page again (about as slow as
   * the rows it replaces); the storage conformance checks hold the order on every adapter.
   */
  readRangeJoined(sid: number, q: RangeQuery): JoinedRange {
    const cached = this.options.readCache?.page(sid, q, (this.chunkSource ??= sqlChunkSource(this.storage)));
    if (cached !== undefined) return cached;
    const { sql, params } = rangeSelect(sid, q);
    const row = this.storage.execRows(`SELECT count(*), min(ofs), max(ofs), group_concat(body, ',') FROM (${sql})`, ...params)[0]!;
    const count = row[0] as number;
    if (count === 0) return { count: 0, first: 0, last: 0, json: '' };
    return { count, first: row[1] as number, last: row[2] as number, json: row[3] as string };
  }

  /**
   * Erases one stream lifetime. With deferred erasure its events stay until `purgeErased` deletes
   * them; the streams row stays too, moved out of every project (so the path is free at once and
   * nothing lists or loads it), keeping its sid taken so that no new lifetime can see them.
   */
  erase(sid: number): void {
    this.options.readCache?.forget(sid);
    this.storage.run(`DELETE FROM subscription_runtime WHERE sid = ?`, sid);
    this.storage.run(`DELETE FROM subscription_index WHERE sid = ?`, sid);
    this.storage.run(`DELETE FROM delivery_attempts WHERE sid = ?`, sid);
    if (this.options.onDeferredErase) {
      this.storage.run(`UPDATE streams SET project = ?, path = ? WHERE sid = ?`, ERASED_PROJECT, `sid:${sid}`, sid);
      this.options.onDeferredErase();
      return;
    }
    this.storage.run(`DELETE FROM events WHERE sid = ?`, sid);
    this.storage.run(`DELETE FROM streams WHERE sid = ?`, sid);
  }

  /** Event rows of destroyed lifetimes not purged yet. */
  erasedEventCount(): number {
    return this.storage.exec<{ n: number }>(`SELECT count(*) AS n FROM events WHERE sid IN (SELECT sid FROM streams WHERE project = ?)`, ERASED_PROJECT)[0]!.n;
  }

  /**
   * Deletes up to `maxRows` events of destroyed lifetimes (deferred erasure), and the streams row of
   * a lifetime once its last event is gone, in one transaction; its sid is then free for the next
   * stream, so the read cache forgets it too. Answers whether erased lifetimes remain (call again).
   */
  purgeErased(maxRows: number): boolean {
    const row = this.storage.exec<{ sid: number }>(`SELECT sid FROM streams WHERE project = ? LIMIT 1`, ERASED_PROJECT)[0];
    if (!row) return false;
    this.storage.transaction(
      () => {
        const removed = this.storage.run(`DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE sid = ? LIMIT ?)`, row.sid, maxRows);
        if (removed >= maxRows) return;
        this.storage.run(`DELETE FROM streams WHERE sid = ?`, row.sid);
        this.options.readCache?.forget(row.sid);
      },
      { durable: false },
    );
    return true;
  }

  /**
   * Drops ephemeral events older than `beforeMs`, and beyond the newest `keep`, never above
   * `checkpoint`: the caller passes the head it has just saved with `saveHead` (in the same
   * transaction), because the head of a stream is derived from its highest event row above the
   * checkpoint and offsets are never reused.
   */
  pruneEphemeral(sid: number, beforeMs: number, keep: number, checkpoint: number): number {
    let removed = this.storage.run(
      `DELETE FROM events WHERE sid = ? AND ephemeral = 1 AND created_ms < ? AND ofs <= ?`,
      sid,
      beforeMs,
      checkpoint,
    );
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
    if (removed > 0) this.options.readCache?.forget(sid);
    return removed;
  }

  /** Streams with subscription rows (the Node host pokes them at start, so owed work resumes). */
  streamsWithSubscriptions(): Array<{ projectId: string | null; path: string }> {
    return this.storage
      .exec<{ project: string; path: string }>(
        `SELECT project, path FROM streams WHERE sid IN (SELECT DISTINCT sid FROM subscription_runtime)`,
      )
      .map((r) => ({ projectId: r.project === '' ? null : r.project, path: r.path }));
  }

  countHaltedSubscriptions(): number {
    return this.storage.exec<{ n: number }>(`SELECT count(*) AS n FROM subscription_runtime WHERE halted = 1`)[0]!.n;
  }

  /** The subscriptions furthest behind their source head. */
  largestLags(limit: number): Array<{ projectId: string | null; path: string; key: string; lag: number }> {
    return this.storage
      .exec<{ project: string; path: string; key: string; lag: number }>(
        `SELECT project, path, key, lag FROM
           (SELECT s.project, s.path, r.key, ${DERIVED_HEAD} - r.cursor AS lag FROM subscription_runtime r JOIN streams s ON s.sid = r.sid)
         WHERE lag > 0 ORDER BY lag DESC LIMIT ?`,
        limit,
      )
      .map((r) => ({ projectId: r.project === '' ? null : r.project, path: r.path, key: r.key, lag: r.lag }));
  }

  list(projectId: string | null, prefix: string, after: string | undefined, limit: number): StreamListEntry[] {
    const project = projectKey(projectId);
    const rows =
      prefix === '/'
        ? this.storage.exec<{ path: string; stream_id: string; created_at: string; head: number }>(
            `SELECT path, stream_id, created_at, ${DERIVED_HEAD} AS head FROM streams s WHERE project = ? AND path > ? ORDER BY path LIMIT ?`,
            project,
            after ?? '',
            limit,
          )
        : this.storage.exec<{ path: string; stream_id: string; created_at: string; head: number }>(
            // Everything strictly below "prefix/" sorts in ["prefix/", "prefix0"): "0" follows "/".
            `SELECT path, stream_id, created_at, ${DERIVED_HEAD} AS head FROM streams s
             WHERE project = ? AND (path = ? OR (path >= ? AND path < ?)) AND path > ? ORDER BY path LIMIT ?`,
            project,
            prefix,
            `${prefix}/`,
            `${prefix}0`,
            after ?? '',
            limit,
          );
    return rows.map((r) => ({ path: r.path, streamId: r.stream_id, createdAt: r.created_at, maxOffset: r.head }));
  }
}
