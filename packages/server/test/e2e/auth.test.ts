/**
 * End-to-end over real HTTP: authentication and project isolation by token (protocol §8).
 * Subscriptions and expressions across projects belong to later capabilities.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListResponse } from '@rivulet/contract';
import { startNodeServer } from '../../src/hosts/node/serve.js';
import { UUID, expectError, streamRoute, type Api } from '../helpers/http.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { openTail } from '../helpers/sse.js';

const ADMIN = 'admin-token-000000000000';
const ALPHA = 'alpha-token-000000000000';
const BETA = 'beta-token-0000000000000';
const EMPTY = { streamId: null, streamMaxOffset: 0, events: [] };

let server: TestServer;
let anonymous: Api;
let admin: Api;
let alpha: Api;
let beta: Api;

beforeAll(async () => {
  server = await startTestServer({
    tokens: new Map([
      [ADMIN, '*'],
      [ALPHA, 'alpha'],
      [BETA, 'beta'],
    ]),
  });
  anonymous = server.api;
  admin = server.api.withToken(ADMIN);
  alpha = server.api.withToken(ALPHA);
  beta = server.api.withToken(BETA);
});

afterAll(async () => {
  await server?.close();
});

async function listPaths(api: Api, prefix: string): Promise<string[]> {
  const res = await api.request<ListResponse>('GET', `/v1/streams?prefix=${encodeURIComponent(prefix)}`);
  expect(res.status, res.text).toBe(200);
  return res.body.streams.map((s) => s.path);
}

describe('authentication (protocol §8.1, §8.2)', () => {
  it('a missing or unknown token is UNAUTHENTICATED on every stream route', async () => {
    const route = streamRoute('/auth/x');
    const requests: [string, string, unknown?][] = [
      ['POST', route, { type: 'x' }],
      ['GET', route],
      ['GET', `${route}?live=sse`],
      ['GET', streamRoute('/auth/x', 'state')],
      ['DELETE', route],
      ['GET', '/v1/streams'],
      ['GET', '/metrics'],
    ];
    for (const [method, path, json] of requests) {
      const options = json === undefined ? {} : { json };
      expectError(await anonymous.request(method, path, options), 'UNAUTHENTICATED', 'missing token: send Authorization: Bearer <token>');
      expectError(
        await anonymous.request(method, path, { ...options, headers: { authorization: 'Bearer not-a-token-0000000000' } }),
        'UNAUTHENTICATED',
        'unknown token',
      );
      expectError(
        await anonymous.request(method, path, { ...options, headers: { authorization: `Basic ${ALPHA}` } }),
        'UNAUTHENTICATED',
        'missing token',
      );
    }
    expect(await admin.read('/auth/x')).toEqual(EMPTY);
  });

  it("/metrics is for admin tokens only: a project token would read other projects' paths and keys", async () => {
    await beta.append('/auth/metrics-src', [
      { type: 'x' },
      {
        type: 'events.iterate.com/stream/subscription-configured',
        payload: { subscriptionKey: 'beta-secret-key', filter: { eventTypes: ['never'] }, receiver: { action: 'copy-to-stream', receivingStreamPath: '/auth/metrics-dst', delivery: { start: 'now', onFailingEvent: 'halt' } } },
      },
    ]);
    const message = '/metrics describes every project on this server: it needs an admin token (project "*")';
    expectError(await alpha.request('GET', '/metrics'), 'FORBIDDEN', message);
    expectError(await beta.request('GET', '/metrics'), 'FORBIDDEN', message);
    const res = await admin.request('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.text).toContain('rivulet_appends_total');
  });

  it('/healthz needs no token', async () => {
    const res = await anonymous.request('GET', '/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
  });

  it('an invalid X-Project-Id is INVALID_INPUT', async () => {
    const message = 'X-Project-Id must be 1–64 characters of a-z, 0-9, "-", "_"';
    for (const bad of ['Alpha', 'a b', 'a/b', 'a.b', 'x'.repeat(65), '*']) {
      const headers = { 'x-project-id': bad };
      expectError(await admin.request('GET', streamRoute('/auth/x'), { headers }), 'INVALID_INPUT', message);
      expectError(await alpha.post('/auth/x', { type: 'x' }, headers), 'INVALID_INPUT', message);
    }
    expectError(await admin.request('GET', streamRoute('/auth/x'), { headers: { 'x-project-id': '' } }), 'INVALID_INPUT', message);
    // 64 characters of the allowed alphabet are fine.
    const ok = await admin.request('GET', streamRoute('/auth/x'), { headers: { 'x-project-id': `a-_0${'z'.repeat(60)}` } });
    expect(ok.status, ok.text).toBe(200);
  });

  it('a project token sending X-Project-Id of another project is FORBIDDEN; its own project is fine', async () => {
    const other = alpha.with({ 'x-project-id': 'beta' });
    const message = 'this token belongs to project "alpha"; it cannot act for project "beta"';
    expectError(await other.post('/auth/forbidden', { type: 'x' }), 'FORBIDDEN', message);
    expectError(await other.request('GET', streamRoute('/auth/forbidden')), 'FORBIDDEN', message);
    expectError(await other.request('DELETE', streamRoute('/auth/forbidden')), 'FORBIDDEN', message);
    expectError(await other.request('GET', '/v1/streams'), 'FORBIDDEN', message);
    expect(await admin.with({ 'x-project-id': 'beta' }).read('/auth/forbidden')).toEqual(EMPTY);
    expect(await admin.with({ 'x-project-id': 'alpha' }).read('/auth/forbidden')).toEqual(EMPTY);

    const own = alpha.with({ 'x-project-id': 'alpha' });
    const [event] = await own.append('/auth/forbidden', { type: 'x' });
    expect(event!.offset).toBe(2);
    expect((await alpha.read('/auth/forbidden')).streamMaxOffset).toBe(2);
  });
});

describe('token isolation', () => {
  it('the same path in two projects is two different streams', async () => {
    const path = '/shared/orders';
    const [a] = await alpha.append(path, { type: 'alpha-event' });
    const [b] = await beta.append(path, [{ type: 'beta-1' }, { type: 'beta-2' }]);
    expect(a!.offset).toBe(2);
    expect(b!.offset).toBe(2);

    const readA = await alpha.read(path);
    const readB = await beta.read(path);
    expect(readA.streamId).toMatch(UUID);
    expect(readB.streamId).toMatch(UUID);
    expect(readA.streamId).not.toBe(readB.streamId);
    expect(readA.events.map((e) => e.type)).toEqual(['events.iterate.com/stream/created', 'alpha-event']);
    expect(readB.events.map((e) => e.type)).toEqual(['events.iterate.com/stream/created', 'beta-1', 'beta-2']);
    expect(readA.events[0]!.payload).toEqual({ projectId: 'alpha', path, streamId: readA.streamId });
    expect(readB.events[0]!.payload).toEqual({ projectId: 'beta', path, streamId: readB.streamId });
    expect((await alpha.state(path)).core).toMatchObject({ projectId: 'alpha', streamId: readA.streamId, eventCount: 2 });
    expect((await beta.state(path)).core).toMatchObject({ projectId: 'beta', streamId: readB.streamId, eventCount: 3 });

    // The deployment-wide namespace (admin without X-Project-Id) is a third one.
    expect(await admin.read(path)).toEqual(EMPTY);
  });

  it('a project token cannot read, append to, list or destroy another project\'s streams', async () => {
    const path = '/private/alpha-only';
    await alpha.append(path, [{ type: 'secret', payload: { v: 1 } }]);
    const alphaBefore = await alpha.read(path);

    // Read: beta sees its own (absent) stream, never alpha's events.
    expect(await beta.read(path)).toEqual(EMPTY);
    expect(await beta.read(path, { includeEphemeral: true })).toEqual(EMPTY);
    expect(await beta.state(path)).toEqual({ core: null, runtime: null });
    expect(await listPaths(beta, '/private')).toEqual([]);
    expect(await listPaths(alpha, '/private')).toEqual([path]);

    // SSE: beta's tail is on beta's stream.
    const tail = await openTail(beta, path);
    try {
      await alpha.append(path, { type: 'alpha-live' });
      const [own] = await beta.append(path, { type: 'beta-own' });
      const events = await tail.events(2);
      expect(events.map((e) => e.type)).toEqual(['events.iterate.com/stream/created', 'beta-own']);
      expect(events[1]).toEqual(own);
      expect(events[0]!.payload).toMatchObject({ projectId: 'beta' });
    } finally {
      tail.close();
    }

    // Append and destroy by beta touch only beta's stream.
    await beta.destroy(path);
    const alphaAfter = await alpha.read(path);
    expect(alphaAfter.streamId).toBe(alphaBefore.streamId);
    expect(alphaAfter.events.map((e) => e.type)).toEqual(['events.iterate.com/stream/created', 'secret', 'alpha-live']);
    expect(await beta.read(path)).toEqual(EMPTY);
  });

  it('admin with X-Project-Id selects a project; without it the deployment-wide streams', async () => {
    const path = '/admin/view';
    await alpha.append(path, { type: 'from-alpha' });
    const asAlpha = admin.with({ 'x-project-id': 'alpha' });
    const viaAdmin = await asAlpha.read(path);
    expect(viaAdmin).toEqual(await alpha.read(path));
    const [added] = await asAlpha.append(path, { type: 'from-admin' });
    expect(added!.offset).toBe(3);
    expect((await alpha.read(path)).events.map((e) => e.type)).toContain('from-admin');
    expect(await listPaths(asAlpha, '/admin')).toEqual([path]);

    // Deployment-wide (projectId null) is separate from every project.
    expect(await admin.read(path)).toEqual(EMPTY);
    const [global] = await admin.append(path, { type: 'global' });
    expect(global!.offset).toBe(2);
    expect((await admin.read(path)).events[0]!.payload).toMatchObject({ projectId: null });
    expect(await listPaths(admin, '/admin')).toEqual([path]);
    expect((await alpha.read(path)).streamMaxOffset).toBe(3);
    expect(await beta.read(path)).toEqual(EMPTY);

    // Admin may destroy in a named project.
    await asAlpha.destroy(path);
    expect(await alpha.read(path)).toEqual(EMPTY);
    expect((await admin.read(path)).streamMaxOffset).toBe(2);
  });
});

describe('open mode (protocol §8.1)', () => {
  it('starting on a non-loopback host without tokens is refused with a message naming --tokens', async () => {
    const { dir, remove } = await tempDir();
    try {
      await expect(startNodeServer({ host: '0.0.0.0', port: 0, data: dir })).rejects.toThrow(/--tokens/);
      await expect(startNodeServer({ host: '::', port: 0, data: dir })).rejects.toThrow(/refusing to listen on :: without tokens/);
    } finally {
      await remove();
    }
  });

  it('on loopback without tokens every caller is admin and X-Project-Id still selects a project', async () => {
    const open = await startTestServer();
    try {
      await open.api.append('/open/x', { type: 'x' });
      const scoped = open.api.with({ 'x-project-id': 'p1' });
      expect(await scoped.read('/open/x')).toEqual(EMPTY);
      await scoped.append('/open/x', { type: 'y' });
      expect((await scoped.read('/open/x')).events[0]!.payload).toMatchObject({ projectId: 'p1' });
      expect((await open.api.read('/open/x')).events[0]!.payload).toMatchObject({ projectId: null });
    } finally {
      await open.close();
    }
  });
});
