/**
 * The one error→response mapping of the HTTP edge (protocol §1.3, §7). A RivuletError answers its code's
 * status; anything else is INTERNAL, logged with its cause, and says nothing internal to the client.
 */
import { RivuletError, type ErrorBody, type ErrorCode } from '@rivulet/contract';
import type { Logger } from '../ports/logger.js';

/** The logger the edges take (ports/logger.ts, the same every layer takes). */
export type ErrorLogger = Logger;

export const consoleLogger: ErrorLogger = {
  error: (message, error) => console.error(message, error),
  warn: (message) => console.warn(message),
};

/**
 * The client went away before its request had fully arrived (a reset or a close mid-body): there is
 * no one left to answer, and it is not a fault of the server. Counted under status 499 (the status
 * label proxies use for a client that closed its request); the request log (request-log.ts) writes
 * it as one warn line, without a stack, under its rate limit.
 */
export class ClientAborted extends Error {
  constructor(cause?: unknown) {
    super('the client closed the connection before its request had arrived', { cause });
    this.name = 'ClientAborted';
  }
}

/** The status a client abort is counted under (never sent: the client is gone). */
const CLIENT_ABORTED_STATUS = 499;

/** A RivuletError as it is; anything else is INTERNAL, logged with its reference (and `route`, when known). */
export function toRivuletError(error: unknown, logger: ErrorLogger, route?: string): RivuletError {
  if (error instanceof RivuletError) return error;
  const reference = globalThis.crypto.randomUUID();
  logger.error(`internal error ${reference}`, error, route === undefined ? { reference } : { reference, route });
  return new RivuletError('INTERNAL', `internal error (reference ${reference})`);
}

/** What an error answers: its status, its JSON text (empty for a client abort), and its code. */
export interface ErrorAnswer {
  status: number;
  text: string;
  code: ErrorCode | undefined;
}

/**
 * The one mapping from a thrown error to its answer, for every entrance: a client abort is counted
 * under 499 (its line is the request log's); anything else answers as toRivuletError maps it.
 * `route` names the request in the line of an internal error.
 */
export function errorAnswer(error: unknown, logger: ErrorLogger, route?: string): ErrorAnswer {
  if (error instanceof ClientAborted) return { status: CLIENT_ABORTED_STATUS, text: '', code: undefined };
  const e = toRivuletError(error, logger, route);
  return { status: e.status, text: JSON.stringify(e.toBody()), code: e.code };
}

export function answerResponse(answer: ErrorAnswer): Response {
  if (answer.text === '') return new Response(null, { status: answer.status });
  return new Response(answer.text, { status: answer.status, headers: { 'content-type': 'application/json; charset=utf-8' } });
}

export function errorResponse(error: unknown, logger: ErrorLogger, route?: string): Response {
  return answerResponse(errorAnswer(error, logger, route));
}

export function rivuletErrorResponse(e: RivuletError): Response {
  const body: ErrorBody = e.toBody();
  return new Response(JSON.stringify(body), {
    status: e.status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
}
