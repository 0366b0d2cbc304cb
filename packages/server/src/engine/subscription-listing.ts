/**
 * The cross-stream subscription listing (protocol §21): pages of index rows (subscription-index.ts)
 * in the listing's order — halted first, then by source path and key — with each row's status
 * judged by core/subscription-status.ts and kept when it is one of the statuses asked for. The
 * page's `next` is an opaque position in that order, so rows added or removed between pages
 * neither repeat nor shift the rows that follow.
 */
import {
  RivuletError,
  SUBSCRIPTION_STATUSES,
  type SubscriptionListEntry,
  type SubscriptionListResponse,
  type SubscriptionStatus,
} from '@rivulet/contract';
import { subscriptionStatus } from '../core/subscription-status.js';
import type { IndexQuery, IndexedRow, ListPosition } from './subscription-index.js';

export interface SubscriptionListOptions {
  prefix: string;
  /** Statuses to keep; every status when absent. */
  statuses?: readonly SubscriptionStatus[] | undefined;
  /** The `next` of the previous page. */
  after?: string | undefined;
  limit: number;
}

/** Index rows read per round while statuses other than halted are filtered out. */
const CHUNK = 256;

function toBase64Url(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(text: string): string {
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
}

export function encodeListCursor(p: ListPosition): string {
  return toBase64Url(JSON.stringify([p.group, p.path, p.key]));
}

export function decodeListCursor(cursor: string): ListPosition {
  try {
    const value: unknown = JSON.parse(fromBase64Url(cursor));
    if (Array.isArray(value) && value.length === 3 && (value[0] === 0 || value[0] === 1) && typeof value[1] === 'string' && typeof value[2] === 'string') {
      return { group: value[0], path: value[1], key: value[2] };
    }
  } catch {
    // answered below
  }
  throw new RivuletError('INVALID_INPUT', 'after: not a position of this listing (pass the "next" of the previous page)');
}

/** Which group of the order the statuses need: halted rows only (true), the others only (false), or both. */
export function haltedFilter(statuses: readonly SubscriptionStatus[]): boolean | undefined {
  const halted = statuses.includes('halted');
  const others = statuses.some((s) => s !== 'halted');
  return halted && others ? undefined : halted;
}

export interface Judge {
  nowMs: number;
  laggingAfterMs: number;
}

export function judged(row: IndexedRow, judge: Judge): SubscriptionListEntry {
  const status = subscriptionStatus(
    { halted: row.halted, attempt: row.entry.attempt, lag: row.entry.lag, oldestOwedMs: row.oldestOwedMs },
    judge.nowMs,
    judge.laggingAfterMs,
  );
  const e = row.entry;
  // In the order protocol §21.1 lists the fields.
  return {
    sourcePath: e.sourcePath,
    subscriptionKey: e.subscriptionKey,
    action: e.action,
    target: e.target,
    status,
    acknowledgedOffset: e.acknowledgedOffset,
    lag: e.lag,
    attempt: e.attempt,
    lastError: e.lastError,
    ...(e.deliveryHalted ? { deliveryHalted: e.deliveryHalted } : {}),
    configuredAt: e.configuredAt,
  };
}

/**
 * One page: rows are read in order from `after` until `limit` of them have a wanted status and one
 * more wanted row shows that more follow (then `next` is the position of the page's last row).
 */
export function listSubscriptions(
  query: (q: IndexQuery) => IndexedRow[],
  project: string,
  options: SubscriptionListOptions,
  judge: Judge,
): SubscriptionListResponse {
  const statuses = options.statuses && options.statuses.length > 0 ? options.statuses : SUBSCRIPTION_STATUSES;
  const halted = haltedFilter(statuses);
  let after = options.after === undefined ? undefined : decodeListCursor(options.after);
  const out: SubscriptionListEntry[] = [];
  let last: ListPosition | undefined;
  const chunk = Math.max(options.limit + 1, CHUNK);
  for (;;) {
    const rows = query({ project, prefix: options.prefix, after, halted, limit: chunk });
    for (const row of rows) {
      after = row.position;
      const entry = judged(row, judge);
      if (!statuses.includes(entry.status)) continue;
      if (out.length === options.limit) return { subscriptions: out, next: encodeListCursor(last!) };
      out.push(entry);
      last = row.position;
    }
    if (rows.length < chunk) return { subscriptions: out };
  }
}
