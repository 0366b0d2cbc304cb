/**
 * End-to-end over real HTTP: SSE tails (protocol §5.2) — replay then live with no gap and no
 * duplicate at the seam, Last-Event-ID — and ephemeral events (protocol §4.4).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommittedEvent } from '@rivulet/contract';
import { expectError, queryString, streamRoute, type Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { openTail, type SseReader } from '../helpers/sse.js';

const CREATED = 'events.iterate.com/stream/created';
const PAUSED = 'events.iterate.com/stream/paused';

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer();
  api = server.api;
});

afterAll(async () => {
  await server?.close();
});

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/**
 * Appends `total` events to `path` from `writers` concurrent loops (batches of 1–4), calling
 * `onAck` with the running count of acknowledged events after every acknowledged request.
 */
async function concurrentLoad(
  path: string,
  total: number,
  writers: number,
  onAck: (acked: number) => Promise<void> | void = () => undefined,
): Promise<CommittedEvent[]> {
  const acked: CommittedEvent[] = [];
  let next = 0;
  const writer = async (w: number) => {
    let round = 0;
    while (next < total) {
      const size = Math.min(1 + ((w + round++) % 4), total - next);
      const inputs = range(next, next + size - 1).map((n) => ({ type: 'load', payload: { n } }));
      next += size;
      acked.push(...(await api.append(path, inputs)));
      await onAck(acked.length);
    }
  };
  await Promise.all(range(1, writers).map(writer));
  return acked;
}

function expectDense(events: readonly CommittedEvent[], from: number, to: number): void {
  expect(events.map((e) => e.offset)).toEqual(range(from, to));
}

describe('SSE replay then live', () => {
  it('replay after afterOffset, then live, with no gap and no duplicate across the seam under concurrent appends', async () => {
    const path = '/s10/seam';
    await api.append(
      path,
      range(1, 40).map((n) => ({ type: 'seed', payload: { n } })),
    );
    const readers: { tail: SseReader; after: number }[] = [];
    const open = async (after: number) => {
      readers.push({ tail: await openTail(api, path, { afterOffset: after }), after });
    };
    try {
      await open(0);
      await open(17);
      // More readers open while the writers are busy, so their replay/live seam falls mid-load.
      const opened: Promise<void>[] = [];
      const acked = await concurrentLoad(path, 400, 8, (count) => {
        if (count >= 100 && opened.length === 0) opened.push(open(0));
        if (count >= 200 && opened.length === 1) opened.push(open(150));
        if (count >= 300 && opened.length === 2) opened.push(open(41));
      });
      await Promise.all(opened);
      expect(acked).toHaveLength(400);
      const head = 441;
      expect((await api.read(path, { afterOffset: 440 })).streamMaxOffset).toBe(head);
      const stored = await api.readAll(path);
      expectDense(stored, 1, head);

      expect(readers).toHaveLength(5);
      for (const { tail, after } of readers) {
        const received = await tail.eventsThrough(head);
        expectDense(received, after + 1, head);
        expect(received).toEqual(stored.slice(after));
      }
      // Nothing after the head: the next frame of every reader is the next append.
      const [marker] = await api.append(path, { type: 'marker' });
      for (const { tail } of readers) expect(await tail.nextEvent()).toEqual(marker);
    } finally {
      for (const { tail } of readers) tail.close();
    }
  });

  it('a reader of a stream that does not exist yet receives its creation live, and creates nothing itself', async () => {
    const path = '/s10/later';
    const tail = await openTail(api, path);
    try {
      expect(await api.read(path)).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
      const list = await api.request<{ streams: unknown[] }>('GET', `/v1/streams?prefix=${path}`);
      expect(list.body.streams).toEqual([]);
      const [a] = await api.append(path, { type: 'a' });
      const events = await tail.events(2);
      expect(events.map((e) => [e.offset, e.type])).toEqual([
        [1, CREATED],
        [2, 'a'],
      ]);
      expect(events[1]).toEqual(a);
    } finally {
      tail.close();
    }
  });

  it('a client reconnecting with Last-Event-ID continues exactly', async () => {
    const path = '/s10/resume';
    await api.append(
      path,
      range(1, 30).map((n) => ({ type: 'e', payload: { n } })),
    );
    const first = await openTail(api, path);
    let lastId: string;
    try {
      const got = await first.events(12);
      expectDense(got, 1, 12);
      lastId = String(got[got.length - 1]!.offset);
    } finally {
      first.close();
    }
    // Events appended while disconnected arrive after the reconnect, in order.
    await api.append(path, [{ type: 'gap-1' }, { type: 'gap-2' }]);
    const second = await openTail(api, path, {}, { 'last-event-id': lastId });
    try {
      const got = await second.eventsThrough(33);
      expectDense(got, 13, 33);
      expect(got.slice(-2).map((e) => e.type)).toEqual(['gap-1', 'gap-2']);
      const [live] = await api.append(path, { type: 'live' });
      expect(await second.nextEvent()).toEqual(live);
    } finally {
      second.close();
    }
  });

  it('Last-Event-ID wins over afterOffset', async () => {
    const path = '/s10/wins';
    await api.append(
      path,
      range(1, 10).map((n) => ({ type: 'e', payload: { n } })),
    );
    const lower = await openTail(api, path, { afterOffset: 2 }, { 'last-event-id': '8' });
    try {
      expectDense(await lower.eventsThrough(11), 9, 11);
    } finally {
      lower.close();
    }
    const higher = await openTail(api, path, { afterOffset: 9 }, { 'last-event-id': '3' });
    try {
      expectDense(await higher.eventsThrough(11), 4, 11);
    } finally {
      higher.close();
    }
  });

  it('afterOffset at or beyond the head replays nothing and goes live; eventTypes filters replay and live', async () => {
    const path = '/s10/filter';
    await api.append(path, [{ type: 'keep' }, { type: 'drop' }, { type: 'keep' }]);
    const atHead = await openTail(api, path, { afterOffset: 4 });
    const filtered = await openTail(api, path, { eventTypes: 'keep,other' });
    try {
      const [drop, keep, other] = await api.append(path, [{ type: 'drop' }, { type: 'keep' }, { type: 'other' }]);
      expect(await atHead.events(3)).toEqual([drop, keep, other]);
      const got = await filtered.events(4);
      expect(got.map((e) => [e.offset, e.type])).toEqual([
        [2, 'keep'],
        [4, 'keep'],
        [6, 'keep'],
        [7, 'other'],
      ]);
    } finally {
      atHead.close();
      filtered.close();
    }
  });

  it('SSE rejects read-only parameters and a malformed Last-Event-ID before streaming', async () => {
    const route = streamRoute('/s10/bad');
    expectError(
      await api.request('GET', `${route}${queryString({ live: 'sse', limit: 5 })}`),
      'INVALID_INPUT',
      'live=sse takes only afterOffset, eventTypes and expectedStreamId',
    );
    expectError(
      await api.request('GET', `${route}${queryString({ live: 'sse' })}`, { headers: { 'last-event-id': 'abc' } }),
      'INVALID_INPUT',
      'Last-Event-ID must be the offset of the last event received',
    );
    expectError(
      await api.request('GET', `${route}${queryString({ live: 'sse', afterOffset: -1 })}`),
      'INVALID_INPUT',
      'afterOffset must be a non-negative integer',
    );
    expectError(await api.request('GET', `${route}${queryString({ live: 'ws' })}`), 'INVALID_INPUT', 'live must be "sse"');
    expect(await api.read('/s10/bad')).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
  });
});

