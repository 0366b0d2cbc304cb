/**
 * decideAppend, the pure decision of one append (protocol §2–§4): a new stream, dense offsets,
 * idempotent repeats (§4.2) and paused streams (§4.5). Size limits, the control rules hook and the
 * counters-only shortcut are in decide-append-limits.test.ts.
 */
import { EventType } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import type { AppendInput } from './append-input.js';
import { utf8Length } from './sizes.js';
import { NOW, Stream, paused, resumed, x } from '../../test/helpers/decide-stream.js';

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
