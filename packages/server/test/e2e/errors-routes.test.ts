/**
 * End-to-end over real HTTP: the errors of protocol §7 that a URL can reach (read queries, routes
 * and methods) and streams that do not exist, each checked for status, code and message. Every
 * server here fails its close() if it ever answered INTERNAL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, streamRoute, type Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { openTail } from '../helpers/sse.js';

const PAUSED = 'events.iterate.com/stream/paused';
const EMPTY = { streamId: null, streamMaxOffset: 0, events: [] };

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer();
  api = server.api;
});

afterAll(async () => {
  await server?.close();
});

async function listedPaths(target: Api, prefix = '/'): Promise<string[]> {
  const res = await target.request<{ streams: { path: string }[] }>('GET', `/v1/streams?prefix=${encodeURIComponent(prefix)}`);
  expect(res.status, res.text).toBe(200);
  return res.body.streams.map((s) => s.path);
}

describe('read queries', () => {
  const route = streamRoute('/err/query');

  beforeAll(async () => {
    await api.append('/err/query', [{ type: 'a' }, { type: 'b' }]);
  });

  it('limit 500 is accepted, 501 is INVALID_INPUT', async () => {
    expect((await api.read('/err/query', { limit: 500 })).events).toHaveLength(3);
    expectError(await api.request('GET', `${route}?limit=501`), 'INVALID_INPUT', 'query.limit: limit must be at most 500');
  });

  it('NaN, negative, float, unsafe and empty offsets are INVALID_INPUT', async () => {
    for (const name of ['afterOffset', 'beforeOffset']) {
      for (const bad of ['NaN', '-1', '1.5', '1e3', '0x10', 'Infinity', '', ' 1', '12345678901234567']) {
        expectError(
          await api.request('GET', `${route}?${name}=${encodeURIComponent(bad)}`),
          'INVALID_INPUT',
          `query.${name}: ${name} must be a non-negative integer`,
        );
      }
      expectError(
        await api.request('GET', `${route}?${name}=9007199254740993`),
        'INVALID_INPUT',
        `query.${name}: ${name} must be a safe integer`,
      );
    }
    expectError(await api.request('GET', `${route}?beforeOffset=0`), 'INVALID_INPUT', 'beforeOffset must be at least 1');
    expectError(await api.request('GET', `${route}?limit=-5`), 'INVALID_INPUT', 'limit must be a non-negative integer');
    expectError(await api.request('GET', `${route}?limit=2.5`), 'INVALID_INPUT', 'limit must be a non-negative integer');
  });

  it('an unknown or repeated query parameter is INVALID_INPUT', async () => {
    expectError(await api.request('GET', `${route}?foo=1`), 'INVALID_INPUT', 'query: Unrecognized key: "foo"');
    expectError(await api.request('GET', `${route}?afteroffset=1`), 'INVALID_INPUT', 'Unrecognized key: "afteroffset"');
    expectError(
      await api.request('GET', `${route}?afterOffset=1&afterOffset=2`),
      'INVALID_INPUT',
      'query parameter "afterOffset" is given more than once',
    );
    expectError(await api.request('GET', `${route}?includeEphemeral=yes`), 'INVALID_INPUT', 'query.includeEphemeral');
    expectError(await api.request('GET', `${streamRoute('/err/query', 'state')}?x=1`), 'INVALID_INPUT', ':state takes no query parameters');
    expectError(await api.request('GET', '/v1/streams?prefix=/a&bogus=1'), 'INVALID_INPUT', 'Unrecognized key: "bogus"');
  });

  it('the routes that take no query refuse any parameter, and commit nothing', async () => {
    const path = '/err/noquery';
    const target = streamRoute(path);
    await api.append(path, { type: 'x' });
    const head = (await api.read(path)).streamMaxOffset;
    const cases: [string, string, unknown, string][] = [
      ['POST', `${target}?afterOffset=0`, { type: 'x' }, 'POST /v1/streams/{path} takes no query parameters'],
      ['POST', `${target}?x`, [{ type: 'x' }], 'POST /v1/streams/{path} takes no query parameters'],
      ['DELETE', `${target}?force=1`, undefined, 'DELETE /v1/streams/{path} takes no query parameters'],
      [
        'POST',
        `${streamRoute('/err/noquery-dst', 'subscribeToEventsFrom')}?start=beginning`,
        { sourceStreamPath: path, subscriptionKey: 'q' },
        ':subscribeToEventsFrom takes no query parameters',
      ],
      ['POST', `${streamRoute(path, 'setSubscriptionCursor')}?cursor=0`, { subscriptionKey: 'q', cursor: 0 }, ':setSubscriptionCursor takes no query parameters'],
      ['POST', `${streamRoute(path, 'resumeSubscription')}?now=1`, { subscriptionKey: 'q' }, ':resumeSubscription takes no query parameters'],
      ['POST', `${streamRoute('/err/noquery-dst', 'unsubscribeFromEvents')}?all`, { sourceStreamPath: path, subscriptionKey: 'q' }, ':unsubscribeFromEvents takes no query parameters'],
    ];
    for (const [method, url, json, message] of cases) {
      expectError(await api.request(method, url, json === undefined ? {} : { json }), 'INVALID_INPUT', message);
    }
    // Nothing was appended, destroyed or subscribed; a lone "?" carries no parameter and is fine.
    expect((await api.read(path)).streamMaxOffset).toBe(head);
    expect((await api.read('/err/noquery-dst')).streamMaxOffset).toBe(0);
    const ok = await api.request('POST', `${target}?`, { json: { type: 'x' } });
    expect(ok.status, ok.text).toBe(200);
  });
});

describe('routes and methods', () => {
  it('an unknown :method is NOT_FOUND, as is a known one with the wrong HTTP method', async () => {
    const res = await api.request('GET', streamRoute('/err/m', 'nope'));
    const error = expectError(res, 'NOT_FOUND', 'unknown stream method ":nope"');
    expect(error.details).toMatchObject({ methods: expect.arrayContaining([':state']) as unknown });
    expectError(
      await api.request('POST', streamRoute('/err/m', 'nope'), { json: { type: 'x' } }),
      'NOT_FOUND',
      'unknown stream method ":nope"',
    );
    expectError(
      await api.request('POST', streamRoute('/err/m', 'state'), { json: {} }),
      'NOT_FOUND',
      '":state" answers GET, not POST',
    );
    expectError(await api.request('PUT', streamRoute('/err/m'), { json: { type: 'x' } }), 'NOT_FOUND', 'PUT is not a method of /v1/streams/{path}');
    expectError(await api.request('GET', '/v1/nothing'), 'NOT_FOUND', 'no route GET /v1/nothing');
    expect(await api.read('/err/m')).toEqual(EMPTY);
  });
});
describe('streams that do not exist', () => {
  it('a stream that does not exist reads as empty and is not created by reads, :state or SSE', async () => {
    const path = '/err/ghost';
    expect(await api.read(path)).toEqual(EMPTY);
    expect(await api.read(path, { afterOffset: 5, limit: 10, includeEphemeral: true, eventTypes: 'a,b' })).toEqual(EMPTY);
    expect(await api.state(path)).toEqual({ core: null, runtime: null });
    const tail = await openTail(api, path, { afterOffset: 3 });
    tail.close();
    expect(await listedPaths(api, '/err/ghost')).toEqual([]);
    expect(await api.read(path)).toEqual(EMPTY);
  });

  it('a rejected append creates nothing', async () => {
    const path = '/err/rejected';
    const attempts: [unknown, Parameters<typeof expectError>[1]][] = [
      [{ type: 'x', nope: 1 }, 'INVALID_INPUT'],
      [{ type: 'x', offset: 7 }, 'CONFLICT'],
      [{ type: 'events.iterate.com/stream/created' }, 'FORBIDDEN'],
      [{ type: 'x', idempotencyKey: 'rivulet-internal/x' }, 'INVALID_INPUT'],
      [{ type: PAUSED, ephemeral: true }, 'INVALID_INPUT'],
      [{ type: PAUSED, payload: { reason: 7 } }, 'INVALID_INPUT'],
    ];
    for (const [body, code] of attempts) {
      const res = await api.request('POST', streamRoute(path), { json: body });
      expect(res.status, res.text).toBeGreaterThanOrEqual(400);
      expect(res.status, res.text).toBeLessThan(500);
      expect((res.body as { error: { code: string } }).error.code).toBe(code);
    }
    expect(await api.read(path, { includeEphemeral: true })).toEqual(EMPTY);
    expect(await api.state(path)).toEqual({ core: null, runtime: null });
    expect(await listedPaths(api, path)).toEqual([]);
  });
});
