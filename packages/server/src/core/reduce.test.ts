/**
 * reduce, the fold of committed events into core state (protocol §10): created, paused and
 * resumed, ephemeral and copied events, and outbound subscriptions. Inbound fence records are in
 * reduce-inbound.test.ts.
 */
import { EventType, type CommittedEvent, type JsonObject } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { counted, effectiveKey, reduce } from './reduce.js';
import { T0, at, copied, createdEvent, fold, hop } from '../../test/helpers/reduce-fold.js';

const ev = (type: string, payload?: JsonObject, extra: Partial<CommittedEvent> = {}) => ({
  type,
  ...(payload ? { payload } : {}),
  ...extra,
});

const copyReceiver = {
  action: 'copy-to-stream',
  receivingStreamPath: '/r',
  delivery: { start: 'beginning', onFailingEvent: 'halt' },
} as const;

const configured = (subscriptionKey?: string, extra: JsonObject = {}) =>
  ev(EventType.subscriptionConfigured, {
    ...(subscriptionKey !== undefined ? { subscriptionKey } : {}),
    receiver: copyReceiver,
    ...extra,
  });

describe('reduce: created', () => {
  it('starts the state from the created event', () => {
    const state = reduce(null, createdEvent());
    expect(state).toEqual({
      projectId: 'proj',
      path: '/s',
      streamId: 'stream-1',
      createdAt: T0,
      eventCount: 1,
      maxOffset: 1,
      paused: false,
      pauseReason: null,
      subscriptions: { inbound: { bySourcePath: {} }, outbound: { byKey: {} } },
    });
    expect(reduce(null, createdEvent(null)).projectId).toBeNull();
  });

  it('refuses a first event that is not created, or a copied created event', () => {
    expect(() => reduce(null, { path: '/s', offset: 1, createdAt: T0, type: 'app/x' })).toThrow(/first event/);
    expect(() => reduce(null, { ...createdEvent(), source: { copiedFrom: [hop()] } })).toThrow(/first event/);
  });

  it('counts every durable event and tracks the highest offset', () => {
    const state = fold(ev('app/a'), ev('app/b'), ev('app/c'));
    expect(state.eventCount).toBe(4);
    expect(state.maxOffset).toBe(4);
  });

  it('counted is the spread with new counters, key for key and in the same order, sharing every branch', () => {
    const before = fold(configured('k'), ev(EventType.paused, { reason: 'x' }), ev('app/a'));
    const after = counted(before, 9);
    expect(after).toEqual({ ...before, eventCount: before.eventCount + 1, maxOffset: 9 });
    expect(Object.keys(after)).toEqual(Object.keys(before));
    expect(after.subscriptions).toBe(before.subscriptions);
    expect(after).not.toBe(before);
  });

  it('does not mutate the previous state', () => {
    const before = fold(configured('k'), ev(EventType.paused, { reason: 'x' }));
    const snapshot = JSON.stringify(before);
    reduce(before, { path: '/s', offset: 10, createdAt: at(10), ...ev(EventType.subscriptionRemoved, { subscriptionKey: 'k' }) });
    reduce(before, { path: '/s', offset: 10, createdAt: at(10), ...ev(EventType.resumed) });
    reduce(before, { path: '/s', offset: 10, createdAt: at(10), ...copied(hop()) });
    expect(JSON.stringify(before)).toBe(snapshot);
  });
});

describe('reduce: paused and resumed', () => {
  it('pauses with or without a reason, and resumes', () => {
    expect(fold(ev(EventType.paused, { reason: 'maintenance' }))).toMatchObject({ paused: true, pauseReason: 'maintenance' });
    expect(fold(ev(EventType.paused))).toMatchObject({ paused: true, pauseReason: null });
    expect(fold(ev(EventType.paused, { reason: 42 }))).toMatchObject({ paused: true, pauseReason: null });
    expect(fold(ev(EventType.paused, { reason: 'm' }), ev(EventType.resumed))).toMatchObject({ paused: false, pauseReason: null });
  });

  it('a second pause replaces the reason; resume on a running stream changes nothing but counters', () => {
    expect(fold(ev(EventType.paused, { reason: 'a' }), ev(EventType.paused, { reason: 'b' })).pauseReason).toBe('b');
    const resumed = fold(ev(EventType.resumed));
    expect(resumed).toMatchObject({ paused: false, pauseReason: null, eventCount: 2 });
  });
});