describe('SSE lifetimes (protocol §5.2)', () => {
  it('the first frame names the lifetime; expectedStreamId of another lifetime answers destroyed at once', async () => {
    const path = '/s10/lifetime';
    const before = await openTail(api, path);
    try {
      expect(before.stream).toEqual({ streamId: null, streamMaxOffset: 0 });
    } finally {
      before.close();
    }
    await api.append(path, [{ type: 'a' }, { type: 'b' }]);
    const { streamId } = await api.read(path);
    const same = await openTail(api, path, { expectedStreamId: streamId! }, { 'last-event-id': '2' });
    try {
      expect(same.stream).toEqual({ streamId, streamMaxOffset: 3 });
      expect((await same.events(1)).map((e) => [e.offset, e.type])).toEqual([[3, 'b']]);
    } finally {
      same.close();
    }
    await api.request('DELETE', streamRoute(path));
    await api.append(path, { type: 'new-lifetime' });
    // The old cursor (offset 3) means nothing in the new lifetime: the tail must not resume at 4.
    const stale = await openTail(api, path, { expectedStreamId: streamId! }, { 'last-event-id': '3' });
    try {
      expect(stale.stream).toBeUndefined();
      const frame = await stale.next();
      expect(frame?.event).toBe('destroyed');
      expect(await stale.next()).toBeNull();
    } finally {
      stale.close();
    }
    expectError(
      await api.request('GET', `${streamRoute(path)}${queryString({ expectedStreamId: streamId! })}`),
      'INVALID_INPUT',
      'expectedStreamId is a parameter of live=sse',
    );
  });
});

