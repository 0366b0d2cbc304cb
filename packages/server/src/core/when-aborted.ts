/**
 * Runs a function when a signal aborts, including when it already has: a listener added to an
 * aborted signal never runs, and a caller can go away (or the server start stopping) during any
 * await between receiving a signal and listening to it.
 */

/** Calls `fn` once `signal` aborts — at once when it already has; answers a function that stops listening. */
export function whenAborted(signal: AbortSignal | undefined, fn: () => void): () => void {
  if (!signal) return noop;
  if (signal.aborted) {
    fn();
    return noop;
  }
  signal.addEventListener('abort', fn, { once: true });
  return () => signal.removeEventListener('abort', fn);
}

function noop(): void {}
