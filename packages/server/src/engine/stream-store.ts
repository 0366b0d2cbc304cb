/**
 * Row access of the engine: every SQL statement the stream actor runs, over the storage port.
 * Holds no state of its own; one instance serves every stream of a database.
 */
import type { CommittedEvent, CoreState, StreamListEntry } from '@rivulet/contract';
import type { SqlStorage } from '../ports/storage.js';
import { FORMAT_VERSION } from './schema.js';

export interface StreamRow {
  sid: number;
  stream_id: string;
  created_at: string;
  head: number;
  event_count: number;
  max_offset: number;
  /** Core state JSON; its eventCount and maxOffset may lag: the columns above hold them (stateOf). */
  state: string;
}

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

/** A committed event as stored: its offset and its JSON text. */
export interface RawEvent {
  offset: number;
  json: string;
}

const projectKey = (projectId: string | null): string => projectId ?? '';

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
}

export class StreamStore {
  constructor(
    readonly storage: SqlStorage,
    private readonly options: StreamStoreOptions = {},
  ) {}

  find(projectId: string | null, path: string): StreamRow | undefined {
    return this.storage.exec<StreamRow>(
      `SELECT sid, stream_id, created_at, head, event_count, max_offset, state FROM streams WHERE project = ? AND path = ?`,
      projectKey(projectId),
      path,
    )[0];
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
   * Saves the head and the state. Most appends change only the state's counters: then the state
   * text is not rewritten (stateJson null), which keeps the common append to one small row update.
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
      `INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      sid,
      row.offset,
      row.type,
      row.ephemeral ? 1 : 0,
      row.idempotencyKey ?? null,
      row.createdMs,
      row.json,
    );
  }

  findByIdempotencyKey(sid: number, key: string): CommittedEvent | undefined {
    const row = this.storage.exec<{ body: string }>(`SELECT body FROM events WHERE sid = ? AND idem = ?`, sid, key)[0];
    return row ? (JSON.parse(row.body) as CommittedEvent) : undefined;
  }

  /** Raw JSON bodies of a range, in offset order. */
  readRange(sid: number, q: RangeQuery): RawEvent[] {
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
    return this.storage.exec<{ ofs: number; body: string }>(sql, ...params).map((r) => ({ offset: r.ofs, json: r.body }));
  }

  /**
   * Erases one stream lifetime. With deferred erasure its events stay until `purgeErased` deletes
   * them; the streams row stays too, moved out of every project (so the path is free at once and
   * nothing lists or loads it), keeping its sid taken so that no new lifetime can see them.
   */
  erase(sid: number): void {
    this.storage.run(`DELETE FROM subscription_runtime WHERE sid = ?`, sid);
    if (this.options.onDeferredErase) {
      this.storage.run(`UPDATE streams SET project = ?, path = ? WHERE sid = ?`, ERASED_PROJECT, `sid:${sid}`, sid);
      this.options.onDeferredErase();
      return;
    }
    this.storage.run(`DELETE FROM events WHERE sid = ?`, sid);
    this.storage.run(`DELETE FROM streams WHERE sid = ?`, sid);
  }

  /**
   * Deletes up to `maxRows` events of destroyed lifetimes (deferred erasure), and the streams row of
   * a lifetime once its last event is gone, in one transaction. Answers whether erased lifetimes
   * remain (call again).
   */
  purgeErased(maxRows: number): boolean {
    const row = this.storage.exec<{ sid: number }>(`SELECT sid FROM streams WHERE project = ? LIMIT 1`, ERASED_PROJECT)[0];
    if (!row) return false;
    this.storage.transaction(
      () => {
        const removed = this.storage.run(`DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE sid = ? LIMIT ?)`, row.sid, maxRows);
        if (removed < maxRows) this.storage.run(`DELETE FROM streams WHERE sid = ?`, row.sid);
      },
      { durable: false },
    );
    return true;
  }

  /** Drops ephemeral events older than `beforeMs`, and beyond the newest `keep` (offsets are never reused). */
  pruneEphemeral(sid: number, beforeMs: number, keep: number): number {
    let removed = this.storage.run(`DELETE FROM events WHERE sid = ? AND ephemeral = 1 AND created_ms < ?`, sid, beforeMs);
    const count = this.storage.exec<{ n: number }>(
      `SELECT count(*) AS n FROM events WHERE sid = ? AND ephemeral = 1`,
      sid,
    )[0]!.n;
    if (count > keep) {
      removed += this.storage.run(
        `DELETE FROM events WHERE sid = ? AND ephemeral = 1 AND ofs IN
           (SELECT ofs FROM events WHERE sid = ? AND ephemeral = 1 ORDER BY ofs LIMIT ?)`,
        sid,
        sid,
        count - keep,
      );
    }
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
        `SELECT s.project, s.path, r.key, s.head - r.cursor AS lag FROM subscription_runtime r JOIN streams s ON s.sid = r.sid
         WHERE s.head > r.cursor ORDER BY lag DESC LIMIT ?`,
        limit,
      )
      .map((r) => ({ projectId: r.project === '' ? null : r.project, path: r.path, key: r.key, lag: r.lag }));
  }

  list(projectId: string | null, prefix: string, after: string | undefined, limit: number): StreamListEntry[] {
    const project = projectKey(projectId);
    const rows =
      prefix === '/'
        ? this.storage.exec<{ path: string; stream_id: string; created_at: string; head: number }>(
            `SELECT path, stream_id, created_at, head FROM streams WHERE project = ? AND path > ? ORDER BY path LIMIT ?`,
            project,
            after ?? '',
            limit,
          )
        : this.storage.exec<{ path: string; stream_id: string; created_at: string; head: number }>(
            // Everything strictly below "prefix/" sorts in ["prefix/", "prefix0"): "0" follows "/".
            `SELECT path, stream_id, created_at, head FROM streams
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
