/**
 * The caller's signal for hosts/node/outbound.ts: it ends a request whatever stage it is in (name
 * resolution, connect, answer; protocol §17.4). The calls of one flight share one signal
 * (engine/delivery/flight-calls.ts), so each waiting request joins a set behind the signal's one
 * abort listener instead of adding and removing a listener of its own per POST.
 */

export function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('the request was aborted');
}

/**
 * What waits on each signal, behind one abort listener per signal: the send loop hands every call of
 * a flight the same signal (engine/delivery/flight-calls.ts), so adding and removing a listener per
 * request was most of what the signal cost a POST. The listener stays on its signal (an empty set
 * once nothing waits) and goes with it.
 */
const waitingOn = new WeakMap<AbortSignal, Set<() => void>>();

/** Calls `fn` when `signal` aborts, until the returned function is called. */
export function onAbortOf(signal: AbortSignal, fn: () => void): () => void {
  let waiting = waitingOn.get(signal);
  if (!waiting) {
    const fns = new Set<() => void>();
    waiting = fns;
    waitingOn.set(signal, fns);
    signal.addEventListener(
      'abort',
      () => {
        waitingOn.delete(signal);
        for (const f of [...fns]) f();
        fns.clear();
      },
      { once: true },
    );
  }
  const set = waiting;
  set.add(fn);
  return () => set.delete(fn);
}

/** Resolves `promise` unless the signal ends first. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    const stop = onAbortOf(signal, () => reject(abortError(signal)));
    promise.then(resolve, reject).finally(stop);
  });
}
