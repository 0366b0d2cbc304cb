/**
 * The runtime rows of one stream's subscriptions: an in-memory mirror of its subscription_runtime
 * rows, written through to storage. Repair from core state runs inside the same transaction as the
 * commit that changed the subscriptions (so a committed cursor-set can never be lost, and rows never
 * disagree with state), and again at load.
 */
import type { CoreState, DeliveryAttempt, LatencyStats, SubscriptionRuntimeState } from '@rivulet/contract';
import { repairRow, type SubscriptionRow } from '../core/repair.js';
import type { SqlStorage } from '../ports/storage.js';
import type { CancelTimer, Timer } from '../ports/timer.js';
import { DeliveryAttempts } from './delivery-attempts.js';
import { deleteIndexRow, indexFingerprint, indexFingerprints, writeIndexRow } from './subscription-index.js';

interface RowRecord {
  key: string;
  run_configured_at: number;
  run_cursor_set_at: number;
  cursor: number;
  attempt: number;
  next_attempt_at: number | null;
  inflight_deadline_at: number | null;
  last_error: string | null;
  isolate: number;
  confirmations: number;
  confirm_offset: number | null;
  skips_without_success: number;
  halted: number;
  bytes_sent: number;
  stats: string | null;
}

function fromRecord(r: RowRecord): SubscriptionRow {
  return {
    key: r.key,
    runConfiguredAt: r.run_configured_at,
    runCursorSetAt: r.run_cursor_set_at,
    cursor: r.cursor,
    attempt: r.attempt,
    nextAttemptAt: r.next_attempt_at,
    inflightDeadlineAt: r.inflight_deadline_at,
    lastError: r.last_error,
    isolate: r.isolate === 1,
    confirmations: r.confirmations,
    confirmOffset: r.confirm_offset,
    skipsWithoutSuccess: r.skips_without_success,
    halted: r.halted === 1,
    bytesSent: r.bytes_sent,
    stats: r.stats,
  };
}

interface StatsRecord {
  completion: number[];
  duration: number[];
  counts: [number, number];
}

const RECENT = 256;

function summarize(values: number[], count: number): LatencyStats | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return {
    count,
    min: sorted[0]!,
    max: sorted[sorted.length - 1]!,
    mean: Math.round((values.reduce((a, b) => a + b, 0) / values.length) * 100) / 100,
    p50: at(0.5),
    p99: at(0.99),
  };
}

/** A cursor moved past non-matching events is persisted at the latest after this many offsets. */
const QUIET_PERSIST_EVERY = 1000;
/** Progress kept in memory only is persisted at the latest this long after it changed. */
const SOON_MS = 250;

/**
 * One of these per loaded stream, and most streams are quiet: beyond the rows themselves it holds
 * only what is in flight, created on first use and dropped once written (docs/performance.md
 * "Per-stream state made on first use").
 */
export class SubscriptionRuntime {
  private readonly rows = new Map<string, SubscriptionRow>();
  /**
   * Rows changed in memory only (advanceQuietly, update), with the cursor each has in storage,
   * which may trail the in-memory one; undefined while every row is as stored.
   */
  private unwritten: Map<string, number> | undefined;
  /** Latency samples per key, parsed once; persisted with the row by persistDirty. */
  private measurements: Map<string, StatsRecord> | undefined;
  private statsDirty: Set<string> | undefined;
  private cancelFlush: CancelTimer | undefined;
  private attemptLog: DeliveryAttempts | undefined;

  constructor(
    private readonly storage: SqlStorage,
    private sid: number | null,
    private readonly timer: Timer,
    private readonly attemptsKept = 50,
    /** Every runtime of the database with progress held in memory only (StreamStore.unpersisted). */
    private readonly unpersisted?: Set<{ persistDirty(): void }>,
  ) {
    if (sid !== null) {
      for (const r of storage.exec<RowRecord>(
        `SELECT key, run_configured_at, run_cursor_set_at, cursor, attempt, next_attempt_at, inflight_deadline_at,
                last_error, isolate, confirmations, confirm_offset, skips_without_success, halted, bytes_sent, stats
         FROM subscription_runtime WHERE sid = ?`,
        sid,
      )) {
        this.rows.set(r.key, fromRecord(r));
      }
    }
  }

  /** The attempt history (protocol §22), written with the progress. */
  get attempts(): DeliveryAttempts {
    return (this.attemptLog ??= new DeliveryAttempts(this.storage, this.attemptsKept));
  }

  /** The cursor of `key` in storage. */
  private storedCursor(key: string): number {
    return this.unwritten?.get(key) ?? this.rows.get(key)?.cursor ?? 0;
  }

