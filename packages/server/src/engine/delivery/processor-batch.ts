/**
 * One batch to a hosted processor (protocol §20): the call to its processEventBatch carries one
 * event and a `reportDeliveryResult` callback, and the batch ends with the first of: a report
 * (judged against the event, the checkpoint and the head), a failure of the call itself, the
 * connection closing, or the delivery timeout. The call's own result is never awaited for the
 * outcome, so a processor may append to its own stream while it folds.
 */
import type { CommittedEvent, ProcessorBatch, ProcessorReportReceipt } from '@rivulet/contract';
import { judgeReport, type ReportJudgement } from '../../core/processor-wake.js';
import type { Timer } from '../../ports/timer.js';
import type { HostedCallable, HostedFailure } from './processor-port.js';
import { errorText } from '../receivers/receiver.js';

export interface Pending {
  finish(outcome: BatchOutcome): void;
}

export type BatchOutcome = { kind: 'judged'; judged: ReportJudgement } | { kind: 'lost'; failure: HostedFailure };

/** A hosted connection: the processor's callable, its checkpoint and counters. */
export interface Hosted {
  run: string;
  callable: HostedCallable;
  /** The processor's last known checkpoint: its wake answer, then every checkpoint that grew. */
  checkpoint: number;
  startedAt: string;
  batchesSent: number;
  eventsSent: number;
  /** When it last woke or finished a batch (idle teardown counts from here). */
  lastActiveAt: number;
  pending: Pending | null;
  closed: boolean;
}

/** The batch's coordinates (everything but the event and the report callback). */
export type BatchFields = Omit<ProcessorBatch, 'events' | 'reportDeliveryResult'>;

export function callBatch(
  hosted: Hosted,
  fields: BatchFields,
  event: CommittedEvent,
  judge: { checkpoint: number; head(): number },
  timeoutMs: number,
  timer: Timer,
): Promise<BatchOutcome> {
  return new Promise<BatchOutcome>((resolve) => {
    let done = false;
    const pending: Pending = {
      finish: (result) => {
        if (done) return;
        done = true;
        cancelTimer();
        if (hosted.pending === pending) hosted.pending = null;
        resolve(result);
      },
    };
    const cancelTimer = timer.set(timeoutMs, () =>
      pending.finish({ kind: 'lost', failure: { kind: 'unavailable', error: `the processor did not report a result within ${timeoutMs} ms` } }),
    );
    hosted.pending = pending;
    const reportDeliveryResult = (result: unknown): ProcessorReportReceipt => {
      if (done) return { accepted: false, reason: 'this batch is no longer in flight (it timed out, or its connection closed)' };
      const judged = judgeReport(result, { offset: event.offset, checkpoint: judge.checkpoint, head: judge.head() });
      pending.finish({ kind: 'judged', judged });
      return judged.kind === 'progress' ? { accepted: true } : { accepted: false, reason: judged.error };
    };
    // Not awaited for the result: only a failure of the call itself ends the batch here.
    hosted.callable.send({ ...fields, events: [event], reportDeliveryResult }).then(
      (failure) => {
        if (failure) pending.finish({ kind: 'lost', failure });
      },
      (error: unknown) => pending.finish({ kind: 'lost', failure: { kind: 'unavailable', error: errorText(error) } }),
    );
  });
}
