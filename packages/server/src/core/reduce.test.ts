import {
  EventType,
  Limits,
  type CommittedEvent,
  type CopyHop,
  type CoreState,
  type JsonObject,
} from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { counted, effectiveKey, reduce } from './reduce.js';

const T0 = '2025-01-01T00:00:00.000Z';
const at = (ms: number): string => new Date(Date.parse(T0) + ms).toISOString();

const createdEvent = (projectId: string | null = 'proj'): CommittedEvent => ({
  path: '/s',
  offset: 1,
  createdAt: T0,
  type: EventType.created,
  payload: { projectId, path: '/s', streamId: 'stream-1' },
});

/** Folds events with consecutive offsets after the created event. */
function fold(...events: Array<Omit<CommittedEvent, 'offset' | 'path' | 'createdAt'> & { createdAt?: string }>): CoreState {
  let state = reduce(null, createdEvent());
  events.forEach((e, i) => {
    state = reduce(state, { path: '/s', offset: i + 2, createdAt: e.createdAt ?? at(i + 1), ...e });
  });
  return state;
}

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

function hop(overrides: Partial<CopyHop> = {}): CopyHop {
  return {
    projectId: 'proj',
    path: '/src',
    streamId: 'src-1',
    streamCreatedAt: T0,
    offset: 5,
    type: 'app/thing',
    createdAt: T0,
    subscriptionKey: 'k',
    cursorChangedAtSourceOffset: 3,
    ...overrides,
  };
}

