/**
 * StateFold, the fold of one decision's events (decide-append.ts): it must answer what folding the
 * same events one by one with `reduce` answers, and never change the state it starts from, while
 * it changes its own steps' states in place.
 */
import { EventType, type CommittedEvent, type CoreState } from '@rivulet/contract';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countersOnly } from './decide-append.js';
import { FOLDED_TYPES, StateFold, reduce } from './reduce.js';
import { T0, at, createdEvent, fold, hop } from '../../test/helpers/reduce-fold.js';

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

type Step = Omit<CommittedEvent, 'path' | 'offset' | 'createdAt'>;

const keys = fc.constantFrom('a', 'b');
/** Hops of a few runs of two sources: equal, newer and older stamps, other lifetimes. */
const hopArb = fc
  .record({
    path: fc.constantFrom('/src', '/other'),
    subscriptionKey: fc.constantFrom('k', 'j'),
    streamId: fc.constantFrom('src-1', 'src-2'),
    streamCreatedAt: fc.constantFrom(T0, at(1000)),
    cursorChangedAtSourceOffset: fc.integer({ min: 1, max: 4 }),
  })
  .map((h) => hop(h));
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.constant<Step>({ type: 'app/thing', payload: { n: 1 } }) },
  { weight: 4, arbitrary: fc.array(hopArb, { minLength: 1, maxLength: 2 }).map<Step>((hops) => ({ type: 'app/copied', payload: {}, source: { copiedFrom: hops } })) },
  { weight: 1, arbitrary: hopArb.map<Step>((h) => ({ type: EventType.paused, source: { copiedFrom: [h] } })) },
  { weight: 1, arbitrary: fc.constant<Step>({ type: 'app/thing', ephemeral: true }) },
  { weight: 1, arbitrary: fc.constant<Step>({ type: EventType.paused, payload: { reason: 'r' } }) },
  { weight: 1, arbitrary: fc.constant<Step>({ type: EventType.resumed }) },
  { weight: 1, arbitrary: keys.map<Step>((k) => ({ type: EventType.subscriptionConfigured, payload: { subscriptionKey: k, sourceStreamPath: '/x' } })) },
  { weight: 1, arbitrary: keys.map<Step>((k) => ({ type: EventType.subscriptionRemoved, payload: { subscriptionKey: k } })) },
  { weight: 1, arbitrary: keys.map<Step>((k) => ({ type: EventType.subscriptionCursorSet, payload: { subscriptionKey: k, afterOffset: 2 } })) },
  { weight: 1, arbitrary: keys.map<Step>((k) => ({ type: EventType.subscriptionDeliveryHalted, payload: { subscriptionKey: k, afterOffset: 1, attempts: 3 } })) },
  { weight: 1, arbitrary: keys.map<Step>((k) => ({ type: EventType.subscriptionDeliveryResumed, payload: { subscriptionKey: k } })) },
  { weight: 1, arbitrary: fc.constant<Step>({ type: EventType.errorOccurred, payload: { message: 'm' } }) },
);

/** The steps as committed events after a state whose head is `head`. */
const committed = (steps: Step[], head: number): CommittedEvent[] => steps.map((s, i) => ({ path: '/s', offset: head + 1 + i, createdAt: at(head + 1 + i), ...s }));

