import { EventType, RivuletError, type CommittedEvent, type CoreState, type ErrorCode } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import type { AppendInput, Authority } from './append-input.js';
import { buildEvent, countersOnly, decideAppend, digits, type AppendDecision, type DecideEnv } from './decide-append.js';
import { initialState } from './state.js';
import { utf8Length } from './sizes.js';

const NOW = '2025-01-01T00:00:00.000Z';

/**
 * A stream as decideAppend sees it: state, head and the stored events, updated only with the
 * decisions it accepts (the way the actor commits them).
 */
class Stream {
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

const x = (n: number, extra: Partial<AppendInput> = {}): AppendInput => ({ type: 'app/x', payload: { n }, ...extra });
const paused = (reason?: string): AppendInput => ({ type: EventType.paused, payload: reason ? { reason } : {} });
const resumed: AppendInput = { type: EventType.resumed, payload: {} };
const hop = {
  projectId: 'proj',
  path: '/src',
  streamId: 'src-1',
  streamCreatedAt: NOW,
  offset: 4,
  type: 'app/x',
  createdAt: NOW,
  subscriptionKey: 'k',
  cursorChangedAtSourceOffset: 0,
};

describe('decideAppend: a new stream', () => {
  it('is created at offset 1 with {projectId, path, streamId}, then the inputs follow', () => {
    const s = new Stream();
    const decision = s.decide([x(1), x(2)]);
    expect(decision.fresh.map((f) => f.event)).toEqual([
      { path: '/s', offset: 1, createdAt: NOW, type: EventType.created, payload: { projectId: 'proj', path: '/s', streamId: 'stream-1' } },
      { path: '/s', offset: 2, createdAt: NOW, type: 'app/x', payload: { n: 1 } },
      { path: '/s', offset: 3, createdAt: NOW, type: 'app/x', payload: { n: 2 } },
    ]);
    // Results name the inputs only.
    expect(decision.results.map((e) => e.offset)).toEqual([2, 3]);
    expect(decision.head).toBe(3);
    expect(decision.state).toMatchObject({ projectId: 'proj', path: '/s', streamId: 'stream-1', createdAt: NOW, eventCount: 3, maxOffset: 3 });
    expect(decision.stateJson).toBe(JSON.stringify(decision.state));
    for (const f of decision.fresh) {
      expect(f.json).toBe(JSON.stringify(f.event));
      expect(f.bytes).toBe(utf8Length(f.json));
    }
  });

  it('a null project is written as null', () => {
    const s = new Stream(null, '/n');
    expect(s.decide([x(1)]).fresh[0]!.event.payload).toEqual({ projectId: null, path: '/n', streamId: 'stream-1' });
  });

  it('a rejected first batch creates nothing', () => {
    const s = new Stream();
    s.rejects([x(1, { offset: 5 })], 'CONFLICT');
    expect(s.state).toBeNull();
  });
});

describe('decideAppend: offsets', () => {
  it('are dense across batches, ephemeral events included (they take an offset but are not folded)', () => {
    const s = new Stream();
    s.append([x(1)]);
    const results = s.append([x(2, { ephemeral: true }), x(3), x(4, { ephemeral: true })]);
    expect(results.map((e) => e.offset)).toEqual([3, 4, 5]);
    expect(results.map((e) => e.ephemeral)).toEqual([true, undefined, true]);
    expect(s.head).toBe(5);
    expect(s.state).toMatchObject({ eventCount: 3, maxOffset: 4 });
    expect(s.events.map((e) => e.offset)).toEqual([1, 2, 3, 4, 5]);
  });

  it('an offset assertion equal to the next offset passes; any other is CONFLICT', () => {
    const s = new Stream();
    s.append([x(1)]);
    expect(s.append([x(2, { offset: 3 }), x(3, { offset: 4 })]).map((e) => e.offset)).toEqual([3, 4]);
    const error = s.rejects([x(4, { offset: 4 })], 'CONFLICT', /offset assertion failed: expected offset 4, but the next offset is 5/);
    expect(error.details).toEqual({ expected: 4, actual: 5 });
    s.rejects([x(4), x(5, { offset: 5 })], 'CONFLICT', /events\[1\]: offset assertion failed/);
  });

  it('the offset assertion is not stored on the event', () => {
    const s = new Stream();
    s.append([x(1)]);
    expect(s.append([x(2, { offset: 3 })])[0]!.offset).toBe(3);
    expect(s.events[2]).toEqual({ path: '/s', offset: 3, createdAt: NOW, type: 'app/x', payload: { n: 2 } });
  });
});

describe('decideAppend: idempotency (protocol §4.2)', () => {
  it('a repeat with the same body answers the stored event and writes nothing', () => {
    const s = new Stream();
    const [first] = s.append([{ type: 'app/x', payload: { a: 1, b: { c: 2, d: 3 } }, metadata: { m: 1 }, idempotencyKey: 'k' }]);
    const decision = s.decide(
      [{ type: 'app/x', payload: { b: { d: 3, c: 2 }, a: 1 }, metadata: { m: 1 }, idempotencyKey: 'k' }],
      'public',
      { now: '2030-01-01T00:00:00.000Z' },
    );
    expect(decision.results).toEqual([first]);
    expect(decision.fresh).toEqual([]);
    expect(decision.head).toBe(s.head);
    expect(decision.state).toBe(s.state);
    expect(decision.stateJson).toBeNull();
  });

  it('a repeat among new events returns the stored one in place', () => {
    const s = new Stream();
    const [stored] = s.append([x(1, { idempotencyKey: 'k' })]);
    const results = s.append([x(0), x(1, { idempotencyKey: 'k' }), x(2)]);
    expect(results.map((e) => e.offset)).toEqual([3, 2, 4]);
    expect(results[1]).toEqual(stored);
  });

  it('a repeat of an ephemeral event answers it too', () => {
    const s = new Stream();
    const [stored] = s.append([x(1, { idempotencyKey: 'e', ephemeral: true })]);
    expect(s.append([x(1, { idempotencyKey: 'e', ephemeral: true })])).toEqual([stored]);
  });

  it('the same key with another body is CONFLICT naming the key and the stored offset', () => {
    const s = new Stream();
    s.append([x(1, { idempotencyKey: 'k', metadata: { m: 1 } })]);
    const variants: AppendInput[] = [
      x(2, { idempotencyKey: 'k', metadata: { m: 1 } }),
      { type: 'app/other', payload: { n: 1 }, idempotencyKey: 'k', metadata: { m: 1 } },
      x(1, { idempotencyKey: 'k' }),
      x(1, { idempotencyKey: 'k', metadata: { m: 2 } }),
      x(1, { idempotencyKey: 'k', metadata: { m: 1 }, ephemeral: true }),
      { type: 'app/x', idempotencyKey: 'k', metadata: { m: 1 } },
    ];
    for (const input of variants) {
      const error = s.rejects([input], 'CONFLICT', /idempotency key "k" already names a different event \(offset 2\)/);
      expect(error.details).toEqual({ idempotencyKey: 'k', offset: 2 });
    }
  });

  it('a repeat with an offset assertion must assert the stored offset', () => {
    const s = new Stream();
    s.append([x(1, { idempotencyKey: 'k' })]);
    expect(s.append([x(1, { idempotencyKey: 'k', offset: 2 })])[0]!.offset).toBe(2);
    s.rejects([x(1, { idempotencyKey: 'k', offset: 3 })], 'CONFLICT', /is stored at offset 2, not 3/);
  });

  it('duplicates within one batch collapse; a different body in the same batch is CONFLICT', () => {
    const s = new Stream();
    s.append([x(0)]);
    const decision = s.decide([x(1, { idempotencyKey: 'd' }), x(1, { idempotencyKey: 'd' }), x(2)]);
    expect(decision.fresh.map((f) => f.event.offset)).toEqual([3, 4]);
    expect(decision.results.map((e) => e.offset)).toEqual([3, 3, 4]);
    expect(decision.results[0]).toBe(decision.results[1]);
    s.rejects([x(1, { idempotencyKey: 'd' }), x(2, { idempotencyKey: 'd' })], 'CONFLICT', /events\[1\]: idempotency key "d"/);
  });

  it('a platform identity key names one source fact: its repeat answers the stored event whatever the body', () => {
    const s = new Stream();
    const [stored] = s.append([x(1, { idempotencyKey: 'rivulet-internal/copy:1' })], 'platform');
    // A transform may have produced another body on redelivery (protocol §13.2).
    expect(s.append([x(2, { idempotencyKey: 'rivulet-internal/copy:1' })], 'platform')).toEqual([stored]);
    // Only platform-authored internal keys get this: other keys, or the same key from a public caller, conflict.
    s.append([x(1, { idempotencyKey: 'plain' })], 'platform');
    s.rejects([x(2, { idempotencyKey: 'plain' })], 'CONFLICT', undefined, 'platform');
    s.rejects([x(2, { idempotencyKey: 'rivulet-internal/copy:1' })], 'CONFLICT', undefined, 'public');
  });

  it('keys are compared exactly', () => {
    const s = new Stream();
    s.append([x(1, { idempotencyKey: 'k' })]);
    expect(s.append([x(2, { idempotencyKey: 'K' }), x(3, { idempotencyKey: 'k ' })]).map((e) => e.offset)).toEqual([3, 4]);
  });
});

describe('decideAppend: paused streams (protocol §4.5)', () => {
  function pausedStream(reason?: string): Stream {
    const s = new Stream();
    s.append([x(0), paused(reason)]);
    expect(s.state!.paused).toBe(true);
    return s;
  }

  it('refuse caller events with PRECONDITION_FAILED naming the reason', () => {
    const s = pausedStream('maintenance');
    const error = s.rejects([x(1)], 'PRECONDITION_FAILED', /stream \/s is paused \(maintenance\)/);
    expect(error.details).toEqual({ paused: true, pauseReason: 'maintenance' });
    s.rejects([paused('again')], 'PRECONDITION_FAILED');
    s.rejects([{ type: EventType.errorOccurred, payload: { message: 'm' } }], 'PRECONDITION_FAILED');
  });

  it('judge a batch in order: [resumed, x] is accepted, [x, resumed] is not', () => {
    const s = pausedStream();
    s.rejects([x(1), resumed], 'PRECONDITION_FAILED', /events\[0\]/);
    expect(s.append([resumed, x(1)]).map((e) => e.offset)).toEqual([4, 5]);
    expect(s.state!.paused).toBe(false);
    // Pausing inside a batch refuses its rest.
    s.rejects([x(2), paused(), x(3)], 'PRECONDITION_FAILED', /events\[2\]/);
  });

  it('accept subscription commands', () => {
    const s = pausedStream();
    const configured: AppendInput = {
      type: EventType.subscriptionConfigured,
      payload: {
        subscriptionKey: 'k',
        receiver: { action: 'copy-to-stream', receivingStreamPath: '/r', delivery: { start: 'now', onFailingEvent: 'halt' } },
      },
    };
    expect(s.append([configured, { type: EventType.subscriptionCursorSet, payload: { subscriptionKey: 'k', afterOffset: 0 } }])).toHaveLength(2);
    expect(s.append([{ type: EventType.subscriptionDeliveryResumed, payload: { subscriptionKey: 'k' } }])).toHaveLength(1);
    expect(s.append([{ type: EventType.subscriptionRemoved, payload: { subscriptionKey: 'k', reason: 'requested' } }])).toHaveLength(1);
    expect(s.state!.paused).toBe(true);
  });

  it('accept platform facts, but refuse copies (platform events carrying source) even of accepted types', () => {
    const s = pausedStream();
    expect(s.append([{ type: EventType.connectionOpened, payload: { key: 'c' } }], 'platform')).toHaveLength(1);
    expect(
      s.append([{ type: EventType.subscriptionDeliveryHalted, payload: { subscriptionKey: 'k', afterOffset: 0, attempts: 1 } }], 'platform'),
    ).toHaveLength(1);
    s.rejects([{ type: 'app/x', source: { copiedFrom: [hop] } }], 'PRECONDITION_FAILED', undefined, 'platform');
    s.rejects([{ type: EventType.resumed, source: { copiedFrom: [hop] } }], 'PRECONDITION_FAILED', undefined, 'platform');
    expect(s.state!.paused).toBe(true);
  });

  it('still answer idempotent repeats of stored events', () => {
    const s = new Stream();
    const [stored] = s.append([x(1, { idempotencyKey: 'k' })]);
    s.append([paused()]);
    expect(s.append([x(1, { idempotencyKey: 'k' })])).toEqual([stored]);
  });

  it('accept copies again after resume', () => {
    const s = pausedStream();
    s.append([resumed]);
    expect(s.append([{ type: 'app/x', source: { copiedFrom: [hop] } }], 'platform')[0]!.source).toEqual({ copiedFrom: [hop] });
  });
});

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
