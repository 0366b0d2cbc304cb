/**
 * `append(path, events, { retry })`: an append sent again after a failure that may or may not have
 * reached the server (protocol §4.2). Safe only when every event has an idempotency key: a repeat
 * then answers the stored events and writes nothing, so a retried append is committed once. Without
 * keys the SDK refuses before sending anything.
 *
 * What is retried: `UNAVAILABLE` — the server could not be reached, the answer broke off, or the
 * server answered 503 (starting, shutting down, storage). Nothing else: every other code is an
 * answer that a repeat would only give again. Attempts are bounded, with exponential backoff and
 * jitter between them; the caller's signal ends the wait at once.
 */
import { RivuletError } from '@rivulet/contract';
import { abortReason } from './errors.js';

export interface RetryOptions {
  /** Attempts in all, the first included: 1–20 (default 5). */
  attempts?: number | undefined;
  /** Delay before the second attempt (default 100 ms); it doubles after each failure. */
  initialDelayMs?: number | undefined;
  /** Longest delay between attempts (default 2000 ms). */
  maxDelayMs?: number | undefined;
}

export const MAX_RETRY_ATTEMPTS = 20;

interface Plan {
  attempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
}

function planOf(retry: true | RetryOptions): Plan {
  const options = retry === true ? {} : retry;
  const attempts = options.attempts ?? 5;
  if (!Number.isSafeInteger(attempts) || attempts < 1 || attempts > MAX_RETRY_ATTEMPTS) {
    throw new RivuletError('INVALID_INPUT', `retry.attempts must be an integer from 1 to ${MAX_RETRY_ATTEMPTS}, got ${String(attempts)}`);
  }
  const initialDelayMs = options.initialDelayMs ?? 100;
  const maxDelayMs = options.maxDelayMs ?? 2000;
  for (const [name, value] of [['initialDelayMs', initialDelayMs], ['maxDelayMs', maxDelayMs]] as const) {
    if (!Number.isFinite(value) || value < 0) throw new RivuletError('INVALID_INPUT', `retry.${name} must be a number of milliseconds ≥ 0, got ${String(value)}`);
  }
  return { attempts, initialDelayMs, maxDelayMs };
}

/** Refuses a retry that could commit an event twice: every event needs an idempotency key. */
export function checkRetryable(events: ReadonlyArray<{ idempotencyKey?: string | undefined }>): void {
  const missing = events.findIndex((event) => typeof event?.idempotencyKey !== 'string' || event.idempotencyKey === '');
  if (missing === -1) return;
  const which = events.length === 1 ? 'the event has' : `event ${missing} (counting from 0) has`;
  throw new RivuletError(
    'INVALID_INPUT',
    `append with retry needs an idempotencyKey on every event, and ${which} none: a retried append without one could be committed twice`,
  );
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Runs `attempt` until it succeeds, fails with another code than UNAVAILABLE, or the attempts run out. */
export async function withRetry<T>(retry: true | RetryOptions, signal: AbortSignal | undefined, attempt: () => Promise<T>): Promise<T> {
  const plan = planOf(retry);
  let delay = plan.initialDelayMs;
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      const retryable = error instanceof RivuletError && error.code === 'UNAVAILABLE';
      if (!retryable || n >= plan.attempts || signal?.aborted) throw error;
    }
    // Between half and all of the delay: clients that failed together do not return together.
    await pause(Math.min(delay, plan.maxDelayMs) * (0.5 + Math.random() / 2), signal);
    delay *= 2;
  }
}
