/**
 * The one error→response mapping of the HTTP edge (API.md §4). A RivuletError answers its code's
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

export function toRivuletError(error: unknown, logger: ErrorLogger): RivuletError {
  if (error instanceof RivuletError) return error;
  const reference = globalThis.crypto.randomUUID();
  logger.error(`internal error ${reference}`, error);
  return new RivuletError('INTERNAL', `internal error (reference ${reference})`);
}

export function errorResponse(error: unknown, logger: ErrorLogger): Response {
  return rivuletErrorResponse(toRivuletError(error, logger));
}

export function rivuletErrorResponse(e: RivuletError): Response {
  const body: ErrorBody = e.toBody();
  return new Response(JSON.stringify(body), {
    status: e.status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
}
