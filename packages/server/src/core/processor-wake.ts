/**
 * Judging what a hosted processor answers (protocol §20.3–§20.5), as pure functions:
 *
 * - the wake answer `{streamId, checkpointOffset, processEventBatch}` must name this stream's
 *   lifetime, carry a checkpoint 0 ≤ checkpoint ≤ head, and a callable; anything else is a failing
 *   delivery (the host answered, wrongly);
 * - a batch's report `{outcome: "ok", checkpointOffset}` is progress only when the checkpoint covers
 *   the event sent (so it grew past the last known one) and is not beyond the head; a checkpoint
 *   that did not grow is not progress, it counts as a failing attempt (else a host that keeps
 *   answering "ok" without folding would be fed the same event forever);
 *   `{outcome: "error", error: {message, retryable}}` is failing, or fatal with `retryable: false`.
 */
import { Limits, ProcessorDeliveryResultSchema } from '@rivulet/contract';
import type { FailureKind } from './ladder.js';

export interface WakeAnswer {
  streamId: unknown;
  checkpointOffset: unknown;
}

export type WakeJudgement = { ok: true; checkpoint: number } | { ok: false; error: string };

function shown(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
}

function cut(text: string): string {
  return text.length > Limits.errorTextMax ? `${text.slice(0, Limits.errorTextMax - 1)}…` : text;
}

/** `answer` is null when the host answered something that is not an object. */
export function judgeWakeAnswer(
  answer: WakeAnswer | null,
  callable: boolean,
  expected: { streamId: string; head: number },
): WakeJudgement {
  if (answer === null) {
    return { ok: false, error: 'the processor answered the wake with something that is not {streamId, checkpointOffset, processEventBatch}' };
  }
  if (answer.streamId !== expected.streamId) {
    return {
      ok: false,
      error: `the processor answered the wake with streamId ${shown(answer.streamId)}, but this stream's lifetime is "${expected.streamId}" (a host whose checkpoint belongs to another lifetime must start over)`,
    };
  }
  const checkpoint = answer.checkpointOffset;
  if (typeof checkpoint !== 'number' || !Number.isSafeInteger(checkpoint) || checkpoint < 0) {
    return { ok: false, error: `the processor answered the wake with checkpointOffset ${shown(checkpoint)}, which is not a non-negative integer` };
  }
  if (checkpoint > expected.head) {
    return { ok: false, error: `the processor answered the wake with checkpointOffset ${checkpoint}, beyond this stream's head ${expected.head}` };
  }
  if (!callable) return { ok: false, error: 'the processor answered the wake without a processEventBatch function' };
  return { ok: true, checkpoint };
}

export type ReportJudgement =
  | { kind: 'progress'; checkpoint: number }
  | { kind: 'failure'; failure: Exclude<FailureKind, 'unavailable'>; error: string };

/**
 * Judges a report for the batch holding `offset`, sent when the processor's last known checkpoint
 * was `checkpoint` (always below `offset`).
 */
export function judgeReport(result: unknown, batch: { offset: number; checkpoint: number; head: number }): ReportJudgement {
  const parsed = ProcessorDeliveryResultSchema.safeParse(result);
  if (!parsed.success) {
    return {
      kind: 'failure',
      failure: 'failing',
      error: `the processor reported ${shown(result)} for offset ${batch.offset}, which is neither {outcome: "ok", checkpointOffset} nor {outcome: "error", error: {message, retryable?}}`,
    };
  }
  const report = parsed.data;
  if (report.outcome === 'error') {
    return {
      kind: 'failure',
      failure: report.error.retryable === false ? 'fatal' : 'failing',
      error: cut(`the processor failed on offset ${batch.offset}: ${report.error.message}`),
    };
  }
  const reported = report.checkpointOffset;
  if (reported > batch.head) {
    return { kind: 'failure', failure: 'failing', error: `the processor reported checkpoint ${reported} for offset ${batch.offset}, beyond this stream's head ${batch.head}` };
  }
  if (reported <= batch.checkpoint) {
    return {
      kind: 'failure',
      failure: 'failing',
      error: `the processor reported checkpoint ${reported} for offset ${batch.offset}: its checkpoint did not grow (it was ${batch.checkpoint}), which is not progress`,
    };
  }
  if (reported < batch.offset) {
    return { kind: 'failure', failure: 'failing', error: `the processor reported checkpoint ${reported}, which does not cover offset ${batch.offset} it was sent` };
  }
  return { kind: 'progress', checkpoint: reported };
}
