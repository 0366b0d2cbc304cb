/**
 * The Worker host's logger (docs/operations.md, "Logs"): one JSON object per line through console,
 * which Workers collect (Workers Logs, `wrangler tail`), with the fields the Node host writes:
 * `level`, `time`, `msg`, the caller's fields, and `err` (type, message, stack) on an error line.
 * Each level goes to its own console method, so the platform's own level agrees. The level comes
 * from the RIVULET_LOG_LEVEL variable (default info); the format is always JSON.
 */
import { LOG_LEVELS, type LogFields, type Logger, type LogLevel } from '../../ports/logger.js';

export interface WorkerLogger extends Logger {
  /** Lines below `level` are dropped from now on. */
  setLevel(level: LogLevel): void;
}

type Sink = (line: string) => void;

/** What was thrown, as plain JSON: its type, message and stack when it is an Error, else its text. */
function thrown(error: unknown): unknown {
  if (error instanceof Error) return { type: error.name, message: error.message, stack: error.stack };
  return typeof error === 'string' ? error : String(error);
}

function json(level: LogLevel, message: string, fields: LogFields | undefined, time: string): string {
  const line = { level, time, ...fields, msg: message };
  try {
    return JSON.stringify(line);
  } catch {
    // Fields that cannot be written (a cycle, a BigInt) must not lose the line itself.
    return JSON.stringify({ level, time, msg: message, fieldsError: 'the fields of this line could not be written as JSON' });
  }
}

/** The level a RIVULET_LOG_LEVEL value names; anything else is refused at start. */
export function workerLogLevel(raw: string | undefined): LogLevel {
  if (raw === undefined || raw === '') return 'info';
  if ((LOG_LEVELS as readonly string[]).includes(raw)) return raw as LogLevel;
  throw new Error(`RIVULET_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
}

export function createWorkerLogger(
  level: LogLevel = 'info',
  sinks: Record<LogLevel, Sink> = {
    error: (line) => console.error(line),
    warn: (line) => console.warn(line),
    info: (line) => console.log(line),
    debug: (line) => console.debug(line),
  },
  now: () => Date = () => new Date(),
): WorkerLogger {
  let threshold = LOG_LEVELS.indexOf(level);
  const write = (at: LogLevel, message: string, fields: LogFields | undefined): void => {
    if (LOG_LEVELS.indexOf(at) > threshold) return;
    sinks[at](json(at, message, fields, now().toISOString()));
  };
  return {
    setLevel(next) {
      threshold = LOG_LEVELS.indexOf(next);
    },
    error: (message, error, fields) => write('error', message, { ...fields, err: thrown(error) }),
    warn: (message, fields) => write('warn', message, fields),
    info: (message, fields) => write('info', message, fields),
    debug: (message, fields) => write('debug', message, fields),
  };
}
