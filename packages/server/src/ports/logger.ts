/**
 * Where the server's messages go: the one logger shape every layer takes (the engine through
 * compose.ts, the edges through http/errors.ts, the hosts), so a host gives one logger to all.
 */
export interface Logger {
  /** A fault of the server, with what was thrown. */
  error(message: string, error: unknown): void;
  /** A notable fact that is no fault of the server (a subscription halted, a client that left). */
  warn?(message: string): void;
}
