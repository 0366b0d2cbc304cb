/**
 * How answers and errors cross a Durable Object RPC boundary in the Worker host. Workers RPC keeps
 * an Error's message but drops its own properties, so a RivuletError would arrive without its
 * code: every Durable Object method answers a `Wire` instead, and the caller rebuilds the error.
 * Errors that are not RivuletErrors are logged where they happened (with a reference) and cross as
 * INTERNAL; a call that never reached the object (the platform refused, overloaded, reset) is
 * UNAVAILABLE for the caller, never a client mistake.
 */
import { RivuletError, type ErrorCode } from '@rivulet/contract';
import { toRivuletError, type ErrorLogger } from '../../http/errors.js';

export type Wire<T> = { ok: true; value: T } | { ok: false; error: { code: ErrorCode; message: string; details?: unknown } };

export async function answer<T>(logger: ErrorLogger, fn: () => T | Promise<T>): Promise<Wire<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (error) {
    const e = toRivuletError(error, logger);
    return { ok: false, error: e.details === undefined ? { code: e.code, message: e.message } : { code: e.code, message: e.message, details: e.details } };
  }
}

/** Awaits a Durable Object call and answers its value, or throws its error as a RivuletError. */
export async function unwrap<T>(what: string, call: () => Promise<Wire<T>>): Promise<T> {
  let wire: Wire<T>;
  try {
    wire = await call();
  } catch (error) {
    throw new RivuletError('UNAVAILABLE', `${what} could not be reached: ${error instanceof Error ? error.message : String(error)}`, undefined, {
      cause: error,
    });
  }
  if (wire.ok) return wire.value;
  throw new RivuletError(wire.error.code, wire.error.message, wire.error.details);
}
