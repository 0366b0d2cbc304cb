/**
 * End-to-end over real HTTP: creation, atomic batches, idempotent repeats, round trips, reads,
 * pause, destroy and authority (protocol §2–§6).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommittedEvent } from '@rivulet/contract';
import { UUID, expectError, streamRoute, type Api } from '../helpers/http.js';
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

async function listed(path: string): Promise<boolean> {
  const res = await api.request<{ streams: { path: string }[] }>('GET', `/v1/streams?prefix=${encodeURIComponent(path)}`);
  expect(res.status, res.text).toBe(200);
  return res.body.streams.some((s) => s.path === path);
}

describe('the first touch creates a stream', () => {
  it('offset 1 is stream/created with a UUID streamId; caller events follow at 2, 3, …', async () => {
    const path = '/s1/orders';
    const [first] = await api.append(path, { type: 'shop.example/order-created', payload: { id: 7 } });
    expect(first).toMatchObject({ path, offset: 2, type: 'shop.example/order-created', payload: { id: 7 } });
    const more = await api.append(path, [{ type: 'a' }, { type: 'b' }]);
    expect(more.map((e) => e.offset)).toEqual([3, 4]);

    const read = await api.read(path);
    expect(read.streamMaxOffset).toBe(4);
    expect(read.events.map((e) => e.offset)).toEqual([1, 2, 3, 4]);
    const created = read.events[0]!;
    expect(created.type).toBe(CREATED);
    expect(created.path).toBe(path);
    expect(created.payload).toEqual({ projectId: null, path, streamId: read.streamId });
    expect(read.streamId).toMatch(UUID);
    expect(read.events[1]).toEqual(first);

    const { core, runtime } = await api.state(path);
    expect(core).toMatchObject({
      projectId: null,
      path,
      streamId: read.streamId,
      createdAt: created.createdAt,
      eventCount: 4,
      maxOffset: 4,
      paused: false,
      pauseReason: null,
      subscriptions: { inbound: { bySourcePath: {} }, outbound: { byKey: {} } },
    });
    expect(runtime).toMatchObject({ streamMaxOffset: 4 });
  });

  it('a batch as the first touch: created at 1, the batch at 2.., each event stamped with the canonical path', async () => {
    const events = await api.append('/s1/batch', [{ type: 'x' }, { type: 'y' }, { type: 'z' }]);
    expect(events.map((e) => [e.offset, e.type, e.path])).toEqual([
      [2, 'x', '/s1/batch'],
      [3, 'y', '/s1/batch'],
      [4, 'z', '/s1/batch'],
    ]);
    for (const e of events) expect(Number.isNaN(Date.parse(e.createdAt))).toBe(false);
  });

  it('two streams get two different streamIds', async () => {
    await api.append('/s1/one', { type: 'x' });
    await api.append('/s1/two', { type: 'x' });
    const a = await api.read('/s1/one');
    const b = await api.read('/s1/two');
    expect(a.streamId).toMatch(UUID);
    expect(b.streamId).toMatch(UUID);
    expect(a.streamId).not.toBe(b.streamId);
  });
});

describe('a batch append is atomic', () => {
  it('one invalid event rejects the whole batch on a new stream: nothing is written, the stream is not created', async () => {
    const path = '/s2/new';
    const res = await api.post(path, [{ type: 'ok', idempotencyKey: 'k1' }, { type: 'bad', eventType: 'nope' }]);
    expectError(res, 'INVALID_INPUT', 'Unrecognized key');
    expect(await api.read(path)).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    expect(await api.state(path)).toEqual({ core: null, runtime: null });
    expect(await listed(path)).toBe(false);
  });

  it('rejections found late in the batch (offset assertion, size, authority, pause) write nothing either', async () => {
    const path = '/s2/existing';
    await api.append(path, { type: 'before' });
    const before = await api.read(path, { includeEphemeral: true });
    const stateBefore = await api.state(path);

    // The third event asserts a wrong offset: the first two must not be committed.
    expectError(
      await api.post(path, [{ type: 'a', idempotencyKey: 'ka' }, { type: 'b' }, { type: 'c', offset: 99 }]),
      'CONFLICT',
      'offset assertion failed: expected offset 99, but the next offset is 5',
    );
    // A platform-authored event at the end of the batch.
    expectError(
      await api.post(path, [{ type: 'a', idempotencyKey: 'ka' }, { type: CREATED }]),
      'FORBIDDEN',
      'public callers may not append it',
    );
    // A paused stream: [x, paused, y] is judged in order and y is refused.
    expectError(
      await api.post(path, [{ type: 'x' }, { type: PAUSED, payload: { reason: 'r' } }, { type: 'y' }]),
      'PRECONDITION_FAILED',
      'is paused (r)',
    );
    // A control event that may not be ephemeral.
    expectError(
      await api.post(path, [{ type: 'x', ephemeral: true }, { type: RESUMED, ephemeral: true }]),
      'INVALID_INPUT',
      'cannot be ephemeral',
    );

    expect(await api.read(path, { includeEphemeral: true })).toEqual(before);
    expect(await api.state(path)).toEqual(stateBefore);
    // The idempotency key of the rejected batches' first event was never stored.
    const [again] = await api.append(path, { type: 'other-body', idempotencyKey: 'ka' });
    expect(again!.offset).toBe(3);
  });
});

describe('idempotent repeat', () => {
  it('idempotent repeat returns the stored event at its original offset and writes nothing', async () => {
    const path = '/s3/repeat';
    const input = { type: 'order', payload: { id: 1, lines: [1, 2] }, metadata: { by: 'ci' }, idempotencyKey: 'order-1' };
    const [stored] = await api.append(path, input);
    await api.append(path, { type: 'later' });
    // Same body with another key order: JSON-equal, so the same event.
    const [repeat] = await api.append(path, {
      idempotencyKey: 'order-1',
      metadata: { by: 'ci' },
      payload: { lines: [1, 2], id: 1 },
      type: 'order',
    });
    expect(repeat).toEqual(stored);
    expect(repeat!.offset).toBe(2);
    const read = await api.read(path);
    expect(read.streamMaxOffset).toBe(3);
    expect(read.events.filter((e) => e.idempotencyKey === 'order-1')).toEqual([stored]);
  });

  it('a repeat inside a batch takes its stored position; duplicates inside one batch collapse', async () => {
    const path = '/s3/batch';
    const [stored] = await api.append(path, { type: 'a', idempotencyKey: 'k' });
    const events = await api.append(path, [
      { type: 'b', idempotencyKey: 'k2' },
      { type: 'a', idempotencyKey: 'k' },
      { type: 'b', idempotencyKey: 'k2' },
      { type: 'c' },
    ]);
    expect(events.map((e) => e.offset)).toEqual([3, 2, 3, 4]);
    expect(events[1]).toEqual(stored);
    expect(events[2]).toEqual(events[0]);
    expect((await api.read(path)).events.map((e) => e.type)).toEqual([CREATED, 'a', 'b', 'c']);
  });

  it('idempotent repeat stays quiet: an open SSE reader sees nothing for it', async () => {
    const path = '/s3/quiet';
    await api.append(path, { type: 'a', idempotencyKey: 'q' });
    const tail = await openTail(api, path, { afterOffset: 2 });
    try {
      const [repeat] = await api.append(path, { type: 'a', idempotencyKey: 'q' });
      expect(repeat!.offset).toBe(2);
      await api.append(path, { type: 'marker' });
      const next = await tail.nextEvent();
      expect(next).toMatchObject({ offset: 3, type: 'marker' });
      expect(tail.pending).toBe(0);
    } finally {
      tail.close();
    }
  });

  it('the same key with another body is CONFLICT (type, payload, metadata or ephemeral differ)', async () => {
    const path = '/s3/conflict';
    await api.append(path, { type: 'a', payload: { v: 1 }, metadata: { m: 1 }, idempotencyKey: 'k' });
    const message = 'idempotency key "k" already names a different event (offset 2)';
    expectError(await api.post(path, { type: 'b', payload: { v: 1 }, metadata: { m: 1 }, idempotencyKey: 'k' }), 'CONFLICT', message);
    expectError(await api.post(path, { type: 'a', payload: { v: 2 }, metadata: { m: 1 }, idempotencyKey: 'k' }), 'CONFLICT', message);
    expectError(await api.post(path, { type: 'a', payload: { v: 1 }, idempotencyKey: 'k' }), 'CONFLICT', message);
    expectError(
      await api.post(path, { type: 'a', payload: { v: 1 }, metadata: { m: 1 }, idempotencyKey: 'k', ephemeral: true }),
      'CONFLICT',
      message,
    );
    // In a batch: the conflicting repeat rejects the whole batch.
    expectError(
      await api.post(path, [{ type: 'fresh' }, { type: 'a', payload: { v: 3 }, metadata: { m: 1 }, idempotencyKey: 'k' }]),
      'CONFLICT',
      'events[1]: idempotency key "k" already names a different event',
    );
    expect((await api.read(path)).streamMaxOffset).toBe(2);
  });

  it('a repeat with an offset assertion must name the stored offset', async () => {
    const path = '/s3/offset';
    await api.append(path, { type: 'a', idempotencyKey: 'k' });
    const [same] = await api.append(path, { type: 'a', idempotencyKey: 'k', offset: 2 });
    expect(same!.offset).toBe(2);
    expectError(
      await api.post(path, { type: 'a', idempotencyKey: 'k', offset: 3 }),
      'CONFLICT',
      'offset assertion failed: idempotency key "k" is stored at offset 2, not 3',
    );
  });
});

describe('metadata round-trips', () => {
  it('metadata and payload round-trip through append, read and SSE; omitted fields stay omitted', async () => {
    const path = '/s4/meta';
    const metadata = { by: 'ci', trace: { id: 'abc', spans: [1, 2.5, null, true] }, 'ünï': '✓ 😀', empty: {} };
    const payload = { nested: { deep: [{ x: 1 }] }, text: 'line\nbreak "quoted"' };
    const [withMeta, bare] = await api.append(path, [{ type: 'm', payload, metadata }, { type: 'bare' }]);
    expect(withMeta!.metadata).toEqual(metadata);
    expect(withMeta!.payload).toEqual(payload);
    expect(Object.keys(bare!).sort()).toEqual(['createdAt', 'offset', 'path', 'type']);

    const read = await api.read(path);
    expect(read.events.slice(1)).toEqual([withMeta, bare]);

    const tail = await openTail(api, path);
    try {
      const replayed = await tail.events(3);
      expect(replayed.slice(1)).toEqual([withMeta, bare]);
      const [live] = await api.append(path, { type: 'live', metadata });
      expect(await tail.nextEvent()).toEqual(live);
      expect(live!.metadata).toEqual(metadata);
    } finally {
      tail.close();
    }
  });
});

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

describe('authority', () => {
  const forbidden: { name: string; input: Record<string, unknown>; message: string }[] = [
    {
      name: 'source.copiedFrom',
      input: { type: 'x', source: { copiedFrom: [] } },
      message: '"source" is platform-authored',
    },
    {
      name: 'subscription-delivery-halted',
      input: {
        type: 'events.iterate.com/stream/subscription-delivery-halted',
        payload: { subscriptionKey: 'k', reason: 'delivery-failed', afterOffset: 0, attempts: 1 },
      },
      message: 'events.iterate.com/stream/subscription-delivery-halted is a platform fact; public callers may not append it',
    },
    {
      name: 'stream/created',
      input: { type: CREATED, payload: { projectId: null, path: '/x', streamId: '00000000-0000-4000-8000-000000000000' } },
      message: `${CREATED} is a platform fact`,
    },
    {
      name: 'connection-opened',
      input: { type: 'events.iterate.com/stream/connection-opened', payload: {} },
      message: 'events.iterate.com/stream/connection-opened is a platform fact',
    },
    {
      name: 'connection-closed',
      input: { type: 'events.iterate.com/stream/connection-closed', payload: {} },
      message: 'events.iterate.com/stream/connection-closed is a platform fact',
    },
  ];

  for (const { name, input, message } of forbidden) {
    it(`public callers cannot append ${name} (FORBIDDEN), alone or in a batch, and nothing is appended`, async () => {
      const fresh = `/s44/new-${name.replace(/[^a-z]/g, '')}`;
      expectError(await api.post(fresh, input as { type: string }), 'FORBIDDEN', message);
      expectError(await api.post(fresh, [{ type: 'ok' }, input as { type: string }]), 'FORBIDDEN', `events[1]: `);
      expect(await api.read(fresh)).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
      expect(await listed(fresh)).toBe(false);

      const existing = `/s44/existing-${name.replace(/[^a-z]/g, '')}`;
      await api.append(existing, { type: 'a' });
      const before = await api.state(existing);
      expectError(await api.post(existing, [{ type: 'ok' }, input as { type: string }]), 'FORBIDDEN', message);
      expect(await api.state(existing)).toEqual(before);
      expect((await api.read(existing)).events.map((e) => e.type)).toEqual([CREATED, 'a']);
    });
  }
});
