import { CORE_NAMESPACE, EventType, PLATFORM_ONLY_TYPES, RivuletError, type ErrorCode, type EventInput } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { checkInput, type Authority } from './append-input.js';

function rejects(input: EventInput, authority: Authority, code: ErrorCode, message?: RegExp, index = 0): RivuletError {
  let caught: unknown;
  try {
    checkInput(input, authority, index);
  } catch (error) {
    caught = error;
  }
  expect(caught, `${input.type} from ${authority}`).toBeInstanceOf(RivuletError);
  const error = caught as RivuletError;
  expect(error.code).toBe(code);
  if (message) expect(error.message).toMatch(message);
  return error;
}

const source = {
  copiedFrom: [
    {
      projectId: 'p',
      path: '/src',
      streamId: 'sid',
      streamCreatedAt: '2025-01-01T00:00:00.000Z',
      offset: 3,
      type: 'app/x',
      createdAt: '2025-01-01T00:00:00.000Z',
      subscriptionKey: 'k',
      cursorChangedAtSourceOffset: 0,
    },
  ],
};

const receiver = { action: 'copy-to-stream', receivingStreamPath: '/r', delivery: { start: 'now', onFailingEvent: 'halt' } };

describe('checkInput: authority', () => {
  it('source is FORBIDDEN for public callers and kept for the platform', () => {
    rejects({ type: 'app/x', source }, 'public', 'FORBIDDEN', /events\[0\]: "source" is platform-authored/);
    expect(checkInput({ type: 'app/x', source }, 'platform')).toEqual({ type: 'app/x', source });
  });

  it('platform-only types are FORBIDDEN for public callers and allowed for the platform', () => {
    expect([...PLATFORM_ONLY_TYPES].sort()).toEqual(
      [EventType.created, EventType.subscriptionDeliveryHalted, EventType.connectionOpened, EventType.connectionClosed].sort(),
    );
    for (const type of PLATFORM_ONLY_TYPES) {
      rejects({ type, payload: {} }, 'public', 'FORBIDDEN', /is a platform fact; public callers may not append it/);
      expect(checkInput({ type, payload: { any: 'thing' } }, 'platform')).toEqual({ type, payload: { any: 'thing' } });
    }
  });

  it('the reserved idempotency prefix is INVALID_INPUT for public callers, allowed for the platform', () => {
    rejects({ type: 'app/x', idempotencyKey: 'rivulet-internal/copy:1' }, 'public', 'INVALID_INPUT', /reserved for the platform/);
    expect(checkInput({ type: 'app/x', idempotencyKey: 'rivulet-internal/copy:1' }, 'platform').idempotencyKey).toBe('rivulet-internal/copy:1');
    // Only the exact prefix is reserved.
    expect(checkInput({ type: 'app/x', idempotencyKey: 'rivulet-internal' }, 'public').idempotencyKey).toBe('rivulet-internal');
    expect(checkInput({ type: 'app/x', idempotencyKey: 'x/rivulet-internal/' }, 'public').idempotencyKey).toBe('x/rivulet-internal/');
  });

  it('names the index of the input in its messages', () => {
    rejects({ type: 'app/x', source }, 'public', 'FORBIDDEN', /^events\[7\]:/, 7);
  });
});

describe('checkInput: the core namespace', () => {
  it('an unknown type in the core namespace is INVALID_INPUT, for every authority', () => {
    for (const authority of ['public', 'platform'] as const) {
      rejects({ type: `${CORE_NAMESPACE}nope`, payload: {} }, authority, 'INVALID_INPUT', /is not an event type of the core catalogue/);
    }
    // A copy is data: its type is not judged.
    expect(checkInput({ type: `${CORE_NAMESPACE}nope`, source }, 'platform').type).toBe(`${CORE_NAMESPACE}nope`);
  });

  it('control events cannot be ephemeral', () => {
    for (const type of [EventType.paused, EventType.resumed, EventType.errorOccurred]) {
      rejects({ type, payload: type === EventType.errorOccurred ? { message: 'm' } : {}, ephemeral: true }, 'public', 'INVALID_INPUT', /cannot be ephemeral/);
    }
    rejects({ type: EventType.connectionOpened, ephemeral: true }, 'platform', 'INVALID_INPUT', /cannot be ephemeral/);
    // Caller types can.
    expect(checkInput({ type: 'app/x', ephemeral: true }, 'public')).toEqual({ type: 'app/x', ephemeral: true });
  });

  it('a type outside the namespace that merely resembles it is a caller type', () => {
    expect(checkInput({ type: 'events.iterate.com/streams/paused', payload: { reason: 5 } }, 'public').payload).toEqual({ reason: 5 });
  });
});

