/**
 * The delivery timeout (protocol §12.7) of the calls of one flight, one after another, on one
 * timer. Setting and clearing a timer for every call cost more than a webhook's envelope: Node
 * keeps one list per timeout length, and a list that falls empty at every answer is torn down and
 * built again with the next call (bench/README.md, receivers). Here a call only notes its
 * deadline; the timer is armed when none is, and when it fires while a later call is under way it
 * is armed again for what remains of that call's time, so each call still ends at its own deadline.
 *
 * "What remains" is read from the clock, and the timer's own time decides when the clock cannot
 * (a clock that stands still): a call that was already the current one when the timer was armed
 * has had its full time once the timer fires, and ends then.
 */
import type { Clock } from '../../ports/clock.js';
import type { CancelTimer, Timer } from '../../ports/timer.js';

export class CallDeadline {
  private cancel: CancelTimer | undefined;
  /** The call under way: its number, its deadline by the clock and what ends it. */
  private call = 0;
  private deadline = 0;
  private expire: (() => void) | undefined;
  /** The call that was current when the timer was last armed, and when (by the clock) it fires. */
  private armedFor = 0;
  private firesAt = 0;

  constructor(
    private readonly timer: Timer,
    private readonly clock: Clock,
  ) {}

  /** Calls `expire` once `ms` have passed, unless `clear` comes first. */
  start(ms: number, expire: () => void): void {
    const now = this.clock.now();
    this.call++;
    this.deadline = now + ms;
    this.expire = expire;
    // An armed timer that fires after this deadline would end the call late: arm it anew.
    if (this.cancel !== undefined && this.firesAt > this.deadline) this.disarm();
    if (this.cancel === undefined) this.arm(now, ms);
  }

  /** The call ended: its deadline no longer applies (the timer stays for the next call). */
  clear(): void {
    this.expire = undefined;
  }

  /** The flight ended: no timer is left behind. */
  close(): void {
    this.expire = undefined;
    this.disarm();
  }

  private arm(now: number, ms: number): void {
    this.armedFor = this.call;
    this.firesAt = now + ms;
    this.cancel = this.timer.set(ms, () => this.fire());
  }

  private disarm(): void {
    this.cancel?.();
    this.cancel = undefined;
  }

  private fire(): void {
    this.cancel = undefined;
    const expire = this.expire;
    if (!expire) return;
    const now = this.clock.now();
    const remaining = this.deadline - now;
    if (this.armedFor === this.call || remaining <= 0) {
      this.expire = undefined;
      expire();
      return;
    }
    this.arm(now, remaining);
  }
}
