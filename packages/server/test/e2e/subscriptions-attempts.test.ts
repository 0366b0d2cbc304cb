/**
 * End-to-end over real HTTP: the attempt history `:deliveryAttempts` (protocol §22) — what one
 * attempt records, newest first, bounded per subscription by the knob, pruned on removal and
 * destroy — and the listing's retrying and lagging statuses (protocol §21.2), on a server whose
 * retries wait a minute so a failing subscription stays retrying.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryAttempt, SubscriptionListEntry } from '@rivulet/contract';
import { HookServer } from '../helpers/hook-server.js';
import { expectError, queryString, streamRoute, type Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { EventType, caughtUp, configured, eventually, subscribe } from '../helpers/subscriptions.js';

const SLOW_RETRY = { retryBaseMs: 60_000, retryMaxMs: 60_000, maxDeliveryAttempts: 5, deliveryTimeoutMs: 60_000, laggingAfterMs: 100, deliveryAttemptsKept: 3 } as const;

let server: TestServer;
let api: Api;
let hooks: HookServer;

beforeAll(async () => {
  hooks = await HookServer.start();
  hooks.script = (request) =>
    request.path === '/fail' ? { status: 500, body: `refused ${'é'.repeat(700)}` } : request.path === '/hang' ? 'hang' : { status: 204 };
  server = await startTestServer(SLOW_RETRY);
  api = server.api;
});

afterAll(async () => {
  await hooks?.stop();
  await server?.close();
});

const attemptsRaw = (path: string, query: Record<string, string | number>) => api.request<{ attempts: DeliveryAttempt[] }>('GET', `${streamRoute(path, 'deliveryAttempts')}${queryString(query)}`);

async function attempts(path: string, key: string, limit?: number): Promise<DeliveryAttempt[]> {
  const res = await attemptsRaw(path, { subscriptionKey: key, ...(limit !== undefined ? { limit } : {}) });
  expect(res.status, res.text).toBe(200);
  return res.body.attempts;
}

async function listed(prefix: string): Promise<SubscriptionListEntry[]> {
  const res = await api.request<{ subscriptions: SubscriptionListEntry[] }>('GET', `/v1/subscriptions${queryString({ prefix })}`);
  expect(res.status, res.text).toBe(200);
  return res.body.subscriptions;
}

const webhook = (key: string, path: string) =>
  configured({ subscriptionKey: key, filter: { eventTypes: ['job'] }, receiver: { action: 'webhook-post', url: hooks.url(path), delivery: { start: 'now', onFailingEvent: 'halt' } } });

describe(':deliveryAttempts', () => {
  it('records a failed webhook attempt: status, the first 1 KiB of the answer, the error', async () => {
    const src = '/att/fail';
    const [config] = await api.append(src, webhook('w', '/fail'));
    const [job] = await api.append(src, { type: 'job' });
    const [one] = await eventually(async () => {
      const list = await attempts(src, 'w');
      return list.length > 0 ? list : undefined;
    }, 'a failed attempt');
    expect(one).toEqual({
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      run: `${config!.offset}:0`,
      attempt: 1,
      fromOffset: job!.offset,
      toOffset: job!.offset,
      outcome: 'failed',
      status: 500,
      responseExcerpt: expect.any(String),
      error: expect.stringMatching(/^webhook responded 500/),
      durationMs: expect.any(Number),
    });
    expect(Object.keys(one!)).toEqual(['at', 'run', 'attempt', 'fromOffset', 'toOffset', 'outcome', 'status', 'responseExcerpt', 'error', 'durationMs']);
    // 1 KiB of UTF-8, never a cut character: "refused " is 8 bytes, each "é" 2.
    expect(new TextEncoder().encode(one!.responseExcerpt).length).toBe(1024);
    expect(one!.responseExcerpt).toBe(`refused ${'é'.repeat(508)}`);
    // Retrying: it failed and waits a minute before the next attempt.
    const [entry] = await listed(src);
    expect(entry).toMatchObject({ status: 'retrying', attempt: 1, action: 'webhook-post', target: hooks.url('/fail') });
  });

  it('records successes newest first, keeps the last deliveryAttemptsKept, answers limit', async () => {
    const src = '/att/ok';
    await subscribe(api, '/att/ok-recv', { sourceStreamPath: src, subscriptionKey: 'c' });
    const offsets: number[] = [];
    for (let i = 0; i < 5; i++) {
      const [e] = await api.append(src, { type: 'job', payload: { i } });
      offsets.push(e!.offset);
      await caughtUp(api, src, 'c');
    }
    const list = await attempts(src, 'c');
    expect(list.map((a) => a.outcome)).toEqual(['ok', 'ok', 'ok']);
    expect(list.map((a) => a.toOffset)).toEqual([offsets[4], offsets[3], offsets[2]]);
    expect(list.every((a) => a.attempt === 1 && a.status === undefined && a.error === undefined)).toBe(true);
    expect((await attempts(src, 'c', 2)).map((a) => a.toOffset)).toEqual([offsets[4], offsets[3]]);
    expect((await attempts(src, 'c', 1000)).length).toBe(3);
    expect((await listed(src))[0]).toMatchObject({ status: 'healthy', lag: 0 });
  });

  it('forgets the history of a removed subscription and of a destroyed stream', async () => {
    const src = '/att/prune';
    await subscribe(api, '/att/prune-recv', { sourceStreamPath: src, subscriptionKey: 'c' });
    await api.append(src, { type: 'job' });
    await caughtUp(api, src, 'c');
    expect(await attempts(src, 'c')).toHaveLength(1);
    await api.append(src, { type: EventType.subscriptionRemoved, payload: { subscriptionKey: 'c' } });
    expectError(await attemptsRaw(src, { subscriptionKey: 'c' }), 'NOT_FOUND', 'no subscription "c" on /att/prune');
    await subscribe(api, '/att/prune-recv', { sourceStreamPath: src, subscriptionKey: 'c' });
    expect(await attempts(src, 'c')).toEqual([]);
    await api.append(src, { type: 'job' });
    await caughtUp(api, src, 'c');
    await api.destroy(src);
    await subscribe(api, '/att/prune-recv', { sourceStreamPath: src, subscriptionKey: 'c' });
    expect(await attempts(src, 'c')).toEqual([]);
  });

  it('refuses a missing key, an unknown key, limits out of range and unknown parameters', async () => {
    const src = '/att/errors';
    await api.append(src, webhook('w', '/ok'));
    expectError(await attemptsRaw(src, {}), 'INVALID_INPUT', 'subscriptionKey');
    expectError(await attemptsRaw(src, { subscriptionKey: 'nope' }), 'NOT_FOUND', 'no subscription "nope" on /att/errors');
    expectError(await attemptsRaw(src, { subscriptionKey: 'w', limit: 0 }), 'INVALID_INPUT', 'limit must be at least 1');
    expectError(await attemptsRaw(src, { subscriptionKey: 'w', limit: 1001 }), 'INVALID_INPUT', 'limit must be at most 1000');
    expectError(await attemptsRaw(src, { subscriptionKey: 'w', extra: 1 }), 'INVALID_INPUT', 'extra');
    expectError(await api.request('POST', streamRoute(src, 'deliveryAttempts'), { json: {} }), 'NOT_FOUND', '":deliveryAttempts" answers GET, not POST');
  });
});

describe('the retrying and lagging statuses', () => {
  it('a delivery that has not ended while its event ages past laggingAfterMs is lagging', async () => {
    const src = '/att/lagging';
    await api.append(src, webhook('h', '/hang'));
    await api.append(src, { type: 'job' });
    const entry = await eventually(async () => {
      const [e] = await listed(src);
      return e?.status === 'lagging' ? e : undefined;
    }, 'the hanging webhook to lag');
    expect(entry).toMatchObject({ attempt: 0, lag: 1, lastError: null });
    const res = await api.request<{ subscriptions: SubscriptionListEntry[] }>('GET', `/v1/subscriptions${queryString({ prefix: '/att', status: 'lagging' })}`);
    expect(res.body.subscriptions.map((s) => s.sourcePath)).toEqual([src]);
  });
});
