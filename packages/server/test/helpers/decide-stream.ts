/**
 * A stream as decideAppend sees it (src/core/decide-append.ts), for the core tests of
 * src/core/decide-append*.test.ts, and the inputs those tests append.
 */
import { EventType, RivuletError, type CommittedEvent, type CoreState, type ErrorCode } from '@rivulet/contract';
import { expect } from 'vitest';
import type { AppendInput, Authority } from '../../src/core/append-input.js';
import { decideAppend, type AppendDecision, type DecideEnv } from '../../src/core/decide-append.js';
import { utf8Length } from '../../src/core/sizes.js';

export const NOW = '2025-01-01T00:00:00.000Z';

/**
 * A stream as decideAppend sees it: state, head and the stored events, updated only with the
 * decisions it accepts (the way the actor commits them).
 */
export class Stream {
  state: CoreState | null = null;
  stateBytes = 0;
  head = 0;
  readonly events: CommittedEvent[] = [];
  private ids = 0;

  constructor(
    readonly projectId: string | null = 'proj',
    readonly path = '/s',
    readonly limits: { maxEventBytes: number; maxCoreStateBytes: number } = { maxEventBytes: 1_048_576, maxCoreStateBytes: 1_048_576 },
  ) {}

  env(authority: Authority = 'public', extra: Partial<DecideEnv> = {}): DecideEnv {
    return {
      projectId: this.projectId,
      path: this.path,
      state: this.state,
      stateBytes: this.stateBytes,
      head: this.head,
      now: NOW,
      authority,
      ...this.limits,
      newStreamId: () => `stream-${++this.ids}`,
      lookupIdempotent: (key) => this.events.find((e) => e.idempotencyKey === key),
      ...extra,
    };
  }

  decide(inputs: AppendInput[], authority: Authority = 'public', extra: Partial<DecideEnv> = {}): AppendDecision {
    return decideAppend(this.env(authority, extra), inputs);
  }

  /** Decides and commits. */
  append(inputs: AppendInput[], authority: Authority = 'public', extra: Partial<DecideEnv> = {}): CommittedEvent[] {
    const decision = this.decide(inputs, authority, extra);
    if (decision.fresh.length > 0) {
      this.events.push(...decision.fresh.map((f) => f.event));
      this.state = decision.state;
      this.stateBytes = decision.stateBytes;
      // The size kept without serialising must be the size of the state as JSON.
      expect(decision.stateBytes).toBe(utf8Length(JSON.stringify(decision.state)));
      this.head = decision.head;
    }
    return decision.results;
  }

  /** Asserts a typed rejection and that nothing changed. */
  rejects(inputs: AppendInput[], code: ErrorCode, message?: RegExp, authority: Authority = 'public', extra: Partial<DecideEnv> = {}): RivuletError {
    const before = JSON.stringify({ state: this.state, head: this.head, events: this.events });
    let caught: unknown;
    try {
      this.append(inputs, authority, extra);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RivuletError);
    const error = caught as RivuletError;
    expect(error.code).toBe(code);
    if (message) expect(error.message).toMatch(message);
    expect(JSON.stringify({ state: this.state, head: this.head, events: this.events })).toBe(before);
    return error;
  }
}

export const x = (n: number, extra: Partial<AppendInput> = {}): AppendInput => ({ type: 'app/x', payload: { n }, ...extra });
export const paused = (reason?: string): AppendInput => ({ type: EventType.paused, payload: reason ? { reason } : {} });
export const resumed: AppendInput = { type: EventType.resumed, payload: {} };
