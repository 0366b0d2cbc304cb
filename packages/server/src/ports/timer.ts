/**
 * The timer port: one alarm per stream (a Durable Object alarm on Cloudflare, a timeout in the
 * Node host). Setting replaces the previous alarm; the engine re-arms it at the earliest owed time
 * and clears it when nothing is owed (SEMANTICS §5.1), so a quiet stream never wakes itself.
 */

export interface StreamAlarm {
  set(atMs: number): void;
  clear(): void;
}

export interface AlarmFactory {
  /** The alarm of one stream; `fire` is called when it goes off. */
  create(fire: () => void): StreamAlarm;
}
