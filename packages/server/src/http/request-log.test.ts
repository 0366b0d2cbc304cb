import type { ErrorCode } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import type { LogFields } from '../ports/logger.js';
import type { Timer } from '../ports/timer.js';
import { LineBudget, requestLogHook } from './request-log.js';
import type { AnsweredRequest } from './request-hooks.js';

/** A one-shot timer that runs only when the test moves the clock (advance). */
class ManualTimer implements Timer {
  readonly due: Array<{ at: number; fn: () => void }> = [];
  constructor(private readonly now: () => number) {}
  set(delayMs: number, fn: () => void) {
    const entry = { at: this.now() + delayMs, fn };
    this.due.push(entry);
    return () => {
      const i = this.due.indexOf(entry);
      if (i >= 0) this.due.splice(i, 1);
    };
  }
  runDue(): void {
    for (const t of this.due.filter((d) => d.at <= this.now())) {
      this.due.splice(this.due.indexOf(t), 1);
      t.fn();
    }
  }
}

function setup(options: { slowMs?: number; linesPerSecond?: number } = {}) {
  const lines: Array<[string, LogFields | undefined]> = [];
  let at = 0;
  const timer = new ManualTimer(() => at);
  const hook = requestLogHook({ error: () => undefined, warn: (message, fields) => lines.push([message, fields]) }, { ...options, now: () => at, timer });
  const answer = (status: number, errorCode?: ErrorCode, durationMs = 2, route = 'POST /v1/streams/{path}') =>
    hook.onAnswered!({ method: 'POST', route, status, durationMs, errorCode } satisfies AnsweredRequest);
  const advance = (ms: number) => {
    at += ms;
    timer.runDue();
  };
  // Moves the clock without running timers: the event loop was busy meanwhile.
  const jump = (ms: number) => (at += ms);
  return { lines, answer, advance, jump, timer };
}

describe('requestLogHook', () => {
  it('logs a refusal worth seeing with method, route template, status, code and duration', () => {
    const { lines, answer } = setup();
    answer(401, 'UNAUTHENTICATED', 1.234);
    answer(413, 'PAYLOAD_TOO_LARGE');
    answer(422, 'LIMIT_EXCEEDED');
    answer(403, 'FORBIDDEN');
    answer(400, 'INVALID_INPUT');
    answer(408);
    expect(lines[0]).toEqual([
      'request refused',
      { method: 'POST', route: 'POST /v1/streams/{path}', status: 401, code: 'UNAUTHENTICATED', durationMs: 1.2 },
    ]);
    expect(lines.map(([, f]) => [f?.status, f?.code])).toEqual([
      [401, 'UNAUTHENTICATED'],
      [413, 'PAYLOAD_TOO_LARGE'],
      [422, 'LIMIT_EXCEEDED'],
      [403, 'FORBIDDEN'],
      [400, 'INVALID_INPUT'],
      [408, undefined],
    ]);
  });

  it('writes nothing for a fast success, a routine refusal or a server fault', () => {
    const { lines, answer } = setup();
    answer(200);
    answer(204);
    answer(404, 'NOT_FOUND');
    answer(409, 'CONFLICT');
    answer(412, 'PRECONDITION_FAILED');
    answer(408, 'TIMEOUT');
    answer(500, 'INTERNAL');
    answer(503, 'UNAVAILABLE');
    expect(lines).toEqual([]);
  });

  it('logs a client that left before its request had arrived (499) as one line, under the same limit', () => {
    const { lines, answer } = setup({ linesPerSecond: 1 });
    answer(499, undefined, 3, 'POST /v1/streams/{path}:subscribeToEventsFrom');
    answer(499);
    expect(lines).toEqual([
      [
        'the client closed the connection before its request had arrived',
        { method: 'POST', route: 'POST /v1/streams/{path}:subscribeToEventsFrom', status: 499, durationMs: 3 },
      ],
    ]);
  });

  it('logs a request as slow from the threshold on, not below it; 0 turns slow lines off; a wait is never slow', () => {
    const { lines, answer } = setup({ slowMs: 100 });
    answer(200, undefined, 99.9);
    answer(200, undefined, 100);
    answer(503, 'UNAVAILABLE', 150);
    answer(200, undefined, 5000, 'POST /v1/streams/{path}:waitForEvent');
    expect(lines).toEqual([
      ['slow request', { method: 'POST', route: 'POST /v1/streams/{path}', status: 200, durationMs: 100 }],
      ['slow request', { method: 'POST', route: 'POST /v1/streams/{path}', status: 503, code: 'UNAVAILABLE', durationMs: 150 }],
    ]);
    const off = setup({ slowMs: 0 });
    off.answer(200, undefined, 1_000_000);
    expect(off.lines).toEqual([]);
  });

  it('writes at most linesPerSecond lines a second, and how many it suppressed when that second ends', () => {
    const { lines, answer, advance, timer } = setup({ linesPerSecond: 3 });
    for (let i = 0; i < 3; i++) answer(401, 'UNAUTHENTICATED');
    expect(lines).toHaveLength(3);
    expect(timer.due).toHaveLength(0);
    for (let i = 0; i < 5; i++) answer(401, 'UNAUTHENTICATED');
    // One flush, at the end of the window the flood began in.
    expect(timer.due.map((t) => t.at)).toEqual([1000]);
    advance(999);
    answer(401, 'UNAUTHENTICATED');
    expect(lines).toHaveLength(3);
    advance(1);
    expect(lines.slice(3)).toEqual([['request lines suppressed', { suppressed: 6, linesPerSecond: 3 }]]);
    expect(timer.due).toHaveLength(0);
    // The flood is over: the next line comes alone, and a quiet second writes nothing more.
    answer(403, 'FORBIDDEN');
    expect(lines.slice(4)).toEqual([['request refused', { method: 'POST', route: 'POST /v1/streams/{path}', status: 403, code: 'FORBIDDEN', durationMs: 2 }]]);
    advance(5_000);
    expect(lines).toHaveLength(5);
    expect(timer.due).toHaveLength(0);
  });

  it('a line written before the flush carries the count, and the flush writes nothing', () => {
    const { lines, answer, advance, jump, timer } = setup({ linesPerSecond: 1 });
    answer(401, 'UNAUTHENTICATED');
    answer(401, 'UNAUTHENTICATED');
    answer(401, 'UNAUTHENTICATED');
    expect(timer.due.map((t) => t.at)).toEqual([1000]);
    // The next window begins and a line comes before the timer had its turn.
    jump(1000);
    answer(403, 'FORBIDDEN');
    advance(0);
    expect(lines.map(([m, f]) => [m, f?.suppressed])).toEqual([
      ['request refused', undefined],
      ['request lines suppressed', 2],
      ['request refused', undefined],
    ]);
    expect(timer.due).toHaveLength(0);
    advance(2000);
    expect(lines).toHaveLength(3);
  });

  it('is no hook at all over a logger without warn', () => {
    expect(requestLogHook({ error: () => undefined }).onAnswered).toBeUndefined();
  });
});

describe('LineBudget', () => {
  it('lets exactly the limit through in a window and starts a new window a second after the last began', () => {
    let at = 10;
    const budget = new LineBudget(2, () => at);
    expect([budget.take(), budget.take(), budget.take()]).toEqual([0, 0, undefined]);
    at = 1009;
    expect(budget.take()).toBeUndefined();
    at = 1010;
    expect([budget.take(), budget.take(), budget.take()]).toEqual([2, 0, undefined]);
  });
});
