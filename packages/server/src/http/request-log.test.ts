import type { ErrorCode } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import type { LogFields } from '../ports/logger.js';
import { LineBudget, requestLogHook } from './request-log.js';
import type { AnsweredRequest } from './request-hooks.js';

function setup(options: { slowMs?: number; linesPerSecond?: number } = {}) {
  const lines: Array<[string, LogFields | undefined]> = [];
  let at = 0;
  const hook = requestLogHook({ error: () => undefined, warn: (message, fields) => lines.push([message, fields]) }, { ...options, now: () => at });
  const answer = (status: number, errorCode?: ErrorCode, durationMs = 2, route = 'POST /v1/streams/{path}') =>
    hook.onAnswered!({ method: 'POST', route, status, durationMs, errorCode } satisfies AnsweredRequest);
  return { lines, answer, advance: (ms: number) => (at += ms) };
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

  it('writes at most linesPerSecond lines a second, then says how many it suppressed with the next line', () => {
    const { lines, answer, advance } = setup({ linesPerSecond: 3 });
    for (let i = 0; i < 3; i++) answer(401, 'UNAUTHENTICATED');
    expect(lines).toHaveLength(3);
    for (let i = 0; i < 5; i++) answer(401, 'UNAUTHENTICATED');
    advance(999);
    answer(401, 'UNAUTHENTICATED');
    expect(lines).toHaveLength(3);
    advance(1);
    answer(403, 'FORBIDDEN');
    expect(lines.slice(3)).toEqual([
      ['request lines suppressed', { suppressed: 6, linesPerSecond: 3 }],
      ['request refused', { method: 'POST', route: 'POST /v1/streams/{path}', status: 403, code: 'FORBIDDEN', durationMs: 2 }],
    ]);
    answer(401, 'UNAUTHENTICATED');
    expect(lines.at(-1)?.[0]).toBe('request refused');
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