describe('ephemeral events', () => {
  it('ephemeral events take offsets and are readable only with includeEphemeral', async () => {
    const path = '/s6/read';
    const [a, e, b] = await api.append(path, [
      { type: 'a' },
      { type: 'typing', payload: { who: 'x' }, ephemeral: true },
      { type: 'b' },
    ]);
    expect([a!.offset, e!.offset, b!.offset]).toEqual([2, 3, 4]);
    expect(e!.ephemeral).toBe(true);

    const durable = await api.read(path);
    expect(durable.streamMaxOffset).toBe(4);
    expect(durable.events.map((x) => x.offset)).toEqual([1, 2, 4]);
    const everything = await api.read(path, { includeEphemeral: true });
    expect(everything.events.map((x) => x.offset)).toEqual([1, 2, 3, 4]);
    expect(everything.events[2]).toEqual(e);
    expect((await api.read(path, { includeEphemeral: false })).events).toEqual(durable.events);
    expect((await api.read(path, { eventTypes: 'typing' })).events).toEqual([]);
    expect((await api.read(path, { eventTypes: 'typing', includeEphemeral: true })).events).toEqual([e]);

    // Ephemeral events are never folded into core state.
    const { core, runtime } = await api.state(path);
    expect(core).toMatchObject({ eventCount: 3, maxOffset: 4 });
    expect(runtime).toMatchObject({ streamMaxOffset: 4 });
    // A trailing ephemeral event still takes the head.
    const [last] = await api.append(path, { type: 'typing', ephemeral: true });
    expect(last!.offset).toBe(5);
    expect((await api.read(path)).streamMaxOffset).toBe(5);
    const [next] = await api.append(path, { type: 'c' });
    expect(next!.offset).toBe(6);
  });

  it('ephemeral events reach SSE readers open at append time and are never replayed to later readers', async () => {
    const path = '/s6/live';
    await api.append(path, { type: 'a' });
    const early = await openTail(api, path);
    try {
      // Once the reader has received an event, it is registered: later appends reach it live.
      expect((await early.events(2)).map((x) => x.offset)).toEqual([1, 2]);
      const [eph, durable] = await api.append(path, [{ type: 'typing', ephemeral: true }, { type: 'b' }]);
      expect(await early.events(2)).toEqual([eph, durable]);
      const [eph2] = await api.append(path, { type: 'typing', payload: { n: 2 }, ephemeral: true });
      expect(await early.nextEvent()).toEqual(eph2);

      const late = await openTail(api, path);
      try {
        const replayed = await late.events(3);
        expect(replayed.map((x) => [x.offset, x.type])).toEqual([
          [1, CREATED],
          [2, 'a'],
          [4, 'b'],
        ]);
        const [c] = await api.append(path, { type: 'c' });
        // The late reader's next frame is c: the ephemeral offsets 3 and 5 were skipped.
        expect(await late.nextEvent()).toEqual(c);
        expect(await early.nextEvent()).toEqual(c);
        // Last-Event-ID pointing before an ephemeral event does not replay it either.
        const resumed = await openTail(api, path, {}, { 'last-event-id': '2' });
        try {
          expect((await resumed.eventsThrough(6)).map((x) => x.offset)).toEqual([4, 6]);
        } finally {
          resumed.close();
        }
      } finally {
        late.close();
      }
    } finally {
      early.close();
    }
  });

  it('ephemeral events are retained for a bounded count; a pruned offset is never reused', async () => {
    const bounded = await startTestServer({ ephemeralRetentionCount: 2 });
    try {
      const path = '/s6/retention';
      // The first commit of a stream prunes: of five ephemeral events the newest two stay.
      const events = await bounded.api.append(path, [
        ...range(1, 5).map((n) => ({ type: 'typing', payload: { n }, ephemeral: true as const })),
        { type: 'durable' },
      ]);
      expect(events.map((e) => e.offset)).toEqual([2, 3, 4, 5, 6, 7]);
      const kept = await bounded.api.read(path, { includeEphemeral: true });
      expect(kept.events.map((e) => e.offset)).toEqual([1, 5, 6, 7]);
      expect(kept.events.slice(1)).toEqual(events.slice(3));
      expect(kept.streamMaxOffset).toBe(7);
      const [next] = await bounded.api.append(path, { type: 'after' });
      expect(next!.offset).toBe(8);
    } finally {
      await bounded.close();
    }
  });

  it('control events cannot be ephemeral', async () => {
    const path = '/s6/control';
    expectError(
      await api.post(path, { type: PAUSED, ephemeral: true }),
      'INVALID_INPUT',
      `events[0]: control events (${PAUSED}) cannot be ephemeral`,
    );
    expect(await api.read(path, { includeEphemeral: true })).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    await api.append(path, { type: 'x' });
    expectError(
      await api.post(path, [{ type: 'x', ephemeral: true }, { type: 'events.iterate.com/stream/resumed', ephemeral: true }]),
      'INVALID_INPUT',
      'events[1]: control events (events.iterate.com/stream/resumed) cannot be ephemeral',
    );
    expect((await api.read(path, { includeEphemeral: true })).streamMaxOffset).toBe(2);
  });
});
