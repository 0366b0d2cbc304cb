/**
 * decideAppend, the pure decision of one append: the event size limit, the core state byte limit
 * (protocol §4.6), the control rules hook and the counters-only shortcut.
 */
import { EventType, RivuletError, type CoreState } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import type { AppendInput } from './append-input.js';
import { buildEvent, countersOnly, digits } from './decide-append.js';
import { initialState } from './state.js';
import { utf8Length } from './sizes.js';
import { NOW, Stream, paused, resumed, x } from '../../test/helpers/decide-stream.js';

describe('decideAppend: event size limit', () => {
  /** An input whose event, committed at `offset` on `s`, is exactly `bytes` bytes of JSON. */
  function inputOfSize(s: Stream, bytes: number, ephemeral = false): AppendInput {
    const base: AppendInput = { type: 'app/big', payload: { s: '' }, ...(ephemeral ? { ephemeral: true as const } : {}) };
    const empty = utf8Length(JSON.stringify(buildEvent(s.path, s.head + 1, NOW, base)));
    // Two-byte characters count twice: the limit is in UTF-8 bytes, not characters.
    const pad = bytes - empty;
    const text = 'é'.repeat(Math.floor(pad / 2)) + 'x'.repeat(pad % 2);
    return { ...base, payload: { s: text } };
  }

  it('accepts an event of exactly the limit and refuses one byte more with PAYLOAD_TOO_LARGE', () => {
    const limit = 2000;
    for (const ephemeral of [false, true]) {
      const s = new Stream('proj', '/s', { maxEventBytes: limit, maxCoreStateBytes: 1_048_576 });
      s.append([x(0)]);
      const exact = inputOfSize(s, limit, ephemeral);
      const over = inputOfSize(s, limit + 1, ephemeral);
      const error = s.rejects([over], 'PAYLOAD_TOO_LARGE', new RegExp(`${limit + 1} bytes as JSON; the limit is ${limit} bytes`));
      expect(error.details).toEqual({ bytes: limit + 1, limit });
      const [event] = s.append([exact]);
      expect(utf8Length(JSON.stringify(event))).toBe(limit);
    }
  });

  it('a too large event anywhere in the batch rejects the whole batch', () => {
    const s = new Stream('proj', '/s', { maxEventBytes: 500, maxCoreStateBytes: 1_048_576 });
    s.append([x(0)]);
    s.rejects([x(1), x(2), { type: 'app/x', payload: { s: 'y'.repeat(600) } }], 'PAYLOAD_TOO_LARGE');
  });
});

describe('decideAppend: core state byte limit (protocol §4.6)', () => {
  /** The state bytes after pausing the stream with `reason`. */
  function bytesAfterPause(reason: string): number {
    const s = new Stream();
    s.append([x(0)]);
    return s.decide([paused(reason)]).stateBytes;
  }

  it('a batch may grow the state up to the limit, not one byte past it (LIMIT_EXCEEDED)', () => {
    const reason = 'r'.repeat(300);
    const exact = bytesAfterPause(reason);
    const atLimit = new Stream('proj', '/s', { maxEventBytes: 1_048_576, maxCoreStateBytes: exact });
    atLimit.append([x(0)]);
    atLimit.append([paused(reason)]);
    expect(atLimit.stateBytes).toBe(exact);

    const below = new Stream('proj', '/s', { maxEventBytes: 1_048_576, maxCoreStateBytes: exact - 1 });
    below.append([x(0)]);
    const error = below.rejects([paused(reason)], 'LIMIT_EXCEEDED', new RegExp(`grow the stream's core state to ${exact} bytes; the limit is ${exact - 1}`));
    expect(error.details).toEqual({ bytes: exact, limit: exact - 1 });
  });

  it('shrinking is always allowed, even while still above the limit; growing above it is not', () => {
    const configure = (description: string): AppendInput => ({
      type: EventType.subscriptionConfigured,
      payload: {
        subscriptionKey: 'k',
        description,
        receiver: { action: 'copy-to-stream', receivingStreamPath: '/r', delivery: { start: 'now', onFailingEvent: 'halt' } },
      },
    });
    const s = new Stream();
    s.append([x(0), configure('d'.repeat(1000))]);
    // The operator lowers the limit below the current state.
    const lowered = new Stream('proj', '/s', { maxEventBytes: 1_048_576, maxCoreStateBytes: 200 });
    Object.assign(lowered, { state: s.state, stateBytes: s.stateBytes, head: s.head });
    lowered.events.push(...s.events);
    // A shorter description shrinks the state but leaves it above the limit: accepted.
    expect(lowered.append([configure('d'.repeat(500))])).toHaveLength(1);
    expect(lowered.stateBytes).toBeGreaterThan(200);
    // Growing again is refused.
    lowered.rejects([configure('d'.repeat(600))], 'LIMIT_EXCEEDED');
    // Removing the subscription shrinks it.
    expect(lowered.append([{ type: EventType.subscriptionRemoved, payload: { subscriptionKey: 'k', reason: 'requested' } }])).toHaveLength(1);
  });

  it('the limit is judged on the whole batch: growth then shrink within one batch passes', () => {
    const base = new Stream();
    base.append([x(0)]);
    const limit = base.stateBytes + 60;
    const s = new Stream('proj', '/s', { maxEventBytes: 1_048_576, maxCoreStateBytes: limit });
    s.append([x(0)]);
    s.rejects([paused('r'.repeat(200))], 'LIMIT_EXCEEDED');
    expect(s.append([paused('r'.repeat(200)), resumed])).toHaveLength(2);
  });

  it('a batch of pure repeats is not measured', () => {
    const s = new Stream();
    const [stored] = s.append([x(0, { idempotencyKey: 'k' })]);
    expect(s.decide([x(0, { idempotencyKey: 'k' })], 'public', { maxCoreStateBytes: 1 }).results).toEqual([stored]);
  });
});

