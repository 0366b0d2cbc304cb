/**
 * What the processor driver (processor-driver.ts) needs from whoever reaches processor hosts: the
 * wake of the ITX port (ports/itx.ts; engine/receivers/itx.ts composes it) and the
 * processEventBatch callable it answers.
 */
import type { ItxPort } from '../../ports/itx.js';
import type { Timer } from '../../ports/timer.js';

export type { HostedCallable, HostedFailure, WakeOutcome } from '../../ports/itx.js';

/** Evaluates a processor-wake expression from a project's root and calls it (protocol §20.3). */
export type ProcessorWaker = Pick<ItxPort, 'wake'>;

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