describe('reduce: ephemeral events', () => {
  it('are ignored entirely, the same state object comes back', () => {
    const state = fold(ev('app/a'));
    const next = reduce(state, { path: '/s', offset: 3, createdAt: at(3), type: 'app/b', ephemeral: true });
    expect(next).toBe(state);
    expect(next.eventCount).toBe(2);
    expect(next.maxOffset).toBe(2);
  });
});

describe('reduce: copied events are data', () => {
  it('a copied control event changes only the inbound record (and the counters)', () => {
    const h = hop();
    const base = fold(configured('mine'));
    const types = [
      [EventType.paused, { reason: 'copied' }],
      [EventType.subscriptionConfigured, { subscriptionKey: 'theirs', receiver: copyReceiver }],
      [EventType.subscriptionRemoved, { subscriptionKey: 'mine' }],
      [EventType.subscriptionCursorSet, { subscriptionKey: 'mine', afterOffset: 1 }],
      [EventType.subscriptionDeliveryHalted, { subscriptionKey: 'mine', afterOffset: 1, attempts: 3 }],
    ] as const;
    for (const [type, payload] of types) {
      const next = reduce(base, { path: '/s', offset: 3, createdAt: at(9), type, payload, source: { copiedFrom: [h] } });
      expect(next.paused).toBe(false);
      expect(next.subscriptions.outbound).toBe(base.subscriptions.outbound);
      expect(next.eventCount).toBe(base.eventCount + 1);
      expect(next.maxOffset).toBe(3);
      expect(next.subscriptions.inbound.bySourcePath['/src']!['k']).toMatchObject({ numEventsReceived: 1 });
    }
  });

  it('a copied resumed does not resume a paused stream', () => {
    const paused = fold(ev(EventType.paused, { reason: 'x' }));
    const next = reduce(paused, { path: '/s', offset: 3, createdAt: at(3), ...copied(hop(), EventType.resumed) });
    expect(next.paused).toBe(true);
  });
});

