/**
 * The retry ladder (protocol §12.4–§12.6): backoff with injected jitter, the halt at the attempt
 * limit, fatal errors, and the skip policy's confirmations (never counted for unavailable
 * receivers or multi-event batches) with its skips-without-success bound.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { afterFailure, backoffMs, ladderDefaults, type Failure, type LadderKnobs, type LadderRow } from './ladder.js';

const knobs: LadderKnobs = { maxAttempts: 15, baseMs: 1000, maxMs: 1_800_000, ...ladderDefaults };
const ALMOST_ONE = 1 - Number.EPSILON;
const NOW = 1_700_000_000_000;

const fresh: LadderRow = { attempt: 0, confirmations: 0, confirmOffset: null, skipsWithoutSuccess: 0 };
const failing = (firstOffset: number, batchSize = 1): Failure => ({ kind: 'failing', batchSize, firstOffset });
const unavailable = (firstOffset: number, batchSize = 1): Failure => ({ kind: 'unavailable', batchSize, firstOffset });

/** Applies failures in order as the sender does (a retry's fields become the row). */
function run(
  failures: Failure[],
  policy: 'halt' | 'skip',
  k: LadderKnobs = knobs,
  start: LadderRow = fresh,
): { row: LadderRow; decisions: ReturnType<typeof afterFailure>[] } {
  let row = start;
  const decisions: ReturnType<typeof afterFailure>[] = [];
  for (const failure of failures) {
    const decision = afterFailure(row, failure, policy, NOW, 0.5, k);
    decisions.push(decision);
    if (decision.action !== 'retry') break;
    row = { ...row, attempt: decision.attempt, confirmations: decision.confirmations, confirmOffset: decision.confirmOffset };
  }
  return { row, decisions };
}

describe('backoffMs', () => {
  it('is base · 2^(n−1) at random 0.5 (no jitter)', () => {
    expect(backoffMs(1, knobs, 0.5)).toBe(1000);
    expect(backoffMs(2, knobs, 0.5)).toBe(2000);
    expect(backoffMs(3, knobs, 0.5)).toBe(4000);
    expect(backoffMs(11, knobs, 0.5)).toBe(1_024_000);
  });

  it('is 20 % below at random 0 and (almost) 20 % above at random → 1', () => {
    expect(backoffMs(1, knobs, 0)).toBe(800);
    expect(backoffMs(1, knobs, ALMOST_ONE)).toBe(1200);
    expect(backoffMs(4, knobs, 0)).toBe(6400);
    expect(backoffMs(4, knobs, ALMOST_ONE)).toBe(9600);
  });

  it('is capped at the maximum, jitter included (never above retryMax)', () => {
    expect(backoffMs(12, knobs, 0.5)).toBe(1_800_000);
    expect(backoffMs(40, knobs, 0.5)).toBe(1_800_000);
    expect(backoffMs(5000, knobs, 0.5)).toBe(1_800_000);
    expect(backoffMs(40, knobs, 0)).toBe(1_440_000);
    expect(backoffMs(40, knobs, ALMOST_ONE)).toBe(1_800_000);
  });

  it('treats 0 failures like 1 and is at least 1 ms', () => {
    expect(backoffMs(0, knobs, 0.5)).toBe(1000);
    expect(backoffMs(1, { ...knobs, baseMs: 0 }, 0)).toBe(1);
  });

  it('property: within ±20 % of min(max, base·2^(n−1)), monotone non-decreasing in n at a fixed random', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.integer({ min: 1, max: 60_000 }),
        fc.integer({ min: 1, max: 10_000_000 }),
        (n, random, baseMs, maxMs) => {
          const k = { ...knobs, baseMs, maxMs };
          const b = backoffMs(n, k, random);
          const expected = Math.min(maxMs, baseMs * 2 ** (n - 1));
          expect(b).toBeGreaterThanOrEqual(Math.max(1, Math.floor(expected * 0.8)));
          expect(b).toBeLessThanOrEqual(Math.ceil(expected * 1.2));
          expect(backoffMs(n + 1, k, random)).toBeGreaterThanOrEqual(b);
          // capped: never above max + 20 %
          expect(b).toBeLessThanOrEqual(Math.max(1, Math.round(maxMs * 1.2)));
        },
      ),
    );
  });
});

describe('afterFailure: the halt ladder', () => {
  it('retries with attempt n and nextAttemptAt = now + backoff(n)', () => {
    const d = afterFailure(fresh, failing(5, 3), 'halt', NOW, 0.5, knobs);
    expect(d).toEqual({ action: 'retry', attempt: 1, confirmations: 0, confirmOffset: null, nextAttemptAt: NOW + 1000 });
    const d2 = afterFailure({ ...fresh, attempt: 3 }, failing(5), 'halt', NOW, 0, knobs);
    expect(d2).toEqual({ action: 'retry', attempt: 4, confirmations: 0, confirmOffset: null, nextAttemptAt: NOW + 6400 });
  });

  it('halts when the attempt limit is reached, counting every kind of failure', () => {
    const k = { ...knobs, maxAttempts: 3 };
    const { decisions } = run([failing(5, 4), unavailable(5), failing(5), failing(5)], 'halt', k);
    expect(decisions.map((d) => d.action)).toEqual(['retry', 'retry', 'halt']);
    expect(decisions[2]).toEqual({ action: 'halt', attempts: 3 });
  });

  it('halts on the first failure when the limit is 1', () => {
    expect(afterFailure(fresh, unavailable(1), 'halt', NOW, 0.5, { ...knobs, maxAttempts: 1 })).toEqual({ action: 'halt', attempts: 1 });
  });

  it('a fatal (non-retryable) error halts at once, whatever the policy', () => {
    expect(afterFailure(fresh, { kind: 'fatal', batchSize: 1, firstOffset: 3 }, 'halt', NOW, 0.5, knobs)).toEqual({ action: 'halt', attempts: 1 });
    expect(afterFailure({ ...fresh, attempt: 4 }, { kind: 'fatal', batchSize: 5, firstOffset: 3 }, 'skip', NOW, 0.5, knobs)).toEqual({
      action: 'halt',
      attempts: 5,
    });
    expect(
      afterFailure({ attempt: 0, confirmations: 2, confirmOffset: 3, skipsWithoutSuccess: 0 }, { kind: 'fatal', batchSize: 1, firstOffset: 3 }, 'skip', NOW, 0.5, knobs),
    ).toEqual({ action: 'halt', attempts: 1 });
  });

  it('with policy "halt", single-event failures never skip', () => {
    const { decisions } = run(Array.from({ length: 15 }, () => failing(9)), 'halt');
    expect(decisions.slice(0, 14).every((d) => d.action === 'retry')).toBe(true);
    expect(decisions[14]).toEqual({ action: 'halt', attempts: 15 });
    expect(decisions.some((d) => d.action === 'skip')).toBe(false);
  });
});

