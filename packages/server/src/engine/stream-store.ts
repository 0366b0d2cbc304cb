/**
 * Row access of the engine: every SQL statement the stream actor runs, over the storage port; the
 * events table's own statements are in event-rows.ts, which this hands them to (and the read
 * cache's chunk loads in read-cache.ts). Holds no state; one instance serves every stream of a database.
 */
import type { CoreState, StreamListEntry } from '@rivulet/contract';
import type { SqlStorage } from '../ports/storage.js';
import type { Timer } from '../ports/timer.js';
import { derivedHeadSql } from './event-index.js';
import { EventRows } from './event-rows.js';
import type { ReadCache } from './read-cache.js';
import { FORMAT_VERSION } from './schema.js';

export type { EventRowInput, JoinedRange, RangeQuery, RawEvent } from './event-rows.js';

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

const projectKey = (projectId: string | null): string => projectId ?? '';

/** The head as stored, for statements over many streams (`s` is the streams row; event-rows.ts). */
const DERIVED_HEAD = derivedHeadSql('s');

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
  /** With one, the idempotency keys' merge work runs in slices after each move, a slice per turn (event-keys.ts). */
  timer?: Timer;
}

export class StreamStore {
  readonly checkpointEvery: number;
  /** The events table's statements. */
  readonly events: EventRows;
  /** The streams' subscription runtimes holding progress not written yet (readers across streams flush them first). */
  readonly unpersisted = new Set<{ persistDirty(): void }>();

  constructor(
    readonly storage: SqlStorage,
    private readonly options: StreamStoreOptions = {},
  ) {
    this.checkpointEvery = options.checkpointEvery ?? CHECKPOINT_EVERY;
    this.events = new EventRows(storage, options.readCache, options.timer);
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
    const after = this.events.afterCheckpoint(row.sid, row.head);
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
    this.events.deleteAll(sid);
    this.storage.run(`DELETE FROM streams WHERE sid = ?`, sid);
  }

  /** Event rows of destroyed lifetimes not purged yet. */
  erasedEventCount(): number {
    return this.events.countInProject(ERASED_PROJECT);
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
        const removed = this.events.deleteSome(row.sid, maxRows);
        if (removed >= maxRows) return;
        this.storage.run(`DELETE FROM streams WHERE sid = ?`, row.sid);
        this.options.readCache?.forget(row.sid);
      },
      { durable: false },
    );
    return true;
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