describe('StateFold: reduce over one decision, changing only its own steps in place', () => {
  it('answers what folding with reduce answers, and leaves the state it starts from as it was', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 12 }), fc.array(stepArb, { minLength: 1, maxLength: 40 }), (before, steps) => {
        const start = deepFreeze(fold(...before));
        const snapshot = structuredClone(start);
        const events = committed(steps, before.length + 1);
        const expected = events.reduce<CoreState>((state, event) => (event.ephemeral ? state : reduce(state, event)), start);
        const folding = new StateFold(start);
        for (const event of events) folding.add(event);
        expect(folding.state).toEqual(expected);
        // The frozen start would have thrown on a write; its value is unchanged too.
        expect(start).toEqual(snapshot);
      }),
      { numRuns: 400 },
    );
  });

  it('starts a stream from nothing with its created event, as reduce does', () => {
    const folding = new StateFold(null);
    folding.add(createdEvent());
    folding.add({ path: '/s', offset: 2, createdAt: at(2), type: 'app/thing' });
    expect(folding.state).toEqual(reduce(reduce(null, createdEvent()), { path: '/s', offset: 2, createdAt: at(2), type: 'app/thing' }));
  });

  it('a copy batch of one run makes one state and one record, counted through every copy', () => {
    const start = deepFreeze(fold());
    const folding = new StateFold(start);
    const copies = committed(
      Array.from({ length: 500 }, () => ({ type: 'app/thing', source: { copiedFrom: [hop()] } })),
      1,
    );
    folding.add(copies[0]!);
    const first = folding.state!;
    const record = first.subscriptions.inbound.bySourcePath['/src']!['k']!;
    for (const event of copies.slice(1)) folding.add(event);
    expect(folding.state).toBe(first);
    expect(folding.state!.subscriptions.inbound.bySourcePath['/src']!['k']).toBe(record);
    expect(record).toMatchObject({ numEventsReceived: 500, lastEventReceivedAt: at(501) });
    expect(folding.state).toMatchObject({ eventCount: 501, maxOffset: 501 });
  });
});

describe('FOLDED_TYPES: the types reduce folds into more than the counters', () => {
  it('every other type, core or not, changes only the counters', () => {
    const state = deepFreeze(fold({ type: EventType.subscriptionConfigured, payload: { subscriptionKey: 'a', sourceStreamPath: '/x' } }));
    const others = [...Object.values(EventType), 'app/thing'].filter((type) => !FOLDED_TYPES.has(type));
    expect(others.length).toBeGreaterThan(0);
    for (const type of others) {
      const payloads = [undefined, { subscriptionKey: 'a', afterOffset: 1, attempts: 1, reason: 'r' }];
      for (const payload of payloads) {
        const next = reduce(state, { path: '/s', offset: 3, createdAt: at(3), type, ...(payload ? { payload } : {}) });
        expect(countersOnly(state, next), type).toBe(true);
        expect(next).toMatchObject({ eventCount: state.eventCount + 1, maxOffset: 3 });
      }
    }
  });

  it('each folded type but created changes more than the counters with some payload', () => {
    const state = deepFreeze(
      fold(
        { type: EventType.subscriptionConfigured, payload: { subscriptionKey: 'a', sourceStreamPath: '/x' } },
        { type: EventType.subscriptionDeliveryHalted, payload: { subscriptionKey: 'a', afterOffset: 1, attempts: 1 } },
        { type: EventType.paused, payload: { reason: 'r' } },
      ),
    );
    const changing: Record<string, Step> = {
      [EventType.paused]: { type: EventType.paused, payload: { reason: 'other' } },
      [EventType.resumed]: { type: EventType.resumed },
      [EventType.subscriptionConfigured]: { type: EventType.subscriptionConfigured, payload: { subscriptionKey: 'b' } },
      [EventType.subscriptionRemoved]: { type: EventType.subscriptionRemoved, payload: { subscriptionKey: 'a' } },
      [EventType.subscriptionCursorSet]: { type: EventType.subscriptionCursorSet, payload: { subscriptionKey: 'a', afterOffset: 1 } },
      [EventType.subscriptionDeliveryHalted]: { type: EventType.subscriptionDeliveryHalted, payload: { subscriptionKey: 'a', afterOffset: 2, attempts: 2 } },
      [EventType.subscriptionDeliveryResumed]: { type: EventType.subscriptionDeliveryResumed, payload: { subscriptionKey: 'a' } },
    };
    expect(Object.keys(changing).sort()).toEqual([...FOLDED_TYPES].filter((t) => t !== EventType.created).sort());
    for (const [type, step] of Object.entries(changing)) {
      expect(countersOnly(state, reduce(state, { path: '/s', offset: 5, createdAt: at(5), ...step })), type).toBe(false);
    }
  });
});