  /** Called before `key`'s row changes in memory only: remembers its stored cursor. */
  private keepUnwritten(key: string): void {
    const unwritten = (this.unwritten ??= new Map());
    if (!unwritten.has(key)) unwritten.set(key, this.rows.get(key)?.cursor ?? 0);
    this.unpersisted?.add(this);
  }

  get(key: string): SubscriptionRow | undefined {
    return this.rows.get(key);
  }

  all(): IterableIterator<SubscriptionRow> {
    return this.rows.values();
  }

  get size(): number {
    return this.rows.size;
  }

  /** Brings rows in line with core state; call inside the commit's transaction. */
  repair(state: CoreState | null, sid: number): void {
    this.sid = sid;
    const byKey = state?.subscriptions.outbound.byKey ?? {};
    for (const key of [...this.rows.keys()]) {
      if (!byKey[key]) {
        this.storage.run(`DELETE FROM subscription_runtime WHERE sid = ? AND key = ?`, sid, key);
        this.attempts.remove(sid, key);
        this.rows.delete(key);
        this.unwritten?.delete(key);
        this.statsDirty?.delete(key);
        this.measurements?.delete(key);
      }
    }
    // What the subscription index holds per key, as fingerprints (subscription-index.ts): read
    // here, by the commits that change subscriptions and at load, rather than kept per stream.
    const indexed = indexFingerprints(this.storage, sid);
    for (const key of indexed.keys()) if (!byKey[key]) deleteIndexRow(this.storage, sid, key);
    for (const [key, entry] of Object.entries(byKey)) {
      const row = this.rows.get(key);
      const repaired = repairRow(key, entry, row);
      if (repaired !== row) this.write(repaired);
      if (indexed.get(key) !== indexFingerprint(entry)) writeIndexRow(this.storage, sid, key, entry);
    }
  }

  /** Keeps one delivery attempt (protocol §22); written with the progress, within SOON_MS. */
  recordAttempt(key: string, attempt: DeliveryAttempt): void {
    this.attempts.record(key, attempt);
    this.unpersisted?.add(this);
    this.persistSoon();
  }

  /**
   * Writes a changed row (the caller provides the transaction, or accepts an autocommit). An
   * existing row is updated in place (an upsert, not INSERT OR REPLACE, which deletes and
   * re-inserts it under a new rowid and so touches the key index too): on the webhook hot path this
   * is the in-flight watchdog written before every call.
   */
  write(row: SubscriptionRow): void {
    if (this.sid === null) return;
    this.storage.run(
      `INSERT INTO subscription_runtime
         (sid, key, run_configured_at, run_cursor_set_at, cursor, attempt, next_attempt_at, inflight_deadline_at,
          last_error, isolate, confirmations, confirm_offset, skips_without_success, halted, bytes_sent, stats)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (sid, key) DO UPDATE SET
         run_configured_at = excluded.run_configured_at, run_cursor_set_at = excluded.run_cursor_set_at,
         cursor = excluded.cursor, attempt = excluded.attempt, next_attempt_at = excluded.next_attempt_at,
         inflight_deadline_at = excluded.inflight_deadline_at, last_error = excluded.last_error,
         isolate = excluded.isolate, confirmations = excluded.confirmations, confirm_offset = excluded.confirm_offset,
         skips_without_success = excluded.skips_without_success, halted = excluded.halted,
         bytes_sent = excluded.bytes_sent, stats = excluded.stats`,
      this.sid,
      row.key,
      row.runConfiguredAt,
      row.runCursorSetAt,
      row.cursor,
      row.attempt,
      row.nextAttemptAt,
      row.inflightDeadlineAt,
      row.lastError,
      row.isolate ? 1 : 0,
      row.confirmations,
      row.confirmOffset,
      row.skipsWithoutSuccess,
      row.halted ? 1 : 0,
      row.bytesSent,
      row.stats,
    );
    this.rows.set(row.key, row);
    this.unwritten?.delete(row.key);
  }

  /**
   * Moves a cursor past events that did not match, in memory; it must be persisted every
   * QUIET_PERSIST_EVERY offsets: losing it in a crash only makes the next read scan the same
   * non-matching events again, and it keeps a configured but non-matching subscription from
   * adding a row write to every append (docs/performance.md "Cursors of non-matching
   * subscriptions stay in memory").
   * The row (this runtime's own, from `get`) is changed in place, not copied: the caller moves only
   * rows no delivery holds (delivery/pass-over.ts). Answers true when the row is due: the caller
   * then calls persistDirty once, after moving the rest, so the stream's quiet rows go together.
   */
  advanceQuietly(row: SubscriptionRow, cursor: number): boolean {
    this.keepUnwritten(row.key);
    row.cursor = cursor;
    return cursor - this.storedCursor(row.key) >= QUIET_PERSIST_EVERY;
  }

