/**
 * Errors leaving an RPC session (protocol §18.2, the same rule as the HTTP edge): a RivuletError
 * crosses as an Error carrying its `code` and `details` — never its stack or its cause; an error a
 * worker raised on purpose (one carrying `retryable` or `unavailable`) crosses with its message and
 * those flags; calling a method that does not exist is the caller's mistake (INVALID_INPUT);
 * anything else is logged and replaced by an INTERNAL error that says nothing internal.
 */
import { RivuletError } from '@rivulet/contract';
import type { ErrorLogger } from '../http/errors.js';

function bare(message: string, props: Record<string, unknown>): Error {
  const error = Object.assign(new Error(message), props);
  // capnweb sends a returned error's stack when it has one: it must not.
  error.stack = '';
  return error;
}

/** capnweb's own refusals of a call to a member that does not exist. */
const NO_SUCH_MEMBER = /is not a function|does not exist|not a method|Cannot read properties of undefined/i;

export function rpcSendError(logger: ErrorLogger): (error: Error) => Error {
  return (error) => {
    if (error instanceof RivuletError) {
      return bare(error.message, error.details === undefined ? { code: error.code } : { code: error.code, details: error.details });
    }
    const flags = error as { retryable?: unknown; unavailable?: unknown };
    if (typeof flags.retryable === 'boolean' || typeof flags.unavailable === 'boolean') {
      const props: Record<string, unknown> = {};
      if (typeof flags.retryable === 'boolean') props.retryable = flags.retryable;
      if (typeof flags.unavailable === 'boolean') props.unavailable = flags.unavailable;
      return bare(error.message, props);
    }
    if (error instanceof TypeError && NO_SUCH_MEMBER.test(error.message)) {
      return bare(`no such method or property: ${error.message}`, { code: 'INVALID_INPUT' });
    }
    const reference = globalThis.crypto.randomUUID();
    logger.error(`internal error ${reference} in an RPC call`, error);
    return bare(`internal error (reference ${reference})`, { code: 'INTERNAL' });
  };
}
