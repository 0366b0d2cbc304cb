/**
 * The receiving side of copy-to-stream (protocol §13.1–§13.4): batch validation, the stamp fence,
 * and the copies' provenance, idempotency identity, cycle/hop guard and drop audit.
 */
import { EventType, Limits, RivuletError, type CopyHop, type CoreState, type ErrorCode, type InboundRecord } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { checkFence, copyIdempotencyKey, planCopies, validateCopyBatch, type CopyBatch, type CopyBatchEvent } from './copy-builder.js';
import { DROP_AUDIT_PREFIX, type ShapedEvent } from './filter.js';
import { initialState } from './state.js';

const T0 = '2025-01-01T00:00:00.000Z';
const T1 = '2025-01-02T00:00:00.000Z';
const receiver = { projectId: 'proj', path: '/r' };

function event(offset: number, extra: Partial<CopyBatchEvent> = {}): CopyBatchEvent {
  return {
    offset,
    type: 'app/thing',
    createdAt: T0,
    shaped: { type: 'app/thing', payload: { n: offset } },
    ...extra,
  };
}

function batch(overrides: Partial<CopyBatch> = {}): CopyBatch {
  return {
    projectId: 'proj',
    path: '/a',
    streamId: 'sid-b',
    streamCreatedAt: T1,
    cursorChangedAtSourceOffset: 5,
    subscriptionKey: 'k',
    receivingStreamPath: '/r',
    events: [event(7), event(8)],
    ...overrides,
  };
}

function hop(path: string, extra: Partial<CopyHop> = {}): CopyHop {
  return {
    projectId: 'proj',
    path,
    streamId: `sid-${path}`,
    streamCreatedAt: T0,
    offset: 3,
    type: 'app/thing',
    createdAt: T0,
    subscriptionKey: 'x',
    cursorChangedAtSourceOffset: 2,
    ...extra,
  };
}

function rejection(fn: () => unknown): RivuletError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(RivuletError);
    return error as RivuletError;
  }
  throw new Error('expected a rejection');
}

function expectRejected(fn: () => unknown, code: ErrorCode, message: RegExp | string): RivuletError {
  const error = rejection(fn);
  expect(error.code).toBe(code);
  if (typeof message === 'string') expect(error.message).toBe(message);
  else expect(error.message).toMatch(message);
  return error;
}

describe('validateCopyBatch', () => {
  it('accepts a well-formed batch, also an empty one', () => {
    expect(() => validateCopyBatch(batch(), receiver)).not.toThrow();
    expect(() => validateCopyBatch(batch({ events: [] }), receiver)).not.toThrow();
    expect(() => validateCopyBatch(batch({ projectId: null }), { projectId: null, path: '/r' })).not.toThrow();
  });

  it('refuses a batch addressed to another stream or project', () => {
    expectRejected(() => validateCopyBatch(batch({ receivingStreamPath: '/x' }), receiver), 'INVALID_INPUT', 'copy batch refused: addressed to /x of project proj, not /r of project proj');
    expectRejected(() => validateCopyBatch(batch({ projectId: 'other' }), receiver), 'INVALID_INPUT', 'copy batch refused: addressed to /r of project other, not /r of project proj');
    expectRejected(() => validateCopyBatch(batch({ projectId: null }), receiver), 'INVALID_INPUT', /^copy batch refused: addressed to/);
  });

  it.each([
    ['an empty streamId', { streamId: '' }],
    ['an empty streamCreatedAt', { streamCreatedAt: '' }],
    ['cursorChangedAtSourceOffset 0', { cursorChangedAtSourceOffset: 0 }],
    ['a negative cursorChangedAtSourceOffset', { cursorChangedAtSourceOffset: -1 }],
    ['a fractional cursorChangedAtSourceOffset', { cursorChangedAtSourceOffset: 1.5 }],
    ['a NaN cursorChangedAtSourceOffset', { cursorChangedAtSourceOffset: Number.NaN }],
  ])('refuses %s', (_name, overrides) => {
    expectRejected(() => validateCopyBatch(batch(overrides), receiver), 'INVALID_INPUT', 'copy batch refused: stamp fields missing or invalid');
  });

  it.each([
    ['repeated offsets', [7, 7]],
    ['decreasing offsets', [8, 7]],
    ['offset 0', [0]],
    ['a fractional offset', [1.5]],
    ['a NaN offset', [Number.NaN]],
  ])('refuses %s', (_name, offsets) => {
    expectRejected(
      () => validateCopyBatch(batch({ events: offsets.map((o) => event(o)) }), receiver),
      'INVALID_INPUT',
      'copy batch refused: events are not in increasing offset order',
    );
  });
});

