/**
 * End to end over real RPC sessions (the SDK's connect, a real server on loopback) and HTTP:
 * waitForEvent (protocol §19.7): historical and live matches, timeouts, waits whose caller went
 * away, and the HTTP :waitForEvent route's errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, createClient, type ItxConnection } from '@rivulet/client';
import { connectionReads } from '../helpers/connections.js';
import { expectError, streamRoute } from '../helpers/http.js';
import { TEST_HOST, startTestServer, type TestServer } from '../helpers/server.js';
import { EventType, eventually } from '../helpers/subscriptions.js';
import { rpcError } from '../fixtures/rpc-helpers.js';

let server: TestServer;
let itx: ItxConnection;

beforeAll(async () => {
  server = await startTestServer();
  itx = await connect(server.url);
});

afterAll(async () => {
  itx?.close();
  await server?.close();
});

const { facts, connectionsOf } = connectionReads(() => server);

describe('waitForEvent', () => {
  it('matches a historical durable event and a live one, each recording one opened/closed pair', async () => {
    const path = '/s17/wait';
    await server.api.append(path, [{ type: 'job', payload: { n: 1 } }, { type: 'job', payload: { n: 2 } }]);
    const stream = itx.root.streams.get(path);
    const historical = await stream.waitForEvent({ afterOffset: 0, eventTypes: ['job'], jsonataCondition: 'payload.n = 2', timeoutMs: 2000 });
    expect(historical.event).toMatchObject({ offset: 3, payload: { n: 2 } });

    const client = createClient({ url: server.url });
    const live = client.waitForEvent(path, { eventTypes: ['done'], timeoutMs: 5000 });
    await eventually(async () => Object.values(await connectionsOf(path)).some((c) => c.kind === 'wait'), 'the wait to open');
    const [done] = await server.api.append(path, { type: 'done', payload: { ok: true } });
    expect((await live).event).toEqual(done);

    const recorded = await facts(path);
    expect(recorded.map((e) => [e.type, (e.payload as { kind?: string }).kind, (e.payload as { reason?: string }).reason])).toEqual([
      [EventType.connectionOpened, 'wait', undefined],
      [EventType.connectionClosed, undefined, 'matched'],
      [EventType.connectionOpened, 'wait', undefined],
      [EventType.connectionClosed, undefined, 'matched'],
    ]);
    expect(recorded[0]!.payload).toMatchObject({ replayAfterOffset: 0, timeoutMs: 2000, filter: { eventTypes: ['job'], jsonataCondition: 'payload.n = 2' } });
    expect(await connectionsOf(path)).toEqual({});
  });

  it('times out with TIMEOUT and a message naming how many events it saw (RPC and HTTP 408)', async () => {
    const path = '/s17/timeout';
    await server.api.append(path, [{ type: 'job', payload: { n: 1 } }, { type: 'other' }]);
    const error = await rpcError(itx.root.streams.get(path).waitForEvent({ afterOffset: 1, eventTypes: ['job'], jsonataCondition: 'payload.n > 5', timeoutMs: 80 }));
    expect(error.code).toBe('TIMEOUT');
    expect(error.message).toBe(
      'waitForEvent on /s17/timeout timed out after 80 ms: it saw 2 events after offset 1 (through offset 4); 1 of type job, none satisfied the jsonataCondition',
    );
    const res = await server.api.request('POST', streamRoute(path, 'waitForEvent'), { json: { eventTypes: ['never'], timeoutMs: 50 } });
    const body = expectError(res, 'TIMEOUT', /timed out after 50 ms: no event was appended after offset \d+/);
    expect(body.details).toMatchObject({ timeoutMs: 50, eventsSeen: 0 });
    const recorded = await facts(path);
    expect(recorded.filter((e) => e.type === EventType.connectionClosed).map((e) => (e.payload as { reason: string }).reason)).toEqual([
      'timed-out',
      'timed-out',
    ]);
    expect(recorded.filter((e) => e.type === EventType.connectionOpened)).toHaveLength(2);
  });
});

describe('a wait whose caller went away', () => {
  const waitOpen = (path: string) =>
    eventually(async () => Object.values(await connectionsOf(path)).some((c) => c.kind === 'wait'), 'the wait to open');
  const closedReasons = async (path: string) =>
    (await facts(path)).filter((e) => e.type === EventType.connectionClosed).map((e) => (e.payload as { reason: string }).reason);

  it('is cancelled when its RPC session ends (connection-closed {reason: "cancelled"})', async () => {
    const path = '/live/wait-session';
    await server.api.append(path, { type: 'x' });
    const session = await connect(server.url, { reconnect: false });
    const waiting = session.root.streams.get(path).waitForEvent({ eventTypes: ['never'], timeoutMs: 60_000 });
    waiting.catch(() => undefined);
    await waitOpen(path);
    session.close();
    await eventually(async () => (await closedReasons(path)).length === 1, 'the closed fact');
    expect(await closedReasons(path)).toEqual(['cancelled']);
    expect(await connectionsOf(path)).toEqual({});
  });

  // workerd (under Miniflare) does not abort a request's signal when its client disconnects (docs/cloudflare.md §4.9).
  it.skipIf(TEST_HOST === 'worker')('is cancelled when its HTTP client goes away', async () => {
    const path = '/live/wait-http';
    await server.api.append(path, { type: 'x' });
    const abort = new AbortController();
    const request = fetch(`${server.url}${streamRoute(path, 'waitForEvent')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ eventTypes: ['never'], timeoutMs: 60_000 }),
      signal: abort.signal,
    });
    request.catch(() => undefined);
    await waitOpen(path);
    abort.abort();
    await eventually(async () => (await closedReasons(path)).length === 1, 'the closed fact');
    expect(await closedReasons(path)).toEqual(['cancelled']);
    expect(await connectionsOf(path)).toEqual({});
  });
});

describe('HTTP :waitForEvent', () => {
  it('refuses bad bodies and timeouts out of bounds before waiting', async () => {
    const route = streamRoute('/live/http-wait', 'waitForEvent');
    const post = (json: unknown) => server.api.request('POST', route, { json });
    expectError(await post({}), 'INVALID_INPUT', 'timeoutMs');
    expectError(await post({ timeoutMs: 0 }), 'INVALID_INPUT', 'timeoutMs');
    expectError(await post({ timeoutMs: 3_600_001 }), 'INVALID_INPUT', 'timeoutMs');
    expectError(await post({ timeoutMs: 1.5 }), 'INVALID_INPUT', 'timeoutMs');
    expectError(await post({ timeoutMs: 100, unknown: true }), 'INVALID_INPUT', 'unknown');
    expectError(await post({ timeoutMs: 100, afterOffset: -1 }), 'INVALID_INPUT', 'afterOffset');
    expectError(await post({ timeoutMs: 100, eventTypes: [] }), 'INVALID_INPUT', 'eventTypes');
    expectError(await post({ timeoutMs: 100, jsonataCondition: 'payload.(' }), 'INVALID_INPUT', 'not valid JSONata');
    expectError(await post({ timeoutMs: 100, afterOffset: 50 }), 'INVALID_INPUT', 'beyond');
    expectError(await server.api.request('GET', route), 'NOT_FOUND', 'answers POST');
    expectError(await server.api.request('POST', `${route}?x=1`, { json: { timeoutMs: 100 } }), 'INVALID_INPUT', 'no query parameters');
    // Nothing was created by the refusals.
    expect((await server.api.state('/live/http-wait')).core).toBeNull();
    const spec = (await server.api.request<{ paths: Record<string, unknown> }>('GET', '/v1/openapi.json')).body;
    expect(spec.paths).toHaveProperty(['/v1/streams/{path}:waitForEvent']);
  });

  it('answers a historical match at once over HTTP and the SDK', async () => {
    const path = '/live/http-match';
    const [, second] = await server.api.append(path, [{ type: 'a' }, { type: 'b', payload: { x: 1 } }]);
    const res = await server.api.request('POST', streamRoute(path, 'waitForEvent'), { json: { afterOffset: 0, eventTypes: ['b'], timeoutMs: 1000 } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ event: second });
    const client = createClient({ url: server.url });
    expect(await client.waitForEvent(path, { afterOffset: 0, jsonataCondition: 'payload.x = 1', timeoutMs: 1000 })).toEqual({ event: second });
    // Past it, only the first wait's own connection facts follow: they have another type.
    await expect(client.waitForEvent(path, { afterOffset: second!.offset, eventTypes: ['b'], timeoutMs: 30 })).rejects.toMatchObject({
      code: 'TIMEOUT',
      status: 408,
    });
  });
});
