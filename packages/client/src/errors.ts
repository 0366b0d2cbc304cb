/**
 * How failures reach SDK callers: always as the one RivuletError (protocol §7). A server answer
 * with the error body of protocol §1.3 keeps its code, message and details; any other non-2xx
 * answer (a proxy's 502 page, a truncated body) gets the code whose status it carries, or
 * UNAVAILABLE for gateway failures and INTERNAL otherwise; a request that never got an answer is
 * UNAVAILABLE with the network error as `cause`. Aborts are not failures: the caller's abort reason
 * is rethrown.
 */
import { ERROR_CODES, ERROR_STATUS, RivuletError, isErrorCode, type ErrorCode } from '@rivulet/contract';

const GATEWAY_STATUSES = new Set([502, 503, 504]);

function codeForStatus(status: number): ErrorCode {
  const exact = ERROR_CODES.find((code) => ERROR_STATUS[code] === status);
  if (exact) return exact;
  if (GATEWAY_STATUSES.has(status)) return 'UNAVAILABLE';
  return status >= 400 && status < 500 ? 'INVALID_INPUT' : 'INTERNAL';
}

function errorBodyOf(text: string): { code: ErrorCode; message: string; details?: unknown } | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  const error = (body as { error?: unknown } | null)?.error as Record<string, unknown> | undefined;
  if (typeof error !== 'object' || error === null) return undefined;
  if (!isErrorCode(error.code) || typeof error.message !== 'string') return undefined;
  return { code: error.code, message: error.message, ...('details' in error ? { details: error.details } : {}) };
}

/** The error of a non-2xx response; reads (and so consumes) its body. */
export async function errorFromResponse(response: Response): Promise<RivuletError> {
  let text = '';
  try {
    text = await response.text();
  } catch {
    // The status alone still says what went wrong.
  }
  const body = errorBodyOf(text);
  if (body) return new RivuletError(body.code, body.message, body.details);
  const code = codeForStatus(response.status);
  const snippet = text.trim().slice(0, 200);
  const statusText = response.statusText ? ` ${response.statusText}` : '';
  return new RivuletError(code, `server answered ${response.status}${statusText}${snippet ? `: ${snippet}` : ''}`, {
    status: response.status,
  });
}

export function networkError(url: string, cause: unknown): RivuletError {
  const reason = cause instanceof Error ? causeMessage(cause) : String(cause);
  return new RivuletError('UNAVAILABLE', `cannot reach ${url}: ${reason}`, undefined, { cause });
}

/** undici reports "fetch failed" and hides the useful part (ECONNREFUSED …) in its own cause. */
function causeMessage(error: Error): string {
  const inner = error.cause;
  if (inner instanceof Error && inner.message && inner.message !== error.message) {
    return `${error.message} (${inner.message})`;
  }
  return error.message;
}

/** What to throw when the caller's signal ended an operation: its own reason, untouched. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}
