/**
 * The request lines of the logs (docs/operations.md, "Logs"), a request hook (request-hooks.ts):
 * at warn, an answer a client caused that an operator should see — refused credentials, a refused
 * authority, a body or batch over a limit, invalid input — and any request slower than the
 * threshold, each with method, route template, status, error code and duration; and a client that
 * closed its connection before its request had arrived (499, errors.ts). Routine refusals a client
 * program expects (NOT_FOUND, CONFLICT, PRECONDITION_FAILED, TIMEOUT) are not logged, nor is
 * `:waitForEvent` as slow (it waits on purpose).
 *
 * Lines are rate-limited so a flood of bad requests cannot fill a disk: at most `linesPerSecond`
 * in each second; the rest are counted, and the count is written when that second ends (a timer of
 * the Timer port), or with the next line written if that comes first.
 *
 * The hot path: a 2xx or 3xx answer faster than the threshold returns after two comparisons,
 * allocating nothing.
 */
import type { ErrorCode } from '@rivulet/contract';
import type { Logger } from '../ports/logger.js';
import { systemTimer, type CancelTimer, type Timer } from '../ports/timer.js';
import type { AnsweredRequest, RequestHook } from './request-hooks.js';

/** The default of `--log-slow-ms`. */
export const DEFAULT_LOG_SLOW_MS = 1000;
/** The default of request lines written per second at most. */
export const DEFAULT_REQUEST_LINES_PER_SECOND = 20;

export interface RequestLogOptions {
  /** A request answered after at least this many ms is logged as slow; 0 logs none as slow. */
  slowMs?: number | undefined;
  /** At most this many request lines per second (default 20). */
  linesPerSecond?: number | undefined;
  /** Milliseconds of a monotonic clock (default performance.now). */
  now?: (() => number) | undefined;
  /** Times the flush of a suppressed count at the end of its second (default: the host's timers). */
  timer?: Timer | undefined;
}

/** Refusals a client program meets in its normal course: no line for them. */
const ROUTINE: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['NOT_FOUND', 'CONFLICT', 'PRECONDITION_FAILED', 'TIMEOUT']);
const CLIENT_ABORTED = 499;
/** Routes whose answer waits on purpose: never slow. */
const WAITS = ':waitForEvent';

/** The message of a client-caused answer worth a line, or undefined. */
function refusal(answered: AnsweredRequest): string | undefined {
  const { status, errorCode } = answered;
  if (status < 400 || status >= 500) return undefined;
  if (status === CLIENT_ABORTED) return 'the client closed the connection before its request had arrived';
  return errorCode === undefined || !ROUTINE.has(errorCode) ? 'request refused' : undefined;
}

/** A limit of lines per one-second window, with the count of those it refused since the last line it let through. */
export class LineBudget {
  private windowStart = Number.NEGATIVE_INFINITY;
  private used = 0;
  private refused = 0;

  constructor(
    private readonly perSecond: number,
    private readonly now: () => number,
  ) {}

  /** Undefined when the line must be suppressed; else the number suppressed before it (0 for none). */
  take(): number | undefined {
    const at = this.now();
    if (at - this.windowStart >= 1000) {
      this.windowStart = at;
      this.used = 0;
    }
    if (this.used >= this.perSecond) {
      this.refused++;
      return undefined;
    }
    this.used++;
    return this.drain();
  }

  /** The lines refused since the last count was answered; counting starts again from 0. */
  drain(): number {
    const suppressed = this.refused;
    this.refused = 0;
    return suppressed;
  }

  /** Milliseconds until the current window ends (0 once it has). */
  untilWindowEnds(): number {
    return Math.max(0, this.windowStart + 1000 - this.now());
  }
}

export function requestLogHook(logger: Logger, options: RequestLogOptions = {}): RequestHook {
  const warn = logger.warn?.bind(logger);
  if (!warn) return {};
  const slowMs = options.slowMs ?? DEFAULT_LOG_SLOW_MS;
  const slowFrom = slowMs > 0 ? slowMs : Number.POSITIVE_INFINITY;
  const linesPerSecond = options.linesPerSecond ?? DEFAULT_REQUEST_LINES_PER_SECOND;
  const budget = new LineBudget(linesPerSecond, options.now ?? (() => performance.now()));
  const timer = options.timer ?? systemTimer;
  const suppressedLine = (suppressed: number) => warn('request lines suppressed', { suppressed, linesPerSecond });
  // A flood that ends has its count written when its second ends, not when the next line comes.
  let flush: CancelTimer | undefined;
  const flushAtWindowEnd = () => {
    flush ??= timer.set(budget.untilWindowEnds(), () => {
      flush = undefined;
      const suppressed = budget.drain();
      if (suppressed > 0) suppressedLine(suppressed);
    });
  };
  return {
    onAnswered(answered) {
      if (answered.status < 400 && answered.durationMs < slowFrom) return;
      const refused = refusal(answered);
      if (refused === undefined && (answered.durationMs < slowFrom || answered.route.endsWith(WAITS))) return;
      const suppressed = budget.take();
      if (suppressed === undefined) {
        flushAtWindowEnd();
        return;
      }
      if (flush) {
        // The count goes with this line; the timer has nothing left to write.
        flush();
        flush = undefined;
      }
      if (suppressed > 0) suppressedLine(suppressed);
      warn(refused ?? 'slow request', {
        method: answered.method,
        route: answered.route,
        status: answered.status,
        ...(answered.errorCode !== undefined ? { code: answered.errorCode } : {}),
        durationMs: Math.round(answered.durationMs * 10) / 10,
      });
    },
  };
}
