/** Time and randomness are ports so that the core stays pure and tests stay deterministic. */

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** A random RFC 4122 version 4 UUID. */
  uuid(): string;
}

export const systemClock: Clock = { now: () => Date.now() };

export const systemRandom: Random = {
  next: () => Math.random(),
  uuid: () => globalThis.crypto.randomUUID(),
};
