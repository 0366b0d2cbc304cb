/**
 * The subscription index (protocol §21): one row per configured subscription — its action, target,
 * configuration time and halt — written by the runtime repair (subscription-runtime.ts) inside the
 * very transaction that commits the subscription event, beside the subscription_runtime row that
 * holds its progress. The cross-stream listing is one SQL statement over these two tables and the
 * streams rows: no stream is loaded to answer it.
 *
 * The same tables exist in every database, so a Durable Object answers the listing of its one
 * stream with the same statement (hosts/worker/stream-index.ts merges those per project).
 */
import { subscriptionTarget, type OutboundEntry, type SubscriptionListEntry } from '@rivulet/contract';
import type { SqlStorage } from '../ports/storage.js';
import { derivedHeadSql, firstOwedCreatedSql } from './event-index.js';

/** The index's own table; SUBSCRIPTION_INDEX_DDL adds an index on subscription_runtime. */
export const SUBSCRIPTION_INDEX_TABLE = `CREATE TABLE IF NOT EXISTS subscription_index (
     sid INTEGER NOT NULL,
     key TEXT NOT NULL,
     action TEXT NOT NULL,
     target TEXT NOT NULL,
     configured_at TEXT NOT NULL,
     halt TEXT,
     PRIMARY KEY (sid, key)
   )`;

export const SUBSCRIPTION_INDEX_DDL = [
  SUBSCRIPTION_INDEX_TABLE,
  // The halted listing starts from the halted rows, however many streams there are
  // (docs/performance.md "The halted listing starts from its own index").
  `CREATE INDEX IF NOT EXISTS subscription_runtime_halted ON subscription_runtime (sid) WHERE halted = 1`,
];

/**
 * Fills the index from the streams' core state, for a database written before the index existed
 * (call right after creating the table): every subscription is then listed before its stream is
 * loaded again. The next repair of a stream rewrites its rows from the entries themselves.
 */
export function backfillSubscriptionIndex(storage: SqlStorage): void {
  storage.run(
    `INSERT OR IGNORE INTO subscription_index (sid, key, action, target, configured_at, halt)
     SELECT s.sid, j.key,
            json_extract(j.value, '$.configuration.receiver.action'),
            coalesce(json_extract(j.value, '$.configuration.receiver.receivingStreamPath'),
                     json_extract(j.value, '$.configuration.receiver.url'),
                     json_extract(j.value, '$.configuration.receiver.expression'), ''),
            json_extract(j.value, '$.configuredAt'),
            json_extract(j.value, '$.deliveryHalted')
     FROM streams s, json_each(s.state, '$.subscriptions.outbound.byKey') j
     WHERE s.state <> '' AND json_valid(s.state)`,
  );
}

/** What the index holds of an entry, as one string: an entry whose fingerprint is unchanged is not rewritten. */
export function indexFingerprint(entry: OutboundEntry): string {
  return JSON.stringify([entry.configuration.receiver.action, subscriptionTarget(entry.configuration.receiver), entry.configuredAt, entry.deliveryHalted ?? null]);
}

export function writeIndexRow(storage: SqlStorage, sid: number, key: string, entry: OutboundEntry): void {
  storage.run(
    `INSERT INTO subscription_index (sid, key, action, target, configured_at, halt) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (sid, key) DO UPDATE SET action = excluded.action, target = excluded.target,
       configured_at = excluded.configured_at, halt = excluded.halt`,
    sid,
    key,
    entry.configuration.receiver.action,
    subscriptionTarget(entry.configuration.receiver),
    entry.configuredAt,
    entry.deliveryHalted ? JSON.stringify(entry.deliveryHalted) : null,
  );
}

export function deleteIndexRow(storage: SqlStorage, sid: number, key: string): void {
  storage.run(`DELETE FROM subscription_index WHERE sid = ? AND key = ?`, sid, key);
}

/** The fingerprints of one stream's index rows, by key. */
export function indexFingerprints(storage: SqlStorage, sid: number): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of storage.exec<{ key: string; action: string; target: string; configured_at: string; halt: string | null }>(
    `SELECT key, action, target, configured_at, halt FROM subscription_index WHERE sid = ?`,
    sid,
  )) {
    out.set(r.key, JSON.stringify([r.action, r.target, r.configured_at, r.halt === null ? null : JSON.parse(r.halt)]));
  }
  return out;
}