  /**
   * Records a successful delivery's progress in memory and persists it within SOON_MS (with its
   * measurements): on the hot path one row write per delivery (the in-flight watchdog, written
   * before the call leaves) carries the previous delivery's result along. A crash may forget the
   * last results, which only makes them be delivered again (at least once).
   */
  update(row: SubscriptionRow): void {
    this.keepUnwritten(row.key);
    this.rows.set(row.key, row);
    this.persistSoon();
  }

  private persistSoon(): void {
    this.cancelFlush ??= this.timer.set(SOON_MS, () => {
      this.cancelFlush = undefined;
      this.persistDirty();
    });
  }

  /** Adds one delivery's measurements (the last RECENT samples are kept). */
  measure(key: string, completionMs: number, durationMs: number): void {
    const s = this.statsOf(key) ?? { completion: [], duration: [], counts: [0, 0] };
    s.completion.push(completionMs);
    s.duration.push(durationMs);
    if (s.completion.length > RECENT) s.completion.shift();
    if (s.duration.length > RECENT) s.duration.shift();
    s.counts = [s.counts[0] + 1, s.counts[1] + 1];
    (this.measurements ??= new Map()).set(key, s);
    (this.statsDirty ??= new Set()).add(key);
    this.unpersisted?.add(this);
    this.persistSoon();
  }

  private statsOf(key: string): StatsRecord | undefined {
    let s = this.measurements?.get(key);
    const text = this.rows.get(key)?.stats;
    if (!s && text) {
      s = JSON.parse(text) as StatsRecord;
      (this.measurements ??= new Map()).set(key, s);
    }
    return s;
  }

  /** Persists what changed in memory only (quiet cursor moves, results, measurements). */
  persistDirty(): void {
    this.unpersisted?.delete(this);
    // Nothing to write: /metrics asks every loaded actor at each scrape (engine/compose.ts).
    const pendingAttempts = this.attemptLog?.hasPending === true;
    if (this.unwritten === undefined && this.statsDirty === undefined && this.cancelFlush === undefined && !pendingAttempts) return;
    this.cancelFlush?.();
    this.cancelFlush = undefined;
    const keys = new Set([...(this.unwritten?.keys() ?? []), ...(this.statsDirty ?? [])]);
    this.unwritten = undefined;
    this.statsDirty = undefined;
    const sid = this.sid;
    if ((keys.size === 0 && !pendingAttempts) || sid === null) return;
    const write = () => {
      this.attemptLog?.persist(sid);
      for (const key of keys) {
        const row = this.rows.get(key);
        const stats = this.measurements?.get(key);
        if (row) this.write(stats ? { ...row, stats: JSON.stringify(stats) } : row);
      }
    };
    this.storage.transaction(write, { durable: false });
  }

  /** Forgets every row (the stream was destroyed; its rows were erased with it). */
  clear(): void {
    this.unpersisted?.delete(this);
    this.cancelFlush?.();
    this.cancelFlush = undefined;
    this.rows.clear();
    this.unwritten = undefined;
    this.statsDirty = undefined;
    this.measurements = undefined;
    this.attemptLog?.clear();
    this.sid = null;
  }

  /** runtime.subscriptions of :state (protocol §11): progress and measurements, never configuration. */
  view(head: number): Record<string, SubscriptionRuntimeState> {
    const out: Record<string, SubscriptionRuntimeState> = {};
    for (const row of this.rows.values()) {
      const view: SubscriptionRuntimeState = {
        // A copy may pass over events as they are written, before they are durable (docs/architecture.md
        // "Copies in the source's commit"): never shown beyond the head it is shown with.
        acknowledgedOffset: Math.min(row.cursor, head),
        lag: Math.max(0, head - row.cursor),
        attempt: row.attempt,
        nextAttemptAt: row.nextAttemptAt,
        inFlightDeadlineAt: row.inflightDeadlineAt,
        lastError: row.lastError,
        bytesSent: row.bytesSent,
      };
      const s = this.statsOf(row.key);
      if (s) {
        const completion = summarize(s.completion, s.counts[0]);
        const duration = summarize(s.duration, s.counts[1]);
        if (completion) view.completionLatencyMs = completion;
        if (duration) view.deliveryDurationMs = duration;
      }
      out[row.key] = view;
    }
    return out;
  }
}
