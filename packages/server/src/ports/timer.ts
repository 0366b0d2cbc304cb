/**
 * The timer ports. `AlarmFactory`: one alarm per stream (a Durable Object alarm on Cloudflare, a
 * timeout in the Node host). Setting replaces the previous alarm; the engine re-arms it at the
 * earliest owed time and clears it when nothing is owed (protocol §12.2), so a quiet stream never
 * wakes itself. `Timer`: a plain one-shot timer for what the engine times in memory (a call's
 * deadline, a flush soon, a yield to pending I/O); nothing it sets survives the process.
 */

export interface StreamAlarm {
  set(atMs: number): void;
  clear(): void;
}

export interface AlarmFactory {
  /** The alarm of one stream; `fire` is called when it goes off. */
  create(fire: () => void): StreamAlarm;
}

/** Cancels a timer that `Timer.set` started; calling it again, or after the timer ran, does nothing. */
export type CancelTimer = () => void;

export interface Timer {
  /** Calls `fn` once, `delayMs` from now; never synchronously (0 runs it after pending I/O). */
  set(delayMs: number, fn: () => void): CancelTimer;
}

/**
 * The host's own timers (`setTimeout`), on Node and in workerd alike. A delay of 0 is `setImmediate`
 * where there is one (Node): after pending I/O, without the 1 ms a `setTimeout(0)` waits there, which
 * a delivery's poke paid on every copy's lag (docs/performance.md "A 0 ms timer is setImmediate
 * on Node").
 */
export const systemTimer: Timer = {
  set(delayMs, fn) {
    if (delayMs <= 0 && typeof setImmediate === 'function') {
      const immediate = setImmediate(fn);
      return () => clearImmediate(immediate);
    }
    const handle = setTimeout(fn, delayMs);
    return () => clearTimeout(handle);
  },
};
