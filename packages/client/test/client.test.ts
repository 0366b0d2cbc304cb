import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient, LATEST_MAX, RivuletError, type RivuletClient } from '@rivulet/client';
import { startTestServer, type TestServer } from './harness.js';

const CREATED = 'events.iterate.com/stream/created';

async function rejection(promise: Promise<unknown>): Promise<RivuletError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof RivuletError) return error;
    throw error;
  }
  throw new Error('expected a RivuletError');
}

async function drain<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

let t: TestServer;
let client: RivuletClient;

beforeEach(async () => {
  t = await startTestServer();
  client = createClient({ url: t.url });
});

afterEach(async () => {
  await t.dispose();
});

describe('append', () => {
  it('commits one event after the stream-created event and answers it', async () => {
    const [event, ...rest] = await client.append('shop/orders', {
      type: 'order-created',
      payload: { id: 7 },
      metadata: { by: 'ci' },
    });
    expect(rest).toEqual([]);
    expect(event).toMatchObject({ path: '/shop/orders', offset: 2, type: 'order-created', payload: { id: 7 }, metadata: { by: 'ci' } });
    expect(Number.isNaN(Date.parse(event!.createdAt))).toBe(false);
    const read = await client.getEvents('/shop/orders');
    expect(read.events.map((e) => e.type)).toEqual([CREATED, 'order-created']);
  });

  it('commits an array atomically, in input order', async () => {
    const events = await client.append('/b', [{ type: 'a' }, { type: 'b' }, { type: 'c' }]);
    expect(events.map((e) => [e.offset, e.type])).toEqual([
      [2, 'a'],
      [3, 'b'],
      [4, 'c'],
    ]);
    const error = await rejection(client.append('/b', [{ type: 'd' }, { type: 'e', unknown: 1 } as never]));
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toContain('unknown');
    expect((await client.getEvents('/b')).streamMaxOffset).toBe(4);
  });

  it('answers the stored event for an idempotent repeat and CONFLICT for a different body', async () => {
    const [first] = await client.append('/c', { type: 't', payload: { n: 1 }, idempotencyKey: 'k1' });
    const [again] = await client.append('/c', { type: 't', payload: { n: 1 }, idempotencyKey: 'k1' });
    expect(again).toEqual(first);
    const error = await rejection(client.append('/c', { type: 't', payload: { n: 2 }, idempotencyKey: 'k1' }));
    expect(error.code).toBe('CONFLICT');
    expect(error.status).toBe(409);
  });

  it('reports platform-authored events as FORBIDDEN', async () => {
    const error = await rejection(client.append('/d', { type: CREATED }));
    expect(error.code).toBe('FORBIDDEN');
  });
});

describe('getEvents and paging', () => {
  beforeEach(async () => {
    // offsets 2..9: a b a b a b (ephemeral x at 8) b
    await client.append('/p', [{ type: 'a' }, { type: 'b' }, { type: 'a' }, { type: 'b' }, { type: 'a' }, { type: 'b' }]);
    await client.append('/p', { type: 'x', ephemeral: true });
    await client.append('/p', { type: 'b' });
  });

  it('reads a missing stream as empty without creating it', async () => {
    expect(await client.getEvents('/missing')).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    expect((await client.list()).streams.map((s) => s.path)).toEqual(['/p']);
  });

  it('honours afterOffset, beforeOffset, limit, eventTypes and includeEphemeral', async () => {
    const offsets = async (o: Parameters<RivuletClient['getEvents']>[1]) =>
      (await client.getEvents('p', o)).events.map((e) => e.offset);
    expect(await offsets({})).toEqual([1, 2, 3, 4, 5, 6, 7, 9]);
    expect(await offsets({ includeEphemeral: true })).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(await offsets({ afterOffset: 3, beforeOffset: 6 })).toEqual([4, 5]);
    expect(await offsets({ limit: 2, afterOffset: 4 })).toEqual([5, 6]);
    expect(await offsets({ eventTypes: ['a', 'x'], includeEphemeral: true })).toEqual([2, 4, 6, 8]);
    const page = await client.getEvents('/p', { limit: 1 });
    expect(page.streamMaxOffset).toBe(9);
    expect(typeof page.streamId).toBe('string');
  });

  it('pages through everything with readPages and readAll', async () => {
    const pages = await drain(client.readPages('/p', { limit: 3 }));
    expect(pages.map((p) => p.events.map((e) => e.offset))).toEqual([
      [1, 2, 3],
      [4, 5, 6],
      [7, 9],
    ]);
    const all = await drain(client.readAll('/p', { limit: 2, afterOffset: 2, beforeOffset: 9, eventTypes: ['b'] }));
    expect(all.map((e) => e.offset)).toEqual([3, 5, 7]);
    expect(await drain(client.readAll('/missing'))).toEqual([]);
  });

  it('refuses a page size above 500 with the server message', async () => {
    const error = await rejection(client.getEvents('/p', { limit: 501 }));
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toContain('limit must be at most 500');
  });
});