const copied = (h: CopyHop, type = 'app/thing', createdAt?: string) => ({
  type,
  payload: { copied: true },
  source: { copiedFrom: [h] },
  ...(createdAt ? { createdAt } : {}),
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

describe('reduce: inbound fence records (protocol §10.3, §13.1)', () => {
  const record = (state: CoreState, path = '/src', key = 'k') => state.subscriptions.inbound.bySourcePath[path]?.[key];

  it('the first copied event creates the record from its last hop', () => {
    const state = fold(copied(hop(), 'app/thing', at(5)));
    expect(record(state)).toEqual({
      streamId: 'src-1',
      streamCreatedAt: T0,
      cursorChangedAtSourceOffset: 3,
      numEventsReceived: 1,
      lastEventReceivedAt: at(5),
    });
  });

  it('uses the last hop of a multi-hop chain', () => {
    const first = hop({ path: '/origin', subscriptionKey: 'o' });
    const last = hop({ path: '/middle', subscriptionKey: 'm' });
    const state = fold({ type: 'app/x', source: { copiedFrom: [first, last] } });
    expect(Object.keys(state.subscriptions.inbound.bySourcePath)).toEqual(['/middle']);
    expect(record(state, '/middle', 'm')).toMatchObject({ numEventsReceived: 1 });
  });

  it('an equal stamp is accepted and counts; a newer generation of the same lifetime keeps counting', () => {
    const state = fold(copied(hop()), copied(hop()), copied(hop({ cursorChangedAtSourceOffset: 9 }), 'app/thing', at(50)));
    expect(record(state)).toEqual({
      streamId: 'src-1',
      streamCreatedAt: T0,
      cursorChangedAtSourceOffset: 9,
      numEventsReceived: 3,
      lastEventReceivedAt: at(50),
    });
  });

  it('an older stamp is ignored: older generation, older lifetime, or lower streamId at the same creation time', () => {
    const base = fold(copied(hop({ streamCreatedAt: at(100), streamId: 'm', cursorChangedAtSourceOffset: 5 })));
    const older = [
      hop({ streamCreatedAt: at(100), streamId: 'm', cursorChangedAtSourceOffset: 4 }),
      hop({ streamCreatedAt: at(99), streamId: 'z', cursorChangedAtSourceOffset: 50 }),
      hop({ streamCreatedAt: at(100), streamId: 'a', cursorChangedAtSourceOffset: 50 }),
    ];
    for (const h of older) {
      const next = reduce(base, { path: '/s', offset: 3, createdAt: at(200), ...copied(h) });
      expect(next.subscriptions).toBe(base.subscriptions);
      expect(next.eventCount).toBe(base.eventCount + 1);
      expect(next.maxOffset).toBe(3);
    }
  });

  it('numEventsReceived restarts at 1 with a new source lifetime (newer creation, or same time and higher streamId)', () => {
    const base = fold(copied(hop()), copied(hop()));
    expect(record(base)!.numEventsReceived).toBe(2);
    const recreated = reduce(base, {
      path: '/s',
      offset: 4,
      createdAt: at(10),
      ...copied(hop({ streamId: 'src-2', streamCreatedAt: at(5), cursorChangedAtSourceOffset: 0 })),
    });
    expect(record(recreated)).toEqual({
      streamId: 'src-2',
      streamCreatedAt: at(5),
      cursorChangedAtSourceOffset: 0,
      numEventsReceived: 1,
      lastEventReceivedAt: at(10),
    });
    const tie = reduce(base, { path: '/s', offset: 4, createdAt: at(10), ...copied(hop({ streamId: 'src-9', cursorChangedAtSourceOffset: 0 })) });
    expect(record(tie)).toMatchObject({ streamId: 'src-9', numEventsReceived: 1 });
  });

  it('records are kept per source path and per subscription key', () => {
    const state = fold(copied(hop()), copied(hop({ subscriptionKey: 'k2' })), copied(hop({ path: '/other' })), copied(hop()));
    expect(record(state)!.numEventsReceived).toBe(2);
    expect(record(state, '/src', 'k2')!.numEventsReceived).toBe(1);
    expect(record(state, '/other', 'k')!.numEventsReceived).toBe(1);
  });

  describe(`eviction past ${Limits.inboundRecordsMax} records`, () => {
    const max = Limits.inboundRecordsMax;
    /** A receiver holding `max` records, record i received at at(i). */
    function full(): CoreState {
      let state = reduce(null, createdEvent());
      for (let i = 0; i < max; i++) {
        state = reduce(state, {
          path: '/s',
          offset: i + 2,
          createdAt: at(i),
          ...copied(hop({ path: `/src/${i % 7}`, subscriptionKey: `k${i}` })),
        });
      }
      return state;
    }
    const total = (state: CoreState): number =>
      Object.values(state.subscriptions.inbound.bySourcePath).reduce((n, byKey) => n + Object.keys(byKey).length, 0);

    const state = full();

    it('holds exactly the limit without evicting', () => {
      expect(total(state)).toBe(max);
    });

    it('a new record evicts the least recently received one', () => {
      const next = reduce(state, {
        path: '/s',
        offset: max + 2,
        createdAt: at(max),
        ...copied(hop({ path: '/new', subscriptionKey: 'fresh' })),
      });
      expect(total(next)).toBe(max);
      expect(record(next, '/new', 'fresh')).toBeDefined();
      expect(record(next, '/src/0', 'k0')).toBeUndefined();
      expect(record(next, '/src/1', 'k1')).toBeDefined();
    });

    it('receiving again refreshes a record, so the next eviction takes another one', () => {
      const refreshed = reduce(state, {
        path: '/s',
        offset: max + 2,
        createdAt: at(max),
        ...copied(hop({ path: '/src/0', subscriptionKey: 'k0' })),
      });
      expect(total(refreshed)).toBe(max);
      const next = reduce(refreshed, {
        path: '/s',
        offset: max + 3,
        createdAt: at(max + 1),
        ...copied(hop({ path: '/new', subscriptionKey: 'fresh' })),
      });
      expect(record(next, '/src/0', 'k0')).toBeDefined();
      expect(record(next, '/src/1', 'k1')).toBeUndefined();
      expect(total(next)).toBe(max);
    });

    it('an emptied source path disappears', () => {
      let s = reduce(null, createdEvent());
      for (let i = 0; i < max; i++) {
        s = reduce(s, { path: '/s', offset: i + 2, createdAt: at(i), ...copied(hop({ path: i === 0 ? '/lonely' : '/src', subscriptionKey: `k${i}` })) });
      }
      const next = reduce(s, { path: '/s', offset: max + 2, createdAt: at(max), ...copied(hop({ path: '/new' })) });
      expect(next.subscriptions.inbound.bySourcePath).not.toHaveProperty('/lonely');
    });
  });
});
