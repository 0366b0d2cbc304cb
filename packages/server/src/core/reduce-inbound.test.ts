/**
 * reduce, the fold of committed events into core state: the inbound fence records a receiving
 * stream keeps per source path and subscription key (protocol §10.3, §13.1), and their eviction.
 */
import { Limits, type CoreState } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { reduce } from './reduce.js';
import { T0, at, copied, createdEvent, fold, hop } from '../../test/helpers/reduce-fold.js';

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
