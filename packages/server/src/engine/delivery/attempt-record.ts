/**
 * One entry of the attempt history (protocol §22) from what the send loop knows of an attempt:
 * its run, its offsets, its outcome and how long it took. Kept in runtime storage by
 * engine/delivery-attempts.ts through the stream's SubscriptionRuntime.
 */
import { SubscriptionAdminLimits, type DeliveryAttempt, type DeliveryAttemptOutcome } from '@rivulet/contract';
import type { SubscriptionRow } from '../../core/repair.js';
import { isoAt } from '../actor-commit.js';
import type { DeliveryOutcome } from '../receivers/receiver.js';
import type { SendLoop } from './send-loop.js';

export interface AttemptFacts {
  startedMs: number;
  attempt: number;
  fromOffset: number;
  toOffset: number;
  outcome: DeliveryAttemptOutcome;
  status?: number | undefined;
  responseExcerpt?: string | undefined;
  error?: string | undefined;
  durationMs: number;
}

/** At most `bytes` UTF-8 bytes of `text`, never cutting a character. */
export function utf8Prefix(text: string, bytes: number): string {
  const encoded = new TextEncoder().encode(text);
  if (encoded.length <= bytes) return text;
  let end = bytes;
  // Back off to the first byte of a character (continuation bytes are 10xxxxxx).
  while (end > 0 && (encoded[end]! & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(encoded.subarray(0, end));
}

/** The outcome of an attempt as the history names it. */
export function outcomeOf(outcome: DeliveryOutcome, events: number): DeliveryAttemptOutcome {
  if (outcome.ok) return outcome.dropped !== undefined && outcome.dropped >= events ? 'dropped' : 'ok';
  return outcome.kind === 'unavailable' ? 'unavailable' : 'failed';
}

export function recordAttempt(loop: SendLoop, key: string, row: SubscriptionRow, facts: AttemptFacts): void {
  const excerpt = facts.responseExcerpt === undefined || facts.responseExcerpt === '' ? undefined : utf8Prefix(facts.responseExcerpt, SubscriptionAdminLimits.responseExcerptBytes);
  // In the order protocol §22.1 lists the fields.
  const attempt: DeliveryAttempt = {
    at: isoAt(facts.startedMs),
    run: `${row.runConfiguredAt}:${row.runCursorSetAt}`,
    attempt: facts.attempt,
    fromOffset: facts.fromOffset,
    toOffset: facts.toOffset,
    outcome: facts.outcome,
    ...(facts.status !== undefined ? { status: facts.status } : {}),
    ...(excerpt !== undefined ? { responseExcerpt: excerpt } : {}),
    ...(facts.error !== undefined ? { error: facts.error } : {}),
    durationMs: Math.max(0, facts.durationMs),
  };
  loop.actor.subscriptions.recordAttempt(key, attempt);
}
