/**
 * End-to-end: the RPC endpoint /v1/rpc (protocol §18.1, §18.2, §7, §8). Connects with the SDK
 * (`connect`) or with a raw Cap'n Web session over `ws` where the exact upgrade request matters:
 * every stream method over RPC, errors crossing with their code, and authentication of the
 * upgrade. Workers and the disposal test are in rpc-session-workers.test.ts.
 *
 * Note: on Node the SDK opens its sessions with `ws` and sends the token in a header; tests about
 * the exact upgrade request use a raw `ws` session instead.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { connect, type ItxConnection } from '@rivulet/client';
import { expectError, rawRequest, UUID } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { EventType, waitForCopies } from '../helpers/subscriptions.js';
import { TOKEN_A, TOKEN_ADMIN, TOKEN_B, rawSession, rpcError } from '../fixtures/rpc-helpers.js';

describe('stream methods over RPC (open mode)', () => {
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

  it('append takes several events and answers them committed, in order; the path is canonical', async () => {
    const stream = itx.root.streams.get(' rpc/./append ');
    expect(await stream.path).toBe('/rpc/append');
    const committed = await stream.append(
      { type: 'a', payload: { n: 1 }, metadata: { by: 'rpc' } },
      { type: 'b', idempotencyKey: 'k-b' },
      { type: 'c', ephemeral: true },
    );
    expect(committed.map((e) => [e.offset, e.type, e.path])).toEqual([
      [2, 'a', '/rpc/append'],
      [3, 'b', '/rpc/append'],
      [4, 'c', '/rpc/append'],
    ]);
    expect(committed[0]).toMatchObject({ payload: { n: 1 }, metadata: { by: 'rpc' } });
    // The same events over HTTP; an idempotent repeat answers the stored event.
    const read = await server.api.read('/rpc/append', { includeEphemeral: true });
    expect(read.events.slice(1)).toEqual(committed);
    const [again] = await stream.append({ type: 'b', idempotencyKey: 'k-b' });
    expect(again).toEqual(committed[1]);
  });

  it('getEvents honours afterOffset, beforeOffset, limit, eventTypes and includeEphemeral; a missing stream reads empty', async () => {
    const stream = itx.root.streams.get('/rpc/read');
    await stream.append({ type: 'x' }, { type: 'y' }, { type: 'x', ephemeral: true }, { type: 'x' }, { type: 'y' });
    const all = await stream.getEvents();
    expect(all.streamId).toMatch(UUID);
    expect(all.streamMaxOffset).toBe(6);
    expect(all.events.map((e) => e.offset)).toEqual([1, 2, 3, 5, 6]);
    expect((await stream.getEvents({ afterOffset: 2, beforeOffset: 6 })).events.map((e) => e.offset)).toEqual([3, 5]);
    expect((await stream.getEvents({ afterOffset: 1, limit: 2 })).events.map((e) => e.offset)).toEqual([2, 3]);
    expect((await stream.getEvents({ eventTypes: ['x'] })).events.map((e) => e.offset)).toEqual([2, 5]);
    expect((await stream.getEvents({ eventTypes: ['x'], includeEphemeral: true })).events.map((e) => e.offset)).toEqual([2, 4, 5]);
    expect(await itx.root.streams.get('/rpc/never').getEvents()).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    // Reading did not create it.
    expect((await server.api.state('/rpc/never')).core).toBeNull();
  });

  it('state and runtimeState answer what HTTP :state answers; null for a stream that does not exist', async () => {
    const stream = itx.root.streams.get('/rpc/state');
    await stream.append({ type: 'x', payload: { n: 1 } });
    const state = await stream.state();
    expect(state).toEqual(await server.api.state('/rpc/state'));
    expect(state.core).toMatchObject({ path: '/rpc/state', eventCount: 2, maxOffset: 2, paused: false });
    expect(await stream.runtimeState()).toEqual(state.runtime);
    expect(await itx.root.streams.get('/rpc/none').state()).toEqual({ core: null, runtime: null });
    expect(await itx.root.streams.get('/rpc/none').runtimeState()).toBeNull();
  });

  it('the subscription commands: subscribeToEventsFrom, setSubscriptionCursor, resumeSubscription, setSubscriptionCursorAndResume, unsubscribeFromEvents', async () => {
    const source = itx.root.streams.get('/rpc/sub/source');
    const receiver = itx.root.streams.get('/rpc/sub/receiver');
    await source.append({ type: 'before' });
    const subscribed = await receiver.subscribeToEventsFrom({
      sourceStreamPath: '/rpc/sub/source',
      subscriptionKey: 'copy',
      filter: { eventTypes: ['job'] },
      delivery: { start: 'beginning' },
    });
    expect(subscribed.subscriptionKey).toBe('copy');
    expect(subscribed.subscriptionConfiguredEvent).toMatchObject({ path: '/rpc/sub/source', type: EventType.subscriptionConfigured });
    const [job] = await source.append({ type: 'job', payload: { n: 1 } });
    const copies = await waitForCopies(server.api, '/rpc/sub/receiver', 1);
    expect(copies[0]).toMatchObject({ type: 'job', payload: { n: 1 } });

    const cursor = await source.setSubscriptionCursor({ subscriptionKey: 'copy', afterOffset: job!.offset });
    expect(cursor.event).toMatchObject({ type: EventType.subscriptionCursorSet, payload: { subscriptionKey: 'copy', afterOffset: job!.offset } });
    expect(await source.resumeSubscription({ subscriptionKey: 'copy' })).toEqual({ event: null });
    const both = await source.setSubscriptionCursorAndResume({ subscriptionKey: 'copy', afterOffset: job!.offset });
    expect(both.cursorSet).toMatchObject({ type: EventType.subscriptionCursorSet });
    expect(both.resumed).toBeNull();

    const removed = await receiver.unsubscribeFromEvents({ sourceStreamPath: '/rpc/sub/source', subscriptionKey: 'copy' });
    expect(removed.status).toBe('removed');
    expect(removed.subscriptionRemovedEvent).toMatchObject({ type: EventType.subscriptionRemoved });
    expect(await receiver.unsubscribeFromEvents({ sourceStreamPath: '/rpc/sub/source', subscriptionKey: 'copy' })).toEqual({
      status: 'already-absent',
    });
  });

  it('destroy erases the stream; the next append starts a new lifetime', async () => {
    const stream = itx.root.streams.get('/rpc/destroy');
    await stream.append({ type: 'x' });
    const before = await stream.getEvents();
    expect(await stream.destroy()).toEqual({ destroyed: true });
    expect(await stream.getEvents()).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    const [again] = await stream.append({ type: 'y' });
    expect(again!.offset).toBe(2);
    const after = await stream.getEvents();
    expect(after.streamId).not.toBe(before.streamId);
  });

  it('streams.list lists the project\'s streams under a prefix', async () => {
    await itx.root.streams.get('/rpc/list/a').append({ type: 'x' });
    await itx.root.streams.get('/rpc/list/b').append({ type: 'x' });
    const listed = await itx.root.streams.list({ prefix: '/rpc/list' });
    expect(listed.streams.map((s) => (s as { path: string }).path)).toEqual(['/rpc/list/a', '/rpc/list/b']);
  });

  it('errors cross with their code: FORBIDDEN (platform type), INVALID_INPUT (bad path, unknown key, bad options), NOT_FOUND (missing key), CONFLICT', async () => {
    const stream = itx.root.streams.get('/rpc/errors');
    await stream.append({ type: 'x', idempotencyKey: 'same' });

    const forbidden = await rpcError(stream.append({ type: 'ok' }, { type: EventType.created, payload: {} } as never));
    expect(forbidden.code).toBe('FORBIDDEN');
    expect(forbidden.message).toContain(EventType.created);
    expect((await stream.getEvents()).streamMaxOffset).toBe(2); // nothing of the batch was written

    for (const bad of ['/a/../..', '/a//b', '/a?b', 7]) {
      const error = await rpcError(itx.root.streams.get(bad as string).getEvents());
      expect(error.code, `streams.get(${JSON.stringify(bad)})`).toBe('INVALID_INPUT');
    }
    const unknownKey = await rpcError(stream.append({ type: 'x', eventType: 'y' } as never));
    expect(unknownKey.code).toBe('INVALID_INPUT');
    expect(unknownKey.message).toContain('eventType');
    expect((await rpcError(stream.append())).code).toBe('INVALID_INPUT');
    expect((await rpcError(stream.getEvents({ limit: 0 }))).code).toBe('INVALID_INPUT');
    expect((await rpcError(stream.getEvents({ bogus: true } as never))).code).toBe('INVALID_INPUT');

    const missing = await rpcError(stream.setSubscriptionCursor({ subscriptionKey: 'nope', afterOffset: 0 }));
    expect(missing.code).toBe('NOT_FOUND');
    expect((await rpcError(stream.resumeSubscription({ subscriptionKey: 'nope' }))).code).toBe('NOT_FOUND');
    expect((await rpcError(stream.setSubscriptionCursorAndResume({ subscriptionKey: 'nope', afterOffset: 0 }))).code).toBe('NOT_FOUND');

    const conflict = await rpcError(stream.append({ type: 'other', idempotencyKey: 'same' }));
    expect(conflict.code).toBe('CONFLICT');
    expect((await stream.getEvents()).streamMaxOffset).toBe(2);
    expect(server.internalErrors).toEqual([]);
  });

  it('an unexpected error is INTERNAL with a reference and nothing internal in its message; the server logs the cause', async () => {
    const secret = 'SECRET-DETAIL /var/lib/rivulet/rivulet.db';
    const spy = vi.spyOn(server.server.service, 'read').mockRejectedValueOnce(new TypeError(`cannot read ${secret}`));
    try {
      const error = await rpcError(itx.root.streams.get('/rpc/internal').getEvents());
      expect(error.code).toBe('INTERNAL');
      expect(error.message).toMatch(/^internal error \(reference [0-9a-f-]{36}\)$/);
      expect(JSON.stringify({ ...error, message: error.message })).not.toContain('SECRET');
      const reference = /reference ([0-9a-f-]{36})/.exec(error.message)![1]!;
      expect(server.internalErrors).toHaveLength(1);
      expect(server.internalErrors[0]).toContain(reference);
      expect(server.internalErrors[0]).toContain('SECRET-DETAIL');
    } finally {
      spy.mockRestore();
      server.internalErrors.length = 0; // expected here: close() must not count it
    }
    // The session survives the error.
    expect((await itx.root.streams.get('/rpc/internal').getEvents()).streamId).toBeNull();
  });
});

describe('authentication of the upgrade (tokens configured)', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({
      tokens: new Map([
        [TOKEN_A, 'proj-a'],
        [TOKEN_B, 'proj-b'],
        [TOKEN_ADMIN, '*'],
      ]),
    });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('a missing or unknown token refuses the upgrade: the SDK connect rejects with UNAUTHENTICATED, nothing is opened', async () => {
    const missing = await rpcError(connect(server.url, { reconnect: false }));
    expect(missing.code).toBe('UNAUTHENTICATED');
    const unknown = await rpcError(connect(server.url, { token: 'not-a-known-token-000', reconnect: false }));
    expect(unknown.code).toBe('UNAUTHENTICATED');
    for (const headers of [{}, { authorization: 'Bearer not-a-known-token-000' }, { authorization: 'Basic abc' }]) {
      const raw = await rawSession(server.url, '/v1/rpc', headers);
      expect(raw.ok).toBe(false);
      if (raw.ok) continue;
      expect(raw.status).toBe(401);
      expect(raw.contentType).toMatch(/^application\/json/);
      expect((raw.body as { error: { code: string } }).error.code).toBe('UNAUTHENTICATED');
    }
    expect(server.server.rpcSessions).toBe(0);
  });

  it('the token in an Authorization header, and as ?token= for clients that cannot set headers, both open a session of the token\'s project', async () => {
    const viaHeader = await rawSession(server.url, '/v1/rpc', { authorization: `Bearer ${TOKEN_A}` });
    const viaQuery = await rawSession(server.url, `/v1/rpc?token=${TOKEN_A}`);
    expect(viaHeader.ok && viaQuery.ok).toBe(true);
    if (!viaHeader.ok || !viaQuery.ok) return;
    try {
      const [one] = await viaHeader.root.streams.get('/auth/a').append({ type: 'header' });
      const [two] = await viaQuery.root.streams.get('/auth/a').append({ type: 'query' });
      expect([one!.offset, two!.offset]).toEqual([2, 3]);
      // Both landed in proj-a's stream (HTTP with the same token sees them; B's same path does not exist).
      const read = await server.api.withToken(TOKEN_A).read('/auth/a');
      expect(read.events.map((e) => e.type)).toEqual([EventType.created, 'header', 'query']);
      expect(read.events[0]!.payload).toMatchObject({ projectId: 'proj-a', path: '/auth/a' });
      expect((await server.api.withToken(TOKEN_B).read('/auth/a')).streamId).toBeNull();
    } finally {
      viaHeader.close();
      viaQuery.close();
    }
    // The SDK (a header, from `ws`) works the same.
    const sdk = await connect(server.url, { token: TOKEN_A });
    try {
      expect((await sdk.root.streams.get('/auth/a').getEvents()).events).toHaveLength(3);
    } finally {
      sdk.close();
    }
  });

  it('a project token cannot act for another project: X-Project-Id or ?project= naming another project is FORBIDDEN', async () => {
    const viaHeader = await rawSession(server.url, '/v1/rpc', { authorization: `Bearer ${TOKEN_A}`, 'x-project-id': 'proj-b' });
    const viaQuery = await rawSession(server.url, `/v1/rpc?token=${TOKEN_A}&project=proj-b`);
    for (const raw of [viaHeader, viaQuery]) {
      expect(raw.ok).toBe(false);
      if (raw.ok) continue;
      expect(raw.status).toBe(403);
      expect((raw.body as { error: { code: string } }).error.code).toBe('FORBIDDEN');
    }
    const sdk = await rpcError(connect(server.url, { token: TOKEN_A, projectId: 'proj-b', reconnect: false }));
    expect(sdk.code).toBe('FORBIDDEN');
    // Naming its own project is fine.
    const own = await connect(server.url, { token: TOKEN_A, projectId: 'proj-a' });
    try {
      expect((await own.root.streams.get('/auth/a').getEvents()).streamId).toMatch(UUID);
    } finally {
      own.close();
    }
  });

  it('an admin token selects a project with X-Project-Id or ?project=; without one it reaches the deployment-wide streams', async () => {
    const inB = await rawSession(server.url, '/v1/rpc', { authorization: `Bearer ${TOKEN_ADMIN}`, 'x-project-id': 'proj-b' });
    const inBQuery = await rawSession(server.url, `/v1/rpc?token=${TOKEN_ADMIN}&project=proj-b`);
    const global = await rawSession(server.url, '/v1/rpc', { authorization: `Bearer ${TOKEN_ADMIN}` });
    if (!inB.ok || !inBQuery.ok || !global.ok) throw new Error('admin sessions were refused');
    try {
      await inB.root.streams.get('/admin/x').append({ type: 'by-header' });
      await inBQuery.root.streams.get('/admin/x').append({ type: 'by-query' });
      await global.root.streams.get('/admin/x').append({ type: 'global' });
      const b = await server.api.withToken(TOKEN_B).read('/admin/x');
      expect(b.events.map((e) => e.type)).toEqual([EventType.created, 'by-header', 'by-query']);
      const g = await server.api.withToken(TOKEN_ADMIN).read('/admin/x');
      expect(g.events.map((e) => e.type)).toEqual([EventType.created, 'global']);
      expect(g.events[0]!.payload).toMatchObject({ projectId: null });
    } finally {
      inB.close();
      inBQuery.close();
      global.close();
    }
  });

  it('an upgrade on any other path is refused with a JSON NOT_FOUND; a GET /v1/rpc without upgrade answers a clear 4xx JSON error', async () => {
    for (const path of ['/v1/other', '/', '/v1/rpc/extra', '/v1/streams/a']) {
      const raw = await rawSession(server.url, path, { authorization: `Bearer ${TOKEN_A}` });
      expect(raw.ok, path).toBe(false);
      if (raw.ok) continue;
      expect(raw.status, path).toBe(404);
      expect((raw.body as { error: { code: string; message: string } }).error.code).toBe('NOT_FOUND');
      expect((raw.body as { error: { message: string } }).error.message).toContain('/v1/rpc');
    }
    // Without the Upgrade header: a plain request on the route.
    const plain = await rawRequest(server.url, 'GET', '/v1/rpc', { headers: { authorization: `Bearer ${TOKEN_A}` } });
    expectError(plain, 'INVALID_INPUT', 'WebSocket');
    const anonymous = await rawRequest(server.url, 'GET', '/v1/rpc');
    expect(anonymous.status).toBeGreaterThanOrEqual(400);
    expect(anonymous.status).toBeLessThan(500);
    expect((anonymous.body as { error: { code: string } }).error.code).toMatch(/^[A-Z_]+$/);
    expect(server.server.rpcSessions).toBe(0);
  });
});
