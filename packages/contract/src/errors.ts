/**
 * Errors are data (protocol §7; architecture.md, Practices): a closed set of string codes, one
 * error class, and one code→status table used only at the HTTP edge. Nothing anywhere branches on
 * message text.
 */

export const ERROR_STATUS = {
  INVALID_INPUT: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  TIMEOUT: 408,
  CONFLICT: 409,
  PRECONDITION_FAILED: 412,
  PAYLOAD_TOO_LARGE: 413,
  LIMIT_EXCEEDED: 422,
  UNAVAILABLE: 503,
  INTERNAL: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_STATUS, value);
}

export interface ErrorBody {
  error: { code: ErrorCode; message: string; details?: unknown };
}

/** The one error type of Rivulet, on the server and in the SDK alike. */
export class RivuletError extends Error {
  override readonly name = 'RivuletError';
  readonly code: ErrorCode;
  readonly details: unknown;

  constructor(code: ErrorCode, message: string, details?: unknown, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  toBody(): ErrorBody {
    const error: ErrorBody['error'] = { code: this.code, message: this.message };
    if (this.details !== undefined) error.details = this.details;
    return { error };
  }
}

export function isRivuletError(value: unknown): value is RivuletError {
  return value instanceof RivuletError;
}
