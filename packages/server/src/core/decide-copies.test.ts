/**
 * decideAppend folds the copies of a batch that share their last hop as one run (reduceCopies):
 * the state it answers must be the fold of the log, event by event (protocol §10.1, §10.3), for
 * batches that mix runs, other sources, stale stamps, plain events, repeats and eviction.
 */
import { INTERNAL_IDEMPOTENCY_PREFIX, Limits, type CommittedEvent, type CopyHop, type CoreState } from '@rivulet/contract';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AppendInput } from './append-input.js';
import { reduce, reduceCopies } from './reduce.js';
import { NOW, Stream } from '../../test/helpers/decide-stream.js';
import { createdEvent, hop } from '../../test/helpers/reduce-fold.js';

const replay = (events: readonly CommittedEvent[]): CoreState | null =>
  events.reduce<CoreState | null>((state, e) => (e.ephemeral ? state : reduce(state, e)), null);

const copy = (h: CopyHop, key?: string): AppendInput => ({
  type: 'app/copied',
  payload: { at: h.offset },
  source: { copiedFrom: [h] },
  ...(key !== undefined ? { idempotencyKey: key } : {}),
});

// Hops of a few sources, keys and stamps, older and newer, so that runs break and fences refuse.
const hopArb = fc.record({
  path: fc.constantFrom('/a', '/b'),
  subscriptionKey: fc.constantFrom('k', 'j'),
  streamId: fc.constantFrom('src-1', 'src-2'),
  cursorChangedAtSourceOffset: fc.integer({ min: 1, max: 3 }),
  offset: fc.integer({ min: 1, max: 50 }),
});
const inputArb: fc.Arbitrary<{ kind: 'copy'; hop: fc.RecordValue<typeof hopArb>; key: number | null } | { kind: 'plain' } | { kind: 'ephemeral' }> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('copy' as const), hop: hopArb, key: fc.option(fc.integer({ min: 0, max: 5 })) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'plain' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'ephemeral' as const }) },
);

describe('decideAppend: copies folded as runs', () => {
  it('answers the fold of the log, for any batches of copies, plain and ephemeral events', () => {
    fc.assert(
      fc.property(fc.array(fc.array(inputArb, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 5 }), (batches) => {
        const s = new Stream();
        for (const batch of batches) {
          const inputs = batch.map((i): AppendInput => {
            if (i.kind === 'plain') return { type: 'app/plain', payload: { n: 1 } };
            if (i.kind === 'ephemeral') return { type: 'app/ping', ephemeral: true };
            return copy(hop(i.hop), i.key === null ? undefined : `${INTERNAL_IDEMPOTENCY_PREFIX}copy-${i.key}`);
          });
          s.append(inputs, 'platform');
          expect(s.state).toEqual(replay(s.events));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a run of 1000 copies counts 1000 received, at the append time, with the counters of the log', () => {
    const s = new Stream();
    s.append([{ type: 'app/plain' }]);
    const inputs = Array.from({ length: 1000 }, (_, i) => copy(hop({ offset: i + 1 })));
    s.append(inputs, 'platform');
    expect(s.state!.subscriptions.inbound.bySourcePath['/src']!['k']).toEqual({
      streamId: 'src-1',
      streamCreatedAt: hop().streamCreatedAt,
      cursorChangedAtSourceOffset: 3,
      numEventsReceived: 1000,
      lastEventReceivedAt: NOW,
    });
    expect(s.state).toMatchObject({ eventCount: 1002, maxOffset: 1002 });
    expect(s.state).toEqual(replay(s.events));
  });

  it('a stale stamp inside a batch is counted in the counters but not in the newer record', () => {
    const s = new Stream();
    s.append([copy(hop({ cursorChangedAtSourceOffset: 5 }))], 'platform');
    s.append([copy(hop({ cursorChangedAtSourceOffset: 4 })), copy(hop({ cursorChangedAtSourceOffset: 4 })), copy(hop({ cursorChangedAtSourceOffset: 5 }))], 'platform');
    expect(s.state!.subscriptions.inbound.bySourcePath['/src']!['k']).toMatchObject({ cursorChangedAtSourceOffset: 5, numEventsReceived: 2 });
    expect(s.state).toMatchObject({ eventCount: 5, maxOffset: 5 });
    expect(s.state).toEqual(replay(s.events));
  });
});

describe('reduceCopies', () => {
  const full = (): CoreState => {
    let state = reduce(null, createdEvent());
    for (let i = 0; i < Limits.inboundRecordsMax; i++) {
      state = reduce(state, { path: '/s', offset: i + 2, createdAt: NOW, type: 'app/x', source: { copiedFrom: [hop({ path: `/full/${i}` })] } });
    }
    return state;
  };
  const oneByOne = (state: CoreState, h: CopyHop, count: number, receivedAt: string): CoreState => {
    for (let i = 0; i < count; i++) {
      state = reduce(state, { path: '/s', offset: state.maxOffset + 1, createdAt: receivedAt, type: 'app/x', source: { copiedFrom: [h] } });
    }
    return state;
  };

  it('equals folding the copies one by one: no record, an older, an equal or a newer stamp, another lifetime, a full table', () => {
    const receivedAt = '2025-06-01T00:00:00.000Z';
    const starts: Array<[string, CoreState]> = [
      ['no record', reduce(null, createdEvent())],
      ['older stamp', oneByOne(reduce(null, createdEvent()), hop({ cursorChangedAtSourceOffset: 1 }), 2, NOW)],
      ['equal stamp', oneByOne(reduce(null, createdEvent()), hop(), 3, NOW)],
      ['newer stamp', oneByOne(reduce(null, createdEvent()), hop({ cursorChangedAtSourceOffset: 9 }), 2, NOW)],
      ['another lifetime', oneByOne(reduce(null, createdEvent()), hop({ streamId: 'src-0', streamCreatedAt: '2024-01-01T00:00:00.000Z' }), 2, NOW)],
      ['a full table', full()],
    ];
    for (const [name, start] of starts) {
      for (const count of [1, 2, 7]) {
        const expected = oneByOne(start, hop(), count, receivedAt);
        expect(reduceCopies(start, hop(), count, start.maxOffset + count, receivedAt), `${name}, ${count}`).toEqual(expected);
      }
    }
  });
});