describe('latest', () => {
  it('answers the last N events in offset order, and every event when the stream has fewer', async () => {
    await client.append('/l', Array.from({ length: 30 }, (_, i) => ({ type: 'n', payload: { i } })));
    const last = await client.latest('/l', 5);
    expect(last.events.map((e) => e.offset)).toEqual([27, 28, 29, 30, 31]);
    expect(last.streamMaxOffset).toBe(31);
    expect(last.streamId).toBe((await client.getEvents('/l', { limit: 1 })).streamId);
    expect((await client.latest('/l', 1)).events.map((e) => e.offset)).toEqual([31]);
    const all = await client.latest('/l', 100);
    expect(all.events.map((e) => e.offset)).toEqual(Array.from({ length: 31 }, (_, i) => i + 1));
  });

  it('reads back in growing windows until a sparse filter matched enough, across pages of 500', async () => {
    const events = Array.from({ length: 1200 }, (_, i) => ({ type: i % 300 === 0 ? 'rare' : 'common' }));
    const appended = await client.append('/sparse', events);
    const rare = appended.filter((e) => e.type === 'rare').map((e) => e.offset);
    expect((await client.latest('/sparse', 3, { eventTypes: ['rare'] })).events.map((e) => e.offset)).toEqual(rare.slice(-3));
    expect((await client.latest('/sparse', 10, { eventTypes: ['rare'] })).events.map((e) => e.offset)).toEqual(rare);
    // More than a page: 600 events ending before offset 1000.
    const before = await client.latest('/sparse', 600, { beforeOffset: 1000, eventTypes: ['common'] });
    expect(before.events).toHaveLength(600);
    expect(before.events.at(-1)!.offset).toBe(999);
    expect(before.events.every((e, i) => i === 0 || e.offset > before.events[i - 1]!.offset)).toBe(true);
  });

  it('leaves ephemeral events out unless asked', async () => {
    await client.append('/eph', [{ type: 'kept' }, { type: 'passing', ephemeral: true }]);
    expect((await client.latest('/eph', 1)).events.map((e) => e.type)).toEqual(['kept']);
    expect((await client.latest('/eph', 1, { includeEphemeral: true })).events.map((e) => e.type)).toEqual(['passing']);
  });

  it('a missing stream is empty and not created', async () => {
    expect(await client.latest('/nothing', 3)).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    expect((await client.state('/nothing')).core).toBeNull();
  });

  it(`refuses a count outside 1–${LATEST_MAX} and a bad beforeOffset before sending anything`, async () => {
    for (const count of [0, LATEST_MAX + 1, 1.5, Number.NaN]) {
      const error = await rejection(client.latest('/l', count));
      expect(error.code).toBe('INVALID_INPUT');
      expect(error.message).toBe(`the number of latest events must be an integer from 1 to ${LATEST_MAX}, got ${String(count)}`);
    }
    expect((await rejection(client.latest('/l', 1, { beforeOffset: 0 }))).message).toBe('beforeOffset must be a positive integer, got 0');
    await client.append('/max', { type: 'x' });
    expect((await client.latest('/max', LATEST_MAX)).events).toHaveLength(2);
  });
});

describe('paths', () => {
  it('treats "a/b" and "/a/b" as one stream and round-trips unusual segments', async () => {
    await client.append('a/b', { type: 't' });
    expect((await client.getEvents('/a/b')).streamMaxOffset).toBe(2);
    const odd = '/caf\u00e9 au lait/100%/x+y&z=1/\u{1f30a}';
    const [event] = await client.append(odd, { type: 't' });
    expect(event!.path).toBe(odd);
    expect((await client.list({ prefix: '/caf\u00e9 au lait' })).streams.map((s) => s.path)).toEqual([odd]);
  });

  it('addresses the root stream', async () => {
    const [event] = await client.append('/', { type: 'root' });
    expect(event!.path).toBe('/');
    expect((await client.state('')).core?.path).toBe('/');
  });

  it('refuses a bad path before sending anything', async () => {
    let requests = 0;
    const counting = createClient({
      url: t.url,
      fetch: (input, init) => {
        requests++;
        return fetch(input, init);
      },
    });
    const error = await rejection(counting.append('/a//b', { type: 't' }));
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toContain('empty segment');
    expect(requests).toBe(0);
  });
});

