/**
 * What the subscription listing says of one subscription (protocol §21.2): its status, judged from
 * its runtime row and the source head (its target is `subscriptionTarget` in @rivulet/contract).
 * One function for both hosts, so a listing means the same thing wherever it is answered.
 */
import type { SubscriptionStatus } from '@rivulet/contract';

export interface StatusInputs {
  halted: boolean;
  attempt: number;
  lag: number;
  /** When the oldest durable event after the cursor was appended (Unix ms), or null when none is owed. */
  oldestOwedMs: number | null;
}

/**
 * halted: a `subscription-delivery-halted` stands; retrying: not halted, and the last attempt
 * failed (`attempt` > 0); lagging: neither, and an event it owes was appended at least
 * `laggingAfterMs` ago; healthy otherwise.
 */
export function subscriptionStatus(s: StatusInputs, nowMs: number, laggingAfterMs: number): SubscriptionStatus {
  if (s.halted) return 'halted';
  if (s.attempt > 0) return 'retrying';
  if (s.lag > 0 && s.oldestOwedMs !== null && nowMs - s.oldestOwedMs >= laggingAfterMs) return 'lagging';
  return 'healthy';
}