describe('reduce: outbound subscriptions', () => {
  it('configured with an explicit key stores the effective configuration', () => {
    const state = fold(configured('k', { description: 'd' }));
    expect(state.subscriptions.outbound.byKey).toEqual({
      k: {
        configuration: { subscriptionKey: 'k', description: 'd', receiver: copyReceiver },
        configuredAtOffset: 2,
        configuredAt: at(1),
      },
    });
  });

  it('configured without a key generates subscription:<offset> and marks it generated', () => {
    const state = fold(ev('app/x'), configured());
    const key = 'subscription:3';
    expect(effectiveKey({}, 3)).toBe(key);
    expect(state.subscriptions.outbound.byKey[key]).toEqual({
      configuration: { subscriptionKey: key, receiver: copyReceiver },
      configuredAtOffset: 3,
      configuredAt: at(2),
      subscriptionKeyWasGenerated: true,
    });
  });

  it('re-configuring a generated key by name keeps it generated; an explicit key that merely looks generated is not', () => {
    const state = fold(configured(), configured('subscription:2', { description: 'again' }), configured('subscription:99'));
    expect(state.subscriptions.outbound.byKey['subscription:2']).toMatchObject({
      configuredAtOffset: 3,
      subscriptionKeyWasGenerated: true,
      configuration: { description: 'again' },
    });
    expect(state.subscriptions.outbound.byKey['subscription:99']).not.toHaveProperty('subscriptionKeyWasGenerated');
  });

  it('configured replaces the whole entry, clearing cursorSet and deliveryHalted', () => {
    const state = fold(
      configured('k', { description: 'first' }),
      ev(EventType.subscriptionCursorSet, { subscriptionKey: 'k', afterOffset: 1 }),
      ev(EventType.subscriptionDeliveryHalted, { subscriptionKey: 'k', reason: 'delivery-failed', afterOffset: 1, attempts: 15 }),
      configured('k'),
    );
    expect(state.subscriptions.outbound.byKey['k']).toEqual({
      configuration: { subscriptionKey: 'k', receiver: copyReceiver },
      configuredAtOffset: 5,
      configuredAt: at(4),
    });
  });

  it('cursor-set records the cursor and the offset it was set at', () => {
    const state = fold(configured('k'), ev(EventType.subscriptionCursorSet, { subscriptionKey: 'k', afterOffset: 1 }));
    expect(state.subscriptions.outbound.byKey['k']!.cursorSet).toEqual({ afterOffset: 1, setAtSourceOffset: 3 });
  });

  it('halted sets deliveryHalted (error only when a string); resumed deletes it', () => {
    const halted = fold(
      configured('k'),
      ev(EventType.subscriptionDeliveryHalted, { subscriptionKey: 'k', reason: 'delivery-failed', afterOffset: 2, attempts: 15, error: 'boom' }),
    );
    expect(halted.subscriptions.outbound.byKey['k']!.deliveryHalted).toEqual({
      reason: 'delivery-failed',
      afterOffset: 2,
      attempts: 15,
      error: 'boom',
    });
    const noError = fold(
      configured('k'),
      ev(EventType.subscriptionDeliveryHalted, { subscriptionKey: 'k', reason: 'delivery-failed', afterOffset: 2, attempts: 1, error: 7 }),
    );
    expect(noError.subscriptions.outbound.byKey['k']!.deliveryHalted).toEqual({ reason: 'delivery-failed', afterOffset: 2, attempts: 1 });
    const resumed = reduce(halted, {
      path: '/s',
      offset: 4,
      createdAt: at(4),
      ...ev(EventType.subscriptionDeliveryResumed, { subscriptionKey: 'k' }),
    });
    expect(resumed.subscriptions.outbound.byKey['k']).not.toHaveProperty('deliveryHalted');
    expect(resumed.subscriptions.outbound.byKey['k']!.configuredAtOffset).toBe(2);
  });

  it('removed deletes the entry', () => {
    const state = fold(configured('k'), configured('other'), ev(EventType.subscriptionRemoved, { subscriptionKey: 'k', reason: 'requested' }));
    expect(Object.keys(state.subscriptions.outbound.byKey)).toEqual(['other']);
  });

  it('removed, cursor-set, halted and resumed ignore unknown or malformed keys', () => {
    const base = fold(configured('k'));
    const commands: Array<[string, JsonObject | undefined]> = [
      [EventType.subscriptionRemoved, { subscriptionKey: 'nope' }],
      [EventType.subscriptionCursorSet, { subscriptionKey: 'nope', afterOffset: 1 }],
      [EventType.subscriptionDeliveryHalted, { subscriptionKey: 'nope', afterOffset: 1, attempts: 1 }],
      [EventType.subscriptionDeliveryResumed, { subscriptionKey: 'nope' }],
      [EventType.subscriptionRemoved, { subscriptionKey: 5 }],
      [EventType.subscriptionRemoved, undefined],
    ];
    for (const [type, payload] of commands) {
      const next = reduce(base, { path: '/s', offset: 3, createdAt: at(3), type, ...(payload ? { payload } : {}) });
      expect(next.subscriptions).toBe(base.subscriptions);
      expect(next.eventCount).toBe(base.eventCount + 1);
    }
    // Resuming a subscription that is not halted leaves it as it was.
    const resumed = reduce(base, { path: '/s', offset: 3, createdAt: at(3), ...ev(EventType.subscriptionDeliveryResumed, { subscriptionKey: 'k' }) });
    expect(resumed.subscriptions).toEqual(base.subscriptions);
  });

  it('other types (error-occurred, connection facts, caller types) only count', () => {
    const base = fold(configured('k'));
    for (const type of [EventType.errorOccurred, EventType.connectionOpened, EventType.connectionClosed, 'app/anything', EventType.created]) {
      const next = reduce(base, { path: '/s', offset: 3, createdAt: at(3), type, payload: { message: 'm' } });
      expect({ ...next, eventCount: base.eventCount, maxOffset: base.maxOffset }).toEqual(base);
    }
  });
});