describe('checkFence', () => {
  const record: InboundRecord = { streamId: 'sid-b', streamCreatedAt: T1, cursorChangedAtSourceOffset: 5, numEventsReceived: 3 };
  function stateWith(path = '/a', key = 'k'): CoreState {
    const s = initialState({ projectId: 'proj', path: '/r', streamId: 'sid-r', createdAt: T0 });
    return { ...s, subscriptions: { ...s.subscriptions, inbound: { bySourcePath: { [path]: { [key]: record } } } } };
  }

  it('accepts when there is no state or no record', () => {
    expect(() => checkFence(null, batch())).not.toThrow();
    expect(() => checkFence(initialState({ projectId: 'proj', path: '/r', streamId: 's', createdAt: T0 }), batch())).not.toThrow();
    expect(() => checkFence(stateWith('/other'), batch({ cursorChangedAtSourceOffset: 1 }))).not.toThrow();
    expect(() => checkFence(stateWith('/a', 'other'), batch({ cursorChangedAtSourceOffset: 1 }))).not.toThrow();
  });

  it.each([
    ['an older lifetime (streamCreatedAt), whatever its streamId and generation', { streamCreatedAt: T0, streamId: 'sid-z', cursorChangedAtSourceOffset: 99 }],
    ['an older lifetime (same streamCreatedAt, smaller streamId)', { streamId: 'sid-a', cursorChangedAtSourceOffset: 99 }],
    ['an older generation of the same lifetime', { cursorChangedAtSourceOffset: 4 }],
  ])('rejects %s with CONFLICT', (_name, overrides) => {
    const error = expectRejected(() => checkFence(stateWith(), batch(overrides)), 'CONFLICT', /already accepted a newer delivery/);
    expect(error.message).toBe('copy batch refused: /a subscription "k" already accepted a newer delivery (stamp sid-b@5)');
    expect(error.details).toEqual({ fence: record });
  });

  it.each([
    ['the equal stamp (at-least-once redelivery)', {}],
    ['a newer generation', { cursorChangedAtSourceOffset: 6 }],
    ['a newer lifetime with a smaller streamId and generation', { streamCreatedAt: '2025-01-03T00:00:00.000Z', streamId: 'sid-a', cursorChangedAtSourceOffset: 1 }],
    ['the same streamCreatedAt with a larger streamId', { streamId: 'sid-c', cursorChangedAtSourceOffset: 1 }],
  ])('accepts %s', (_name, overrides) => {
    expect(() => checkFence(stateWith(), batch(overrides))).not.toThrow();
  });
});

