/**
 * What a failed delivery does to its subscription (protocol §12.3–12.6):
 * the ladder's decision (core/ladder.ts) applied to the runtime row — a retry after a back-off, a
 * halt with its `subscription-delivery-halted` fact, or a skip with its `error-occurred` audit —
 * and the audit of a JSONata condition that threw. The send loop (sender.ts) and the processor
 * driver both end failed deliveries here; it takes the loop's SendLoop (send-loop.ts).
 *
 * Every result is applied only while the delivery is still the current one of its run (`current`):
 * a late failure of a superseded run cannot delay or fail the new one.
 */
import { EventType, INTERNAL_IDEMPOTENCY_PREFIX, Limits, type OutboundEntry } from '@rivulet/contract';
import { afterFailure, type Failure } from '../../core/ladder.js';
import { runGeneration, type SubscriptionRow } from '../../core/repair.js';
import { recordAttempt } from './attempt-record.js';
import { conditionFailureText } from './collect.js';
import type { FailureHandling, Flight, SendLoop } from './send-loop.js';

export type { Flight } from './send-loop.js';

/** Error text persisted in events is cut at 4096 characters (protocol §9.6, §12.3). */
export function cut(text: string): string {
  return text.length > Limits.errorTextMax ? `${text.slice(0, Limits.errorTextMax - 1)}…` : text;
}

function policyOf(entry: OutboundEntry): 'halt' | 'skip' {
  const receiver = entry.configuration.receiver;
  return receiver.action === 'itx-call' || receiver.action === 'webhook-post' ? receiver.delivery.onFailingEvent : 'halt';
}

export class DeliveryFailures implements FailureHandling {
  constructor(private readonly loop: SendLoop) {}

  /** A JSONata condition threw on `offset`: one audit, then an ordered failure (protocol §12.3). */
  async conditionFailed(key: string, entry: OutboundEntry, flight: Flight, row: SubscriptionRow, offset: number, conditionError: string): Promise<void> {
    const error = cut(conditionFailureText(offset, conditionError));
    await this.audit(key, row, offset, 'condition', {
      message: cut(`subscription "${key}" ${error}`),
      subscriptionKey: key,
      offset,
      error,
    });
    await this.failed(key, entry, flight, { kind: 'failing', batchSize: 1, firstOffset: offset }, error);
  }

  /** Appends one idempotent audit line per (key, run, offset) on the source stream; answers whether it is stored. */
  private async audit(key: string, row: SubscriptionRow, offset: number, kind: string, payload: Record<string, unknown>): Promise<boolean> {
    const { actor } = this.loop;
    try {
      await actor.append(
        [
          {
            type: EventType.errorOccurred,
            idempotencyKey: `${INTERNAL_IDEMPOTENCY_PREFIX}${kind}:${JSON.stringify([key, runGeneration(row), offset])}`,
            payload: payload as never,
          },
        ],
        'platform',
      );
      return true;
    } catch (error) {
      this.loop.log(`could not append the ${kind} audit of ${actor.path} subscription "${key}"`, error);
      return false;
    }
  }

  async failed(key: string, entry: OutboundEntry, flight: Flight, failure: Failure, error: string): Promise<void> {
    const { loop } = this;
    const { actor } = loop;
    const row = loop.current(key, flight);
    if (!row) return;
    loop.writtenThrough.failed(key);
    const knobs = loop.knobs;
    const lastError = cut(error);
    const now = loop.clock.now();
    const decision = afterFailure(row, failure, policyOf(entry), now, loop.random.next(), knobs);
    switch (decision.action) {
      case 'retry':
        loop.write({
          ...row,
          attempt: decision.attempt,
          confirmations: decision.confirmations,
          confirmOffset: decision.confirmOffset,
          nextAttemptAt: decision.nextAttemptAt,
          inflightDeadlineAt: null,
          lastError,
          isolate: true,
        });
        return;
      case 'halt': {
        loop.write({ ...row, attempt: decision.attempts, nextAttemptAt: null, inflightDeadlineAt: null, lastError, isolate: true });
        try {
          await actor.append(
            [
              {
                type: EventType.subscriptionDeliveryHalted,
                payload: { subscriptionKey: key, reason: 'delivery-failed', afterOffset: row.cursor, attempts: decision.attempts, error: lastError },
              },
            ],
            'platform',
          );
          // Counted once the halt is stored: a failed append is retried and decides the halt again.
          loop.metrics?.subscriptionHalts.inc({ action: entry.configuration.receiver.action });
        } catch (appendError) {
          this.loop.log(`could not append the halt of ${actor.path} subscription "${key}"`, appendError);
          const still = loop.current(key, flight);
          if (still) loop.write({ ...still, nextAttemptAt: now + knobs.baseMs });
        }
        return;
      }
      case 'skip': {
        const audited = await this.audit(key, row, decision.offset, 'skip', {
          message: cut(`subscription "${key}" skipped offset ${decision.offset} after it failed alone ${knobs.skipConfirmations} times: ${lastError}`),
          subscriptionKey: key,
          offset: decision.offset,
          error: lastError,
        });
        const still = loop.current(key, flight);
        if (!still) return;
        if (!audited) {
          // A skip is never applied without its durable audit (protocol §12.6): try again later.
          loop.write({ ...still, nextAttemptAt: now + knobs.baseMs, inflightDeadlineAt: null, lastError });
          return;
        }
        recordAttempt(loop, key, still, { startedMs: now, attempt: still.attempt, fromOffset: decision.offset, toOffset: decision.offset, outcome: 'skipped', error: lastError, durationMs: 0 });
        loop.write({
          ...still,
          cursor: Math.max(still.cursor, decision.offset),
          attempt: 0,
          confirmations: 0,
          confirmOffset: null,
          skipsWithoutSuccess: still.skipsWithoutSuccess + 1,
          nextAttemptAt: null,
          inflightDeadlineAt: null,
          lastError,
          isolate: true,
        });
        loop.metrics?.subscriptionSkips.inc({ action: entry.configuration.receiver.action });
        return;
      }
    }
  }
}