describe('afterFailure: the skip policy', () => {
  it('skips after exactly 3 single-event failing confirmations of the same offset', () => {
    const { decisions } = run([failing(7), failing(7), failing(7)], 'skip');
    expect(decisions[0]).toMatchObject({ action: 'retry', attempt: 1, confirmations: 1, confirmOffset: 7 });
    expect(decisions[1]).toMatchObject({ action: 'retry', attempt: 2, confirmations: 2, confirmOffset: 7 });
    expect(decisions[2]).toEqual({ action: 'skip', offset: 7, attempts: 3 });
  });

  it('a multi-event failure is not a confirmation', () => {
    const { decisions } = run([failing(7, 3), failing(7), failing(7, 2), failing(7), failing(7)], 'skip');
    expect(decisions.map((d) => d.action)).toEqual(['retry', 'retry', 'retry', 'retry', 'skip']);
    expect(decisions[0]).toMatchObject({ confirmations: 0, confirmOffset: null });
    expect(decisions[2]).toMatchObject({ confirmations: 1, confirmOffset: 7 });
    expect(decisions[4]).toEqual({ action: 'skip', offset: 7, attempts: 5 });
  });

  it('unavailable failures are never confirmations: an outage halts, never skips', () => {
    const { decisions } = run(Array.from({ length: 15 }, () => unavailable(7)), 'skip');
    expect(decisions.every((d) => d.action !== 'skip')).toBe(true);
    expect(decisions[14]).toEqual({ action: 'halt', attempts: 15 });
    for (const d of decisions.slice(0, 14)) expect(d).toMatchObject({ confirmations: 0, confirmOffset: null });
  });

  it('an unavailable failure between confirmations neither counts nor clears them', () => {
    const { decisions } = run([failing(7), unavailable(7), failing(7)], 'skip');
    expect(decisions[1]).toMatchObject({ action: 'retry', confirmations: 1, confirmOffset: 7 });
    expect(decisions[2]).toMatchObject({ action: 'retry', confirmations: 2, confirmOffset: 7 });
  });

  it('confirmations restart when the isolated offset changes', () => {
    const { decisions } = run([failing(7), failing(7), failing(8), failing(8), failing(7)], 'skip');
    expect(decisions[2]).toMatchObject({ action: 'retry', confirmations: 1, confirmOffset: 8 });
    expect(decisions[3]).toMatchObject({ action: 'retry', confirmations: 2, confirmOffset: 8 });
    expect(decisions[4]).toMatchObject({ action: 'retry', confirmations: 1, confirmOffset: 7 });
  });

  it('confirmations are checked before the attempt limit (the last confirmation skips, not halts)', () => {
    const k = { ...knobs, maxAttempts: 3 };
    expect(run([failing(7), failing(7), failing(7)], 'skip', k).decisions[2]).toEqual({ action: 'skip', offset: 7, attempts: 3 });
    // but a multi-event attempt before them uses up the ladder first
    expect(run([failing(7, 2), failing(7), failing(7)], 'skip', k).decisions[2]).toEqual({ action: 'halt', attempts: 3 });
  });

  it('after 2 skips without a success, the third failing event halts instead', () => {
    const afterTwoSkips: LadderRow = { ...fresh, skipsWithoutSuccess: 2 };
    expect(run([failing(9), failing(9), failing(9)], 'skip', knobs, afterTwoSkips).decisions[2]).toEqual({ action: 'halt', attempts: 3 });
    const afterOneSkip: LadderRow = { ...fresh, skipsWithoutSuccess: 1 };
    expect(run([failing(9), failing(9), failing(9)], 'skip', knobs, afterOneSkip).decisions[2]).toEqual({ action: 'skip', offset: 9, attempts: 3 });
  });

  it('property: any mix of unavailable failures and multi-event failures never skips', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.record({ kind: fc.constant('unavailable' as const), batchSize: fc.integer({ min: 1, max: 5 }), firstOffset: fc.integer({ min: 1, max: 4 }) }),
            fc.record({ kind: fc.constant('failing' as const), batchSize: fc.integer({ min: 2, max: 5 }), firstOffset: fc.integer({ min: 1, max: 4 }) }),
          ),
          { maxLength: 40 },
        ),
        fc.integer({ min: 1, max: 20 }),
        (failures, maxAttempts) => {
          const { decisions } = run(failures, 'skip', { ...knobs, maxAttempts });
          expect(decisions.some((d) => d.action === 'skip')).toBe(false);
          const halt = decisions.findIndex((d) => d.action === 'halt');
          if (halt >= 0) expect(halt + 1).toBe(maxAttempts);
        },
      ),
    );
  });
});
