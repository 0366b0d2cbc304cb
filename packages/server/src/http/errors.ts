/**
 * The one error→response mapping of the HTTP edge (protocol §1.3, §7). A RivuletError answers its code's
 * status; anything else is INTERNAL, logged with its cause, and says nothing internal to the client.
 */
import { RivuletError, type ErrorBody } from '@rivulet/contract';

export interface ErrorLogger {
  error(message: string, error: unknown): void;
  /** Notable facts that are not errors of the server (a subscription halted). */
  warn?(message: string): void;
}

export const consoleLogger: ErrorLogger = {
  error: (message, error) => console.error(message, error),
  warn: (message) => console.warn(message),
};

/**
 * The client went away before its request had fully arrived (a reset or a close mid-body): there is
 * no one left to answer, and it is not a fault of the server. Counted under status 499 (the status
 * label proxies use for a client that closed its request) and logged as one line, without a stack.
 */
export class ClientAborted extends Error {
  constructor(cause?: unknown) {
    super('the client closed the connection before its request had arrived', { cause });
    this.name = 'ClientAborted';
  }
}

/** The status a client abort is counted under (never sent: the client is gone). */
export const CLIENT_ABORTED_STATUS = 499;

export function logClientAbort(logger: ErrorLogger, route: string): void {
  logger.warn?.(`rivulet: ${route}: the client closed the connection before its request had arrived`);
}

export function toRivuletError(error: unknown, logger: ErrorLogger): RivuletError {
  if (error instanceof RivuletError) return error;
  const reference = globalThis.crypto.randomUUID();
  logger.error(`internal error ${reference}`, error);
  return new RivuletError('INTERNAL', `internal error (reference ${reference})`);
}

export function errorResponse(error: unknown, logger: ErrorLogger, route = 'a request'): Response {
  if (error instanceof ClientAborted) {
    logClientAbort(logger, route);
    return new Response(null, { status: CLIENT_ABORTED_STATUS });
  }
  return rivuletErrorResponse(toRivuletError(error, logger));
}

export function rivuletErrorResponse(e: RivuletError): Response {
  const body: ErrorBody = e.toBody();
  return new Response(JSON.stringify(body), {
    status: e.status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
}
