/**
 * The retry ladder as a pure state machine (protocol §12.4–§12.6): (row, outcome, now, random) →
 * next action. Nothing here reads a clock or a random source itself, so the schedule is testable.
 *
 * - Every failure of any kind counts one attempt; the attempt limit halts.
 * - An error marked non-retryable halts at once.
 * - With onFailingEvent "skip", a failing event (never an unavailable receiver) that failed alone
 *   `skipConfirmations` times in a row is skipped, unless `maxSkipsWithoutSuccess` skips already
 *   happened with no success in between: then it halts instead. Confirmations are checked before
 *   the attempt limit, so a skip is not pre-empted by the halt of its own last confirmation.
 */

export interface LadderKnobs {
  maxAttempts: number;
  baseMs: number;
  maxMs: number;
  skipConfirmations: number;
  maxSkipsWithoutSuccess: number;
  /** ± fraction of jitter (0.2 = ±20 %). */
  jitter: number;
}

export const ladderDefaults = { skipConfirmations: 3, maxSkipsWithoutSuccess: 2, jitter: 0.2 } as const;

export type FailureKind = 'failing' | 'unavailable' | 'fatal';

export interface LadderRow {
  attempt: number;
  confirmations: number;
  /** Offset the confirmations refer to (null when none). */
  confirmOffset: number | null;
  skipsWithoutSuccess: number;
}

export interface Failure {
  kind: FailureKind;
  /** Events in the failed batch. */
  batchSize: number;
  /** Offset of the first event of the failed batch. */
  firstOffset: number;
}

export type LadderDecision =
  | { action: 'retry'; attempt: number; confirmations: number; confirmOffset: number | null; nextAttemptAt: number }
  | { action: 'halt'; attempts: number }
  | { action: 'skip'; offset: number; attempts: number };

/** Delay before attempt n+1 after n consecutive failures: min(max, base · 2^(n−1)) with jitter, never above max. */
export function backoffMs(failures: number, knobs: LadderKnobs, random: number): number {
  const exp = Math.min(knobs.maxMs, knobs.baseMs * 2 ** Math.max(0, failures - 1));
  const factor = 1 + knobs.jitter * (2 * random - 1);
  return Math.max(1, Math.min(knobs.maxMs, Math.round(exp * factor)));
}

export function afterFailure(
  row: LadderRow,
  failure: Failure,
  policy: 'halt' | 'skip',
  now: number,
  random: number,
  knobs: LadderKnobs,
): LadderDecision {
  const attempt = row.attempt + 1;
  if (failure.kind === 'fatal') return { action: 'halt', attempts: attempt };
  let confirmations = row.confirmations;
  let confirmOffset = row.confirmOffset;
  if (failure.kind === 'failing' && policy === 'skip' && failure.batchSize === 1) {
    confirmations = confirmOffset === failure.firstOffset ? confirmations + 1 : 1;
    confirmOffset = failure.firstOffset;
    if (confirmations >= knobs.skipConfirmations) {
      if (row.skipsWithoutSuccess >= knobs.maxSkipsWithoutSuccess) return { action: 'halt', attempts: attempt };
      return { action: 'skip', offset: failure.firstOffset, attempts: attempt };
    }
  }
  if (attempt >= knobs.maxAttempts) return { action: 'halt', attempts: attempt };
  return { action: 'retry', attempt, confirmations, confirmOffset, nextAttemptAt: now + backoffMs(attempt, knobs, random) };
}
