/**
 * The receiver calls of one flight (sender.ts): one call out at a time, each ended as *unavailable*
 * by the delivery timeout, which also aborts it through its signal (protocol §12.7). A webhook
 * flight makes one call per event while each succeeds, so what every call costs on its own is kept
 * small (docs/performance.md "Fixed work per webhook call"):
 *
 * - one AbortController serves the flight's calls; a timeout aborts it and the next call gets a new
 *   one, so a signal handed to a call is aborted exactly when that call timed out (a receiver
 *   removes its listeners once its call has ended);
 * - one timer covers the flight's calls: it is set at the first call's deadline, and when it goes
 *   off before the deadline of the call then out it is set again for the rest. A call therefore
 *   times out at its own deadline (clock time when it started plus the timeout), as with a timer
 *   of its own, without setting and clearing one per call. `end()` clears it with the flight.
 *
 * The deadline is read from the Clock port, the timer from the Timer port: both are the host's
 * (ports/clock.ts, ports/timer.ts).
 */
import type { Clock } from '../../ports/clock.js';
import type { CancelTimer, Timer } from '../../ports/timer.js';
import { errorText, type DeliveryOutcome } from '../receivers/receiver.js';

interface Out {
  deadline: number;
  timeoutMs: number;
  settle(outcome: DeliveryOutcome): void;
}

/**
 * The signal of calls that cannot be cut short: nothing ever aborts it. Made at its first use, not
 * when the module loads: workerd refuses to start a Worker that makes one in its global scope.
 */
let neverAborted: AbortSignal | undefined;

export class FlightCalls {
  private controller: AbortController | undefined;
  private out: Out | undefined;
  private cancel: CancelTimer | undefined;
  /** When the timer that is set goes off, in clock time. */
  private firesAt = 0;

  /**
   * `abortable` false: the flight's receiver never reads the signal (Receiver.ignoresSignal), so its
   * calls get one that never aborts and no AbortController is made: making one cost several
   * microseconds, once per flight, which is once per event for a live copy.
   */
  constructor(
    private readonly clock: Clock,
    private readonly timer: Timer,
    private readonly abortable = true,
  ) {}

  /**
   * One call: `send` with the flight's signal, settled by its outcome, by its rejection (*failing*)
   * or by the timeout (*unavailable*), whichever comes first. A synchronous throw rejects.
   */
  call(send: (signal: AbortSignal) => Promise<DeliveryOutcome>, timeoutMs: number): Promise<DeliveryOutcome> {
    const signal = this.abortable ? (this.controller ??= new AbortController()).signal : (neverAborted ??= new AbortController().signal);
    const deadline = this.clock.now() + timeoutMs;
    return new Promise<DeliveryOutcome>((resolve, reject) => {
      let settled = false;
      const out: Out = {
        deadline,
        timeoutMs,
        settle: (outcome) => {
          if (settled) return;
          settled = true;
          if (this.out === out) this.out = undefined;
          resolve(outcome);
        },
      };
      this.out = out;
      this.arm(deadline);
      let sent: Promise<DeliveryOutcome>;
      try {
        sent = send(signal);
      } catch (error) {
        settled = true;
        if (this.out === out) this.out = undefined;
        reject(error);
        return;
      }
      sent.then(out.settle, (error: unknown) => out.settle({ ok: false, kind: 'failing', error: errorText(error) }));
    });
  }

  /** The flight ended: no timer of it stays set. */
  end(): void {
    this.cancel?.();
    this.cancel = undefined;
    this.out = undefined;
  }

  /** Makes sure the timer goes off by `deadline` (a timer set to go off sooner is set again then). */
  private arm(deadline: number): void {
    if (this.cancel !== undefined && this.firesAt <= deadline) return;
    this.cancel?.();
    this.firesAt = deadline;
    this.cancel = this.timer.set(Math.max(0, deadline - this.clock.now()), this.fire);
  }

  private readonly fire = (): void => {
    this.cancel = undefined;
    const out = this.out;
    if (!out) return;
    if (this.clock.now() < out.deadline) {
      this.arm(out.deadline);
      return;
    }
    const controller = this.controller;
    this.controller = undefined;
    out.settle({ ok: false, kind: 'unavailable', error: `delivery timed out after ${out.timeoutMs} ms` });
    controller?.abort();
  };
}