/** A position in the listing's order: halted ones first, then by path and key (protocol §21.3). */
export interface ListPosition {
  /** 0 for halted subscriptions, 1 for the others. */
  group: 0 | 1;
  path: string;
  key: string;
}

export interface IndexQuery {
  project: string;
  prefix: string;
  after: ListPosition | undefined;
  /** Only halted rows (true), only the others (false), or both. */
  halted: boolean | undefined;
  limit: number;
}

/** One listed row before its status is judged: the entry's fields and what the status needs. */
export interface IndexedRow {
  position: ListPosition;
  entry: Omit<SubscriptionListEntry, 'status'>;
  halted: boolean;
  oldestOwedMs: number | null;
}

interface Raw {
  path: string;
  key: string;
  action: SubscriptionListEntry['action'];
  target: string;
  configured_at: string;
  halt: string | null;
  cursor: number;
  attempt: number;
  last_error: string | null;
  halted: number;
  head: number;
  owed_ms: number | null;
}

/** Rows of the listing in its order, after `after`; statuses are the caller's to judge. */
export function queryIndex(storage: SqlStorage, q: IndexQuery): IndexedRow[] {
  const params: (string | number)[] = [q.project];
  let where = `s.project = ?`;
  if (q.prefix !== '/') {
    // Everything strictly below "prefix/" sorts in ["prefix/", "prefix0"): "0" follows "/".
    where += ` AND (s.path = ? OR (s.path >= ? AND s.path < ?))`;
    params.push(q.prefix, `${q.prefix}/`, `${q.prefix}0`);
  }
  if (q.halted !== undefined) where += q.halted ? ` AND r.halted = 1` : ` AND r.halted = 0`;
  if (q.after) {
    where += ` AND (1 - r.halted, s.path, r.key) > (?, ?, ?)`;
    params.push(q.after.group, q.after.path, q.after.key);
  }
  params.push(q.limit);
  // Halted rows only: start from them (CROSS JOIN keeps the runtime rows the outer loop, through
  // subscription_runtime_halted), not from every stream of the project. The page is chosen over
  // the narrow columns first; the head, the owed event and the index
  // fields are then read for its rows only (not for every row the sort passes over).
  const rows = storage.exec<Raw>(
    `SELECT p.path, p.key, i.action, i.target, i.configured_at, i.halt, r.cursor, r.attempt, r.last_error, r.halted,
            ${derivedHeadSql('p')} AS head,
            ${firstOwedCreatedSql('p', 'r.cursor')} AS owed_ms
     FROM (SELECT r.sid AS sid, r.key AS key, s.path AS path, r.halted AS halted, s.head AS head
           FROM subscription_runtime r
           ${q.halted === true ? 'CROSS JOIN' : 'JOIN'} streams s ON s.sid = r.sid
           JOIN subscription_index i ON i.sid = r.sid AND i.key = r.key
           WHERE ${where}
           ORDER BY 1 - r.halted, s.path, r.key
           LIMIT ?) p
     JOIN subscription_runtime r ON r.sid = p.sid AND r.key = p.key
     JOIN subscription_index i ON i.sid = p.sid AND i.key = p.key
     ORDER BY 1 - p.halted, p.path, p.key`,
    ...params,
  );
  return rows.map((r) => {
    const entry: Omit<SubscriptionListEntry, 'status'> = {
      sourcePath: r.path,
      subscriptionKey: r.key,
      action: r.action,
      target: r.target,
      acknowledgedOffset: r.cursor,
      lag: Math.max(0, r.head - r.cursor),
      attempt: r.attempt,
      lastError: r.last_error,
      configuredAt: r.configured_at,
    };
    if (r.halt !== null) entry.deliveryHalted = JSON.parse(r.halt) as NonNullable<SubscriptionListEntry['deliveryHalted']>;
    return { position: { group: r.halted === 1 ? 0 : 1, path: r.path, key: r.key }, entry, halted: r.halted === 1, oldestOwedMs: r.owed_ms };
  });
}
