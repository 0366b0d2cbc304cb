/**
 * What the processor driver (processor-driver.ts) needs from whoever reaches processor hosts: a
 * waker that evaluates a processor-wake expression and calls the host (rpc/processor-waker.ts on
 * both hosts, behind the hub on Cloudflare), and the processEventBatch callable it answers.
 */
import type { ItxExpression, ProcessorBatch, ProcessorWakeRequest } from '@rivulet/contract';
import type { FailureKind } from '../../core/ladder.js';
import type { WakeAnswer } from '../../core/processor-wake.js';
import type { Timer } from '../../ports/timer.js';

/** A failure the host side reports without a result (its call threw, or its session broke). */
export interface HostedFailure {
  kind: FailureKind;
  error: string;
}

/** The processEventBatch callback a host answered a wake with (an RPC stub behind this port). */
export interface HostedCallable {
  /**
   * Calls processEventBatch(batch). Answers null once the call returned (its value is ignored: the
   * result comes through `batch.reportDeliveryResult`), or the failure when it threw or broke.
   */
  send(batch: ProcessorBatch): Promise<HostedFailure | null>;
  /** Calls `listener` once when the host's session breaks. */
  onBroken(listener: (error: string) => void): void;
  /** Releases the reference (idempotent). */
  close(): void;
}

export type WakeOutcome =
  | { ok: true; answer: WakeAnswer | null; callable: HostedCallable | undefined }
  | ({ ok: false } & HostedFailure);

/** Evaluates a processor-wake expression from a project's root and calls it (rpc/processor-waker.ts). */
export interface ProcessorWaker {
  wake(projectId: string | null, expression: ItxExpression, request: ProcessorWakeRequest): Promise<WakeOutcome>;
}

/** Races `promise` against a timer; a result arriving after the timer goes to `late`. */
export function within<T>(timer: Timer, promise: Promise<T>, ms: number, onTimeout: () => T, late: (value: T) => void): Promise<T> {
  return new Promise<T>((resolve) => {
    let done = false;
    const cancelTimer = timer.set(ms, () => {
      done = true;
      resolve(onTimeout());
    });
    promise.then(
      (value) => {
        if (done) late(value);
        else {
          done = true;
          cancelTimer();
          resolve(value);
        }
      },
      (error: unknown) => {
        if (done) return;
        done = true;
        cancelTimer();
        resolve(Promise.reject(error) as never);
      },
    );
  });
}
