/**
 * End-to-end over real HTTP: reads, pause and resume, and destroy (protocol §4.5, §5, §6).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommittedEvent } from '@rivulet/contract';
import { UUID, expectError, isListed, streamRoute, type Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { openTail } from '../helpers/sse.js';

const CREATED = 'events.iterate.com/stream/created';
const PAUSED = 'events.iterate.com/stream/paused';
const RESUMED = 'events.iterate.com/stream/resumed';

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer();
  api = server.api;
});

afterAll(async () => {
  await server?.close();
});

const listed = (path: string): Promise<boolean> => isListed(api, path);

describe('reads', () => {
  const path = '/s5/paging';
  let all: CommittedEvent[];

  beforeAll(async () => {
    const inputs = Array.from({ length: 619 }, (_, i) => ({ type: i % 3 === 0 ? 'three' : 'other', payload: { i } }));
    await api.append(path, inputs);
    all = [];
    let after = 0;
    for (;;) {
      const page = await api.read(path, { afterOffset: after });
      all.push(...page.events);
      if (page.events.length === 0) break;
      after = page.events[page.events.length - 1]!.offset;
    }
  });

  it('reads page at most 500 events', async () => {
    const first = await api.read(path);
    expect(first.streamMaxOffset).toBe(620);
    expect(first.events).toHaveLength(500);
    expect(first.events.map((e) => e.offset)).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
    const second = await api.read(path, { afterOffset: 500 });
    expect(second.events.map((e) => e.offset)).toEqual(Array.from({ length: 120 }, (_, i) => i + 501));
    expect(all.map((e) => e.offset)).toEqual(Array.from({ length: 620 }, (_, i) => i + 1));
  });

  it('limit 1–500 is honoured; limit above 500 is INVALID_INPUT', async () => {
    expect((await api.read(path, { limit: 500 })).events).toHaveLength(500);
    expect((await api.read(path, { limit: 1 })).events.map((e) => e.offset)).toEqual([1]);
    expect((await api.read(path, { limit: 7, afterOffset: 10 })).events.map((e) => e.offset)).toEqual([
      11, 12, 13, 14, 15, 16, 17,
    ]);
    expectError(await api.request('GET', `${streamRoute(path)}?limit=501`), 'INVALID_INPUT', 'limit must be at most 500');
    expectError(await api.request('GET', `${streamRoute(path)}?limit=0`), 'INVALID_INPUT', 'limit must be at least 1');
  });

  it('afterOffset and beforeOffset are exclusive bounds', async () => {
    const r = await api.read(path, { afterOffset: 5, beforeOffset: 9 });
    expect(r.events.map((e) => e.offset)).toEqual([6, 7, 8]);
    expect(r.streamMaxOffset).toBe(620);
    expect((await api.read(path, { afterOffset: 5, beforeOffset: 6 })).events).toEqual([]);
    expect((await api.read(path, { afterOffset: 9, beforeOffset: 3 })).events).toEqual([]);
    expect((await api.read(path, { afterOffset: 620 })).events).toEqual([]);
    expect((await api.read(path, { afterOffset: 10_000 })).events).toEqual([]);
    expect((await api.read(path, { beforeOffset: 3 })).events.map((e) => e.offset)).toEqual([1, 2]);
    expect((await api.read(path, { afterOffset: 0, beforeOffset: 2 })).events).toEqual([all[0]]);
  });

  it('eventTypes filters a comma list, combined with the bounds and the page limit', async () => {
    const threes = all.filter((e) => e.type === 'three');
    const r = await api.read(path, { eventTypes: 'three' });
    expect(r.events).toEqual(threes);
    const both = await api.read(path, { eventTypes: `three,${CREATED}` });
    expect(both.events).toEqual([all[0], ...threes]);
    const spaced = await api.read(path, { eventTypes: ` three , ${CREATED} ` });
    expect(spaced.events).toEqual(both.events);
    const bounded = await api.read(path, { eventTypes: 'three', afterOffset: 10, beforeOffset: 30, limit: 3 });
    expect(bounded.events).toEqual(threes.filter((e) => e.offset > 10 && e.offset < 30).slice(0, 3));
    const other = await api.read(path, { eventTypes: 'other', limit: 500 });
    expect(other.events).toHaveLength(412);
    expect(other.events.every((e) => e.type === 'other')).toBe(true);
    expect((await api.read(path, { eventTypes: 'missing' })).events).toEqual([]);
  });
});

describe('pause and resume', () => {
  it('a paused stream rejects appends with PRECONDITION_FAILED until stream/resumed', async () => {
    const path = '/s7/pause';
    await api.append(path, { type: 'a' });
    const [paused] = await api.append(path, { type: PAUSED, payload: { reason: 'maintenance window' } });
    expect(paused!.offset).toBe(3);
    expect((await api.state(path)).core).toMatchObject({ paused: true, pauseReason: 'maintenance window' });

    const refused = expectError(
      await api.post(path, { type: 'b' }),
      'PRECONDITION_FAILED',
      'stream /s7/pause is paused (maintenance window); it refuses appends until events.iterate.com/stream/resumed',
    );
    expect(refused.details).toMatchObject({ paused: true, pauseReason: 'maintenance window' });
    expect((await api.read(path)).streamMaxOffset).toBe(3);

    // Judged in order: [x, resumed] is refused as a whole.
    expectError(await api.post(path, [{ type: 'x' }, { type: RESUMED }]), 'PRECONDITION_FAILED', 'is paused');
    expect((await api.read(path)).streamMaxOffset).toBe(3);

    const [resumed] = await api.append(path, { type: RESUMED, payload: { reason: 'done' } });
    expect(resumed!.offset).toBe(4);
    expect((await api.state(path)).core).toMatchObject({ paused: false, pauseReason: null });
    const [b] = await api.append(path, { type: 'b' });
    expect(b!.offset).toBe(5);
  });

  it('a batch [resumed, x] on a paused stream is accepted', async () => {
    const path = '/s7/batch';
    await api.append(path, { type: PAUSED });
    expect((await api.state(path)).core).toMatchObject({ paused: true, pauseReason: null });
    expectError(await api.post(path, { type: 'x' }), 'PRECONDITION_FAILED', 'stream /s7/batch is paused;');
    const events = await api.append(path, [{ type: RESUMED }, { type: 'x' }, { type: PAUSED, payload: { reason: 'again' } }]);
    expect(events.map((e) => [e.offset, e.type])).toEqual([
      [3, RESUMED],
      [4, 'x'],
      [5, PAUSED],
    ]);
    expect((await api.state(path)).core).toMatchObject({ paused: true, pauseReason: 'again', eventCount: 5 });
  });

  it('an idempotent repeat is answered while paused; pause payloads are validated', async () => {
    const path = '/s7/repeat';
    const [stored] = await api.append(path, { type: 'a', idempotencyKey: 'k' });
    await api.append(path, { type: PAUSED });
    const [repeat] = await api.append(path, { type: 'a', idempotencyKey: 'k' });
    expect(repeat).toEqual(stored);
    expectError(await api.post(path, { type: RESUMED, payload: { reason: 5 } }), 'INVALID_INPUT', 'events[0].payload.reason');
    expectError(await api.post(path, { type: RESUMED, payload: { why: 'x' } }), 'INVALID_INPUT', 'Unrecognized key');
    expect((await api.state(path)).core).toMatchObject({ paused: true });
  });
});

describe('destroy', () => {
  it('destroy erases a stream; the next append recreates it with a new streamId from offset 1', async () => {
    const path = '/s8/destroy';
    await api.append(path, [{ type: 'a', idempotencyKey: 'k' }, { type: 'b' }, { type: 'c', ephemeral: true }]);
    const before = await api.read(path);
    await api.destroy(path);
    expect(await api.read(path)).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    expect(await api.read(path, { includeEphemeral: true })).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    expect(await api.state(path)).toEqual({ core: null, runtime: null });
    expect(await listed(path)).toBe(false);

    // Idempotency is per lifetime: the old key names nothing now.
    const [again] = await api.append(path, { type: 'other', idempotencyKey: 'k' });
    expect(again!.offset).toBe(2);
    const after = await api.read(path);
    expect(after.streamId).toMatch(UUID);
    expect(after.streamId).not.toBe(before.streamId);
    expect(after.events.map((e) => [e.offset, e.type])).toEqual([
      [1, CREATED],
      [2, 'other'],
    ]);
    expect(after.events[0]!.payload).toEqual({ projectId: null, path, streamId: after.streamId });
    expect((await api.state(path)).core).toMatchObject({ streamId: after.streamId, eventCount: 2, maxOffset: 2 });
  });

  it('an open SSE reader gets event: destroyed and the response ends', async () => {
    const path = '/s8/sse';
    await api.append(path, { type: 'a' });
    const tail = await openTail(api, path);
    try {
      expect((await tail.events(2)).map((e) => e.offset)).toEqual([1, 2]);
      await api.destroy(path);
      const frame = await tail.next();
      expect(frame).toMatchObject({ event: 'destroyed' });
      expect(await tail.next()).toBeNull();
    } finally {
      tail.close();
    }
    // A reader opened on the new lifetime starts from its offset 1.
    const [x] = await api.append(path, { type: 'x' });
    expect(x!.offset).toBe(2);
    const fresh = await openTail(api, path);
    try {
      const events = await fresh.events(2);
      expect(events.map((e) => [e.offset, e.type])).toEqual([
        [1, CREATED],
        [2, 'x'],
      ]);
    } finally {
      fresh.close();
    }
  });

  it('destroying a stream that does not exist answers destroyed and creates nothing', async () => {
    await api.destroy('/s8/never');
    expect(await api.read('/s8/never')).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    expect(await listed('/s8/never')).toBe(false);
  });
});