describe('decideAppend: control rules hook', () => {
  it('checkControl sees the normalised input, the state and the head; the normalised input is what is committed', () => {
    const s = new Stream();
    s.append([x(0)]);
    const seen: Array<[string, number, number, unknown]> = [];
    const results = s.append([x(1), x(2)], 'public', {
      normalizeControl: (input) => ({ ...input, metadata: { checked: true } }),
      checkControl: (input, state, head) => {
        seen.push([input.type, state.eventCount, head, input.metadata]);
      },
    });
    expect(seen).toEqual([
      ['app/x', 2, 2, { checked: true }],
      ['app/x', 3, 3, { checked: true }],
    ]);
    expect(results.map((e) => e.metadata)).toEqual([{ checked: true }, { checked: true }]);
  });

  it('a rejection from checkControl rejects the whole batch', () => {
    const s = new Stream();
    s.append([x(0)]);
    s.rejects([x(1), x(2)], 'NOT_FOUND', /no such key/, 'public', {
      checkControl: (input) => {
        if ((input.payload as { n: number }).n === 2) throw new RivuletError('NOT_FOUND', 'no such key');
      },
    });
  });
});

describe('decideAppend: the counters-only shortcut', () => {
  const before: CoreState = { ...initialState({ projectId: 'p', path: '/s', streamId: 'id', createdAt: NOW }), eventCount: 9, maxOffset: 12 };

  it('countersOnly sees a change of any field of the state but the counters', () => {
    expect(countersOnly(before, { ...before, eventCount: 10, maxOffset: 13 })).toBe(true);
    for (const key of Object.keys(before) as (keyof CoreState)[]) {
      if (key === 'eventCount' || key === 'maxOffset') continue;
      const changed = { ...before, [key]: typeof before[key] === 'object' && before[key] !== null ? { ...before[key] } : `${String(before[key])}!` };
      expect(countersOnly(before, changed as CoreState), key).toBe(false);
    }
  });

  it('digits is String(n).length for counters', () => {
    for (const n of [0, 1, 9, 10, 11, 99, 100, 999, 1000, 123_456, 999_999_999, 1_000_000_000, 2 ** 31, 2 ** 32 + 1, 999_999_999_999_999, Number.MAX_SAFE_INTEGER]) {
      expect(digits(n), String(n)).toBe(String(n).length);
    }
  });

  it('keeps stateBytes exact across powers of ten', () => {
    const s = new Stream();
    for (let i = 0; i < 120; i++) s.append([x(i)]);
    expect(s.stateBytes).toBe(utf8Length(JSON.stringify(s.state)));
  });
});
