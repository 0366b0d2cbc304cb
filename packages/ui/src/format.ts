/**
 * Pure formatting: how the UI words durations, subscriptions, filters and JSON. No DOM here, so
 * the unit tests run it in Node.
 */
import type { CoreState, RuntimeState } from '@rivulet/client';

export type OutboundEntry = CoreState['subscriptions']['outbound']['byKey'][string];
export type InboundRecord = CoreState['subscriptions']['inbound']['bySourcePath'][string][string];
export type SubscriptionRuntime = RuntimeState['subscriptions'][string];
export type ConnectionRuntime = RuntimeState['connections'][string];
export type SubscriptionConfiguration = OutboundEntry['configuration'];
export type Receiver = SubscriptionConfiguration['receiver'];
export type ItxExpression = Extract<Receiver, { action: 'itx-call' }>['expression'];

/** "just now", "42 s", "3 min", "2 h 5 min", "4 d 3 h". */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 1) return 'just now';
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const hours = Math.floor(m / 60);
  if (hours < 24) return m % 60 === 0 ? `${hours} h` : `${hours} h ${m % 60} min`;
  const days = Math.floor(hours / 24);
  return hours % 24 === 0 ? `${days} d` : `${days} d ${hours % 24} h`;
}

/** "in 1.2 s", "in 3 min", "now", "5 s ago". */
export function formatRelative(targetMs: number, nowMs: number): string {
  const delta = targetMs - nowMs;
  if (Math.abs(delta) < 50) return 'now';
  if (delta > 0) return delta < 10_000 ? `in ${(delta / 1000).toFixed(1)} s` : `in ${formatDuration(delta)}`;
  const ago = formatDuration(-delta);
  return ago === 'just now' ? ago : `${ago} ago`;
}

/** A local wall-clock time with milliseconds: "14:03:07.125". */
export function formatClock(iso: string | number): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

/** The first block of a UUID, enough to tell lifetimes apart at a glance. */
export function shortId(id: string): string {
  const dash = id.indexOf('-');
  return dash > 0 ? id.slice(0, dash) : id.slice(0, 8);
}

/** An ITX expression as a call chain: ["workers", ["get", "billing"], "processEventBatch"] → workers.get("billing").processEventBatch */
export function describeItx(expression: ItxExpression): string {
  return expression
    .map((step, i) => {
      if (typeof step === 'string') return i === 0 ? step : `.${step}`;
      const [method, ...args] = step;
      const call = `${method}(${args.map((a) => JSON.stringify(a)).join(', ')})`;
      return i === 0 ? call : `.${call}`;
    })
    .join('');
}

export interface ActionDescription {
  /** copy, webhook, itx or processor: a short tag for the badge. */
  kind: 'copy' | 'webhook' | 'itx' | 'processor';
  /** "copy to /shop/paid", "POST https://…", "itx workers.get(…).f", "processor processors.get(…).wake". */
  text: string;
  /** The receiving stream of a copy (the UI links to it). */
  streamPath?: string;
}

export function describeAction(receiver: Receiver): ActionDescription {
  switch (receiver.action) {
    case 'copy-to-stream':
      return { kind: 'copy', text: `copy to ${receiver.receivingStreamPath}`, streamPath: receiver.receivingStreamPath };
    case 'webhook-post':
      return { kind: 'webhook', text: `POST ${receiver.url}` };
    case 'itx-call':
      return { kind: 'itx', text: `itx ${describeItx(receiver.expression)}` };
    case 'processor-wake':
      return { kind: 'processor', text: `processor ${describeItx(receiver.expression)}` };
  }
}

export function describeFilter(filter: SubscriptionConfiguration['filter']): string {
  const parts: string[] = [];
  if (filter?.eventTypes) parts.push(`types: ${filter.eventTypes.join(', ')}`);
  if (filter?.jsonataCondition) parts.push(`when: ${filter.jsonataCondition}`);
  return parts.length > 0 ? parts.join(' · ') : 'all events';
}

export interface DeliverySettings {
  transform: string | null;
  start: string | null;
  onFailingEvent: string | null;
}

/** Transform, start and onFailingEvent; a processor carries none of them (it keeps its own checkpoint). */
export function deliverySettings(receiver: Receiver): DeliverySettings {
  if (receiver.action === 'processor-wake') return { transform: null, start: null, onFailingEvent: null };
  return {
    transform: receiver.jsonataTransform ?? null,
    start: receiver.delivery.start,
    onFailingEvent: receiver.delivery.onFailingEvent,
  };
}

export type SubscriptionStatus = 'halted' | 'retrying' | 'lagging' | 'healthy' | 'pending';

/**
 * halted: the durable halt fact is set; retrying: the last attempt failed (backing off);
 * lagging: behind the head with no failure; healthy: caught up; pending: no runtime row yet.
 */
export function subscriptionStatus(entry: OutboundEntry, runtime: SubscriptionRuntime | undefined): SubscriptionStatus {
  if (entry.deliveryHalted) return 'halted';
  if (!runtime) return 'pending';
  if (runtime.attempt > 0) return 'retrying';
  if (runtime.lag > 0) return 'lagging';
  return 'healthy';
}

/** One line of JSON, cut to `max` characters with an ellipsis. */
export function jsonPreview(value: unknown, max = 120): string {
  if (value === undefined) return '';
  const text = JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export interface ParsedPayload {
  ok: boolean;
  value?: Record<string, unknown>;
  error?: string;
}

/** The composer's payload box: empty means no payload; otherwise it must be one JSON object. */
export function parsePayload(text: string): ParsedPayload {
  if (text.trim() === '') return { ok: true };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: `payload is not valid JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, error: `payload must be a JSON object, not ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}` };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

/** Listing statuses from worst to best: a stream's dot in the tree shows its worst subscription. */
const STATUS_RANK = ['halted', 'retrying', 'lagging', 'healthy'] as const;
export type ListedStatus = (typeof STATUS_RANK)[number];

/** The worst status of each source stream's subscriptions (streams without any are absent). */
export function worstStatusByStream(rows: readonly { sourcePath: string; status: ListedStatus }[]): Map<string, ListedStatus> {
  const out = new Map<string, ListedStatus>();
  for (const row of rows) {
    const known = out.get(row.sourcePath);
    if (known === undefined || STATUS_RANK.indexOf(row.status) < STATUS_RANK.indexOf(known)) out.set(row.sourcePath, row.status);
  }
  return out;
}

/** Where a halted card's event comes from: named by the error, first of the failed attempt. */
export interface FailedAt {
  offset: number;
  source: 'error' | 'attempt';
}

/**
 * The offset of the event a halted subscription failed on: the one its error names ("… on offset
 * 7: …", the condition and transform errors), else the first offset of the newest failed attempt
 * (a receiver that refused or could not be reached, a processor wake that failed), else none: then
 * the card shows the next event the subscription owes.
 */
export function failedOffset(
  halt: { afterOffset: number; error?: string | undefined },
  attempts: readonly { outcome: string; fromOffset: number }[],
): FailedAt | null {
  const named = /\bon offset (\d+)\b/.exec(halt.error ?? '');
  if (named) return { offset: Number(named[1]), source: 'error' };
  const failed = attempts.find((a) => a.outcome === 'failed' || a.outcome === 'unavailable');
  if (failed && failed.fromOffset > halt.afterOffset) return { offset: failed.fromOffset, source: 'attempt' };
  return null;
}

/** Splits a comma list ("a, b,,c") into its trimmed, non-empty items. */
export function commaList(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}