describe('checkInput: control payloads from public callers', () => {
  const invalid: Array<[string, Record<string, unknown>]> = [
    [EventType.paused, { reason: 5 }],
    [EventType.paused, { unexpected: true }],
    [EventType.resumed, { reason: ['x'] }],
    [EventType.errorOccurred, {}],
    [EventType.errorOccurred, { message: '' }],
    [EventType.subscriptionConfigured, { subscriptionKey: 'k' }],
    [EventType.subscriptionConfigured, { subscriptionKey: '   ', receiver }],
    [EventType.subscriptionConfigured, { receiver: { ...receiver, delivery: { start: 'now', onFailingEvent: 'skip' } } }],
    [EventType.subscriptionConfigured, { receiver: { action: 'processor-wake', expression: ['a'], delivery: { start: 'now' } } }],
    [EventType.subscriptionRemoved, {}],
    [EventType.subscriptionRemoved, { subscriptionKey: 'k', reason: 'because' }],
    [EventType.subscriptionCursorSet, { subscriptionKey: 'k', afterOffset: -1 }],
    [EventType.subscriptionCursorSet, { subscriptionKey: 'k', afterOffset: 1.5 }],
    [EventType.subscriptionCursorSet, { subscriptionKey: 'k' }],
    [EventType.subscriptionDeliveryResumed, {}],
  ];
  for (const [type, payload] of invalid) {
    it(`${type.slice(CORE_NAMESPACE.length)} ${JSON.stringify(payload)} is INVALID_INPUT naming the payload`, () => {
      rejects({ type, payload: payload as EventInput['payload'] }, 'public', 'INVALID_INPUT', /^events\[0\]\.payload/);
    });
  }

  it('valid payloads pass, normalised by their schema', () => {
    expect(checkInput({ type: EventType.paused, payload: { reason: 'm' } }, 'public')).toEqual({ type: EventType.paused, payload: { reason: 'm' } });
    expect(checkInput({ type: EventType.subscriptionRemoved, payload: { subscriptionKey: ' k ' } }, 'public').payload).toEqual({
      subscriptionKey: 'k',
      reason: 'requested',
    });
    expect(checkInput({ type: EventType.subscriptionConfigured, payload: { subscriptionKey: 'k', receiver } }, 'public').payload).toEqual({
      subscriptionKey: 'k',
      receiver,
    });
    expect(checkInput({ type: EventType.subscriptionCursorSet, payload: { subscriptionKey: 'k', afterOffset: 0 } }, 'public').payload).toEqual({
      subscriptionKey: 'k',
      afterOffset: 0,
    });
  });

  it('the platform is trusted: its control payloads are not validated', () => {
    expect(checkInput({ type: EventType.paused, payload: { reason: 5 } }, 'platform').payload).toEqual({ reason: 5 });
    expect(checkInput({ type: EventType.resumed }, 'platform')).toEqual({ type: EventType.resumed });
  });
});

describe('checkInput: copying fields', () => {
  it('keeps exactly the given fields, nothing added', () => {
    const full: EventInput = { type: 'app/x', payload: { a: 1 }, metadata: { m: 2 }, idempotencyKey: 'k', ephemeral: true, offset: 9 };
    expect(checkInput(full, 'public')).toEqual(full);
    expect(checkInput({ type: 'app/x' }, 'public')).toEqual({ type: 'app/x' });
    expect(Object.keys(checkInput({ type: 'app/x' }, 'public'))).toEqual(['type']);
  });
});