describe('state, list, destroy, health', () => {
  it('answers the state of an existing stream and nulls for a missing one', async () => {
    expect(await client.state('/none')).toEqual({ core: null, runtime: null });
    await client.append('/s', [{ type: 'a' }, { type: 'b' }]);
    const { core, runtime } = await client.state('s');
    expect(core).toMatchObject({ path: '/s', maxOffset: 3, eventCount: 3, paused: false, projectId: null });
    expect(runtime).toMatchObject({ streamMaxOffset: 3, subscriptions: {}, connections: {} });
  });

  it('lists below a prefix, segment-wise, and follows nextAfter', async () => {
    for (const path of ['/a', '/a/1', '/a/2', '/ab', '/b']) await client.append(path, { type: 't' });
    expect((await client.list({ prefix: '/a' })).streams.map((s) => s.path)).toEqual(['/a', '/a/1', '/a/2']);
    const first = await client.list({ limit: 2 });
    expect(first.streams.map((s) => s.path)).toEqual(['/a', '/a/1']);
    expect(first.nextAfter).toBe('/a/1');
    const all = await drain(client.listAll({ limit: 2 }));
    expect(all.map((s) => s.path)).toEqual(['/a', '/a/1', '/a/2', '/ab', '/b']);
    expect(all[0]).toMatchObject({ maxOffset: 2 });
    expect(typeof all[0]!.streamId).toBe('string');
  });

  it('destroys a stream; the next append starts a new lifetime', async () => {
    await client.append('/gone', { type: 't' });
    const before = await client.getEvents('/gone');
    expect(await client.destroy('/gone')).toEqual({ destroyed: true });
    expect(await client.getEvents('/gone')).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    const [event] = await client.append('/gone', { type: 't' });
    expect(event!.offset).toBe(2);
    expect((await client.getEvents('/gone')).streamId).not.toBe(before.streamId);
  });

  it('answers health, the OpenAPI document and metrics', async () => {
    expect(await client.health()).toEqual({ ok: true });
    const openapi = await client.openapi();
    expect(openapi).toMatchObject({ openapi: expect.stringMatching(/^3\.1/) });
    expect(Object.keys(openapi.paths as object)).toContain('/v1/streams/{path}');
    await client.append('/m', { type: 't' });
    expect(await client.metrics()).toMatch(/^rivulet_appends_total 1$/m);
  });
});

describe('failures', () => {
  it('reports an unreachable server as UNAVAILABLE with the network error as cause', async () => {
    const url = t.url;
    await t.stop();
    const error = await rejection(createClient({ url }).health());
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.message).toContain(`cannot reach ${url}/healthz`);
    expect(error.cause).toBeInstanceOf(Error);
  });

  it('refuses a base URL that is not http(s)', () => {
    expect(() => createClient({ url: 'not a url' })).toThrow(/not a valid URL/);
    expect(() => createClient({ url: 'ftp://example.com' })).toThrow(/must use http: or https:/);
  });
});

describe('tokens and projects', () => {
  const admin = 'admin-token-0123456789';
  const projectA = 'project-a-token-0123456789';

  beforeEach(async () => {
    await t.dispose();
    t = await startTestServer({
      tokens: new Map([
        [admin, '*'],
        [projectA, 'proj-a'],
      ]),
    });
  });

  it('sends the bearer token and X-Project-Id', async () => {
    const missing = await rejection(createClient({ url: t.url }).getEvents('/x'));
    expect(missing.code).toBe('UNAUTHENTICATED');
    const wrong = await rejection(createClient({ url: t.url, token: 'not-a-token' }).getEvents('/x'));
    expect([wrong.code, wrong.message]).toEqual(['UNAUTHENTICATED', 'unknown token']);

    const asProject = createClient({ url: t.url, token: projectA });
    await asProject.append('/x', { type: 't' });
    const adminForA = createClient({ url: t.url, token: admin, projectId: 'proj-a' });
    expect((await adminForA.state('/x')).core?.projectId).toBe('proj-a');
    const adminGlobal = createClient({ url: t.url, token: admin });
    expect((await adminGlobal.getEvents('/x')).streamId).toBeNull();

    const crossing = await rejection(createClient({ url: t.url, token: projectA, projectId: 'proj-b' }).list());
    expect(crossing.code).toBe('FORBIDDEN');
  });
});