describe('planCopies', () => {
  it('appends each event with its new hop and per-run idempotency key', () => {
    const plan = planCopies(
      batch({
        events: [
          event(7, {
            type: 'app/original',
            createdAt: '2025-01-02T03:04:05.000Z',
            shaped: { type: 'app/shaped', payload: { shaped: true }, metadata: { m: 1 } },
          }),
        ],
      }),
      receiver,
    );
    expect(plan.dropped).toEqual([]);
    expect(plan.inputs).toEqual([
      {
        type: 'app/shaped',
        payload: { shaped: true },
        metadata: { m: 1 },
        idempotencyKey: 'rivulet-internal/copy:["k",5,"proj","/a","sid-b",7]',
        source: {
          copiedFrom: [
            {
              projectId: 'proj',
              path: '/a',
              streamId: 'sid-b',
              streamCreatedAt: T1,
              offset: 7,
              type: 'app/original',
              createdAt: '2025-01-02T03:04:05.000Z',
              subscriptionKey: 'k',
              cursorChangedAtSourceOffset: 5,
            },
          ],
        },
      },
    ]);
  });

  it('formats the idempotency key as [key, cursorChangedAt, projectId, sourcePath, streamId, offset]', () => {
    expect(copyIdempotencyKey(batch({ projectId: null, subscriptionKey: 'a "b"' }), 12)).toBe(
      'rivulet-internal/copy:["a \\"b\\"",5,null,"/a","sid-b",12]',
    );
  });

  it('every key of a batch is the JSON array of its six fields, whatever the characters and sizes in them', () => {
    for (const overrides of [
      { projectId: null, subscriptionKey: 'a "b" \\ ü 😀', path: '/ä/日本', streamId: 'sid-\u2028' },
      { projectId: 'p,]"', subscriptionKey: 'k', cursorChangedAtSourceOffset: Number.MAX_SAFE_INTEGER },
      {},
    ] satisfies Array<Partial<CopyBatch>>) {
      const b = batch({ ...overrides, events: [event(1), event(99), event(Number.MAX_SAFE_INTEGER)] });
      const keys = planCopies(b, receiver).inputs.map((input) => input.idempotencyKey);
      const full = (offset: number) =>
        `rivulet-internal/copy:${JSON.stringify([b.subscriptionKey, b.cursorChangedAtSourceOffset, b.projectId, b.path, b.streamId, offset])}`;
      expect(keys).toEqual([full(1), full(99), full(Number.MAX_SAFE_INTEGER)]);
      expect(copyIdempotencyKey(b, 99)).toBe(full(99));
    }
  });

  it('omits payload and metadata the shaped event does not have', () => {
    const [input] = planCopies(batch({ events: [event(7, { shaped: { type: 't' } })] }), receiver).inputs;
    expect(input).not.toHaveProperty('payload');
    expect(input).not.toHaveProperty('metadata');
    expect(input?.type).toBe('t');
  });

  it('a shaped event cannot forge provenance, identity or flags', () => {
    const forged = {
      type: 'app/x',
      payload: {},
      source: { copiedFrom: [] },
      idempotencyKey: 'mine',
      ephemeral: true,
      offset: 1,
    } as unknown as ShapedEvent;
    const [input] = planCopies(batch({ events: [event(7, { shaped: forged })] }), receiver).inputs;
    expect(input?.idempotencyKey).toBe(copyIdempotencyKey(batch(), 7));
    expect(input?.source?.copiedFrom).toHaveLength(1);
    expect(input).not.toHaveProperty('ephemeral');
    expect(input).not.toHaveProperty('offset');
  });

  it('keeps earlier hops and appends the new one last', () => {
    const earlier = [hop('/x'), hop('/y')];
    const [input] = planCopies(batch({ events: [event(7, { source: { copiedFrom: earlier } })] }), receiver).inputs;
    expect(input?.source?.copiedFrom).toHaveLength(3);
    expect(input?.source?.copiedFrom.slice(0, 2)).toEqual(earlier);
    expect(input?.source?.copiedFrom[2]).toMatchObject({ path: '/a', offset: 7 });
  });

  it('drops an event whose chain already holds the receiver (cycle), with one audit', () => {
    const b = batch({ events: [event(7, { source: { copiedFrom: [hop('/r'), hop('/x')] } })] });
    const plan = planCopies(b, receiver);
    expect(plan.dropped).toEqual([{ offset: 7, reason: 'cycle' }]);
    expect(plan.inputs).toEqual([
      {
        type: EventType.errorOccurred,
        idempotencyKey: `${DROP_AUDIT_PREFIX}${JSON.stringify(['/a', 'k', 'sid-b', 5, 7, 7])}`,
        payload: {
          message: 'dropped 1 copied event(s) from "/a" subscription "k" (source offsets 7-7): cycle',
          drop: { reason: 'cycle', sourcePath: '/a', subscriptionKey: 'k', count: 1, firstOffset: 7, lastOffset: 7 },
        },
      },
    ]);
  });

  it('the same path in another project is not a cycle', () => {
    const plan = planCopies(batch({ events: [event(7, { source: { copiedFrom: [hop('/r', { projectId: 'other' })] } })] }), receiver);
    expect(plan.dropped).toEqual([]);
    expect(plan.inputs).toHaveLength(1);
  });

  it(`drops an event whose chain already has ${Limits.maxHops} hops; ${Limits.maxHops - 1} hops are copied (to ${Limits.maxHops})`, () => {
    const chain = (n: number) => Array.from({ length: n }, (_, i) => hop(`/h${i}`));
    const ok = planCopies(batch({ events: [event(7, { source: { copiedFrom: chain(Limits.maxHops - 1) } })] }), receiver);
    expect(ok.dropped).toEqual([]);
    expect(ok.inputs[0]?.source?.copiedFrom).toHaveLength(Limits.maxHops);

    const dropped = planCopies(batch({ events: [event(7, { source: { copiedFrom: chain(Limits.maxHops) } })] }), receiver);
    expect(dropped.dropped).toEqual([{ offset: 7, reason: 'hop-limit' }]);
    expect(dropped.inputs).toHaveLength(1);
    expect(dropped.inputs[0]?.payload).toMatchObject({
      message: 'dropped 1 copied event(s) from "/a" subscription "k" (source offsets 7-7): hop-limit',
      drop: { reason: 'hop-limit', count: 1 },
    });
  });

  it('one audit per batch, after the copies, counting every drop', () => {
    const cycle = { source: { copiedFrom: [hop('/r')] } };
    const plan = planCopies(batch({ events: [event(6), event(7, cycle), event(8), event(9, cycle), event(10)] }), receiver);
    expect(plan.dropped).toEqual([
      { offset: 7, reason: 'cycle' },
      { offset: 9, reason: 'cycle' },
    ]);
    expect(plan.inputs.map((i) => i.type)).toEqual(['app/thing', 'app/thing', 'app/thing', EventType.errorOccurred]);
    expect(plan.inputs.slice(0, 3).map((i) => i.source?.copiedFrom[0]?.offset)).toEqual([6, 8, 10]);
    const audits = plan.inputs.filter((i) => i.type === EventType.errorOccurred);
    expect(audits).toHaveLength(1);
    expect(audits[0]?.payload).toEqual({
      message: 'dropped 2 copied event(s) from "/a" subscription "k" (source offsets 7-9): cycle',
      drop: { reason: 'cycle', sourcePath: '/a', subscriptionKey: 'k', count: 2, firstOffset: 7, lastOffset: 9 },
    });
    expect(audits[0]?.idempotencyKey?.startsWith(DROP_AUDIT_PREFIX)).toBe(true);
  });

  it('a batch with both kinds of drop gets one audit: reason "cycle", each kind counted in the message and in reasons', () => {
    const chain = Array.from({ length: Limits.maxHops }, (_, i) => hop(`/h${i}`));
    const plan = planCopies(batch({ events: [event(7, { source: { copiedFrom: chain } }), event(8, { source: { copiedFrom: [hop('/r')] } })] }), receiver);
    expect(plan.dropped).toEqual([
      { offset: 7, reason: 'hop-limit' },
      { offset: 8, reason: 'cycle' },
    ]);
    expect(plan.inputs).toHaveLength(1);
    expect(plan.inputs[0]?.payload).toEqual({
      message: 'dropped 2 copied event(s) from "/a" subscription "k" (source offsets 7-8): cycle (1) and hop-limit (1)',
      drop: { reason: 'cycle', sourcePath: '/a', subscriptionKey: 'k', count: 2, firstOffset: 7, lastOffset: 8, reasons: { cycle: 1, 'hop-limit': 1 } },
    });
  });

  it('the drop audit is idempotent per (path, key, lifetime, generation, offsets)', () => {
    const cycle = { source: { copiedFrom: [hop('/r')] } };
    const a = planCopies(batch({ events: [event(7, cycle)] }), receiver).inputs[0]!;
    const again = planCopies(batch({ events: [event(7, cycle)] }), receiver).inputs[0]!;
    const newRun = planCopies(batch({ events: [event(7, cycle)], cursorChangedAtSourceOffset: 6 }), receiver).inputs[0]!;
    expect(again.idempotencyKey).toBe(a.idempotencyKey);
    expect(newRun.idempotencyKey).not.toBe(a.idempotencyKey);
  });
});
