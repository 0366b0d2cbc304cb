/**
 * Where the server's messages go: the one logger shape every layer takes (the engine through
 * compose.ts, the edges through http/errors.ts, the hosts), so a host gives one logger to all.
 *
 * A line is a message plus structured fields (stream path, subscription key, offsets, route,
 * status…), which a host writes as one JSON object or as a readable line (docs/operations.md,
 * "Logs"). Levels, most severe first: error, warn, info, debug. Only `error` is required: a logger
 * without a level drops its lines (tests give just what they look at).
 */

/** The levels a host may be set to, most severe first. */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The structured part of a line: plain JSON values, named in camelCase. */
export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  /** A fault of the server, with what was thrown. */
  error(message: string, error: unknown, fields?: LogFields): void;
  /** A notable fact that is no fault of the server (a client refused, a stream index out of date). */
  warn?(message: string, fields?: LogFields): void;
  /** What an operator follows: start, shutdown, halts, resumes, cursor sets, skips, drops, destroys. */
  info?(message: string, fields?: LogFields): void;
  /** Detail for finding a fault. */
  debug?(message: string, fields?: LogFields): void;
}
