/**
 * The Node host's logger (docs/operations.md, "Logs"): pino behind the logger port. JSON lines by
 * default when the output is not a terminal, readable lines (pino-pretty) when it is; `format`
 * decides otherwise. Every line has `level` (its name), `time` (ISO 8601), `msg` and the fields
 * the caller gave; an error line carries what was thrown under `err` (type, message, stack).
 *
 * Writes are synchronous: lines are few (request lines are rate-limited, http/request-log.ts), and
 * a line written just before the process exits is never lost in a buffer.
 */
import { pino, stdSerializers, stdTimeFunctions } from 'pino';
import { PinoPretty } from 'pino-pretty';
import { LOG_LEVELS, type LogFields, type Logger, type LogLevel } from '../../ports/logger.js';

export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export const DEFAULT_LOG_LEVEL: LogLevel = 'info';

export interface NodeLoggerOptions {
  /** Lines below this level are dropped (default info). */
  level?: LogLevel | undefined;
  /** Default: pretty when the destination is a terminal, else json. */
  format?: LogFormat | undefined;
  /** Where lines go (default: standard output). */
  destination?: NodeJS.WritableStream | undefined;
  /** Whether the destination is a terminal (default: whether standard output is one). */
  isTTY?: boolean | undefined;
}

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

export function isLogFormat(value: string): value is LogFormat {
  return (LOG_FORMATS as readonly string[]).includes(value);
}

/** The format a logger writes: the one asked for, else pretty on a terminal and JSON lines elsewhere. */
export function chooseLogFormat(format: LogFormat | undefined, isTTY: boolean): LogFormat {
  return format ?? (isTTY ? 'pretty' : 'json');
}

/** A pino logger as the logger port. */
export function createNodeLogger(options: NodeLoggerOptions = {}): Logger {
  const isTTY = options.isTTY ?? process.stdout.isTTY === true;
  const format = chooseLogFormat(options.format, isTTY);
  const destination = options.destination ?? pino.destination({ dest: 1, sync: true });
  const stream =
    format === 'pretty'
      ? PinoPretty({ destination, sync: true, colorize: isTTY && options.destination === undefined, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true })
      : destination;
  const base = pino(
    {
      level: options.level ?? DEFAULT_LOG_LEVEL,
      base: null,
      timestamp: stdTimeFunctions.isoTime,
      serializers: { err: stdSerializers.err },
      // JSON lines name their level ("warn"), as the Worker host's do; pino-pretty reads numbers.
      ...(format === 'json' ? { formatters: { level: (label: string) => ({ level: label }) } } : {}),
    },
    stream,
  );
  const at =
    (level: Exclude<LogLevel, 'error'>) =>
    (message: string, fields?: LogFields): void => {
      if (fields === undefined) base[level](message);
      else base[level](fields, message);
    };
  return {
    error: (message, error, fields) => base.error({ ...fields, err: error }, message),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
  };
}
