/**
 * End-to-end over real HTTP: what an append commits: creation, atomic batches, idempotent repeats,
 * round trips and authority (protocol §2–§4). Reads, pause and destroy are in
 * streams-lifecycle.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UUID, expectError, isListed, type Api } from '../helpers/http.js';
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
