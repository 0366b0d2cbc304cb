/**
 * End-to-end over real HTTP: the dry run `:previewSubscription` (protocol §23) — the same filter,
 * transform, exclusions, error texts and budgets as delivery, in the shape each receiver gets, and
 * nothing appended.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, streamRoute, type Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { copyTo, headOf } from '../helpers/subscriptions.js';

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer();
  api = server.api;
});

afterAll(async () => {
  await server?.close();
});

const preview = (path: string, body: unknown) => api.request('POST', streamRoute(path, 'previewSubscription'), { json: body });

interface Preview {
  scanned: number;
  matched: number;
  deliveries: Array<{ offset: number; event: Record<string, unknown> }>;
  errors: Array<{ offset: number; error: string }>;
}

async function ok(path: string, body: unknown): Promise<Preview> {
  const res = await preview(path, body);
  expect(res.status, res.text).toBe(200);
  return res.body as Preview;
}

const hook = (extra: Record<string, unknown> = {}) => ({ action: 'webhook-post', url: 'http://127.0.0.1:9/hook', delivery: { start: 'now', onFailingEvent: 'halt' }, ...extra });

describe(':previewSubscription', () => {
  it('filters by type and condition, transforms, and appends nothing', async () => {
    const src = '/preview/a';
    await api.append(src, [
      { type: 'order', payload: { n: 1 } },
      { type: 'order', payload: { n: 2 } },
      { type: 'other', payload: { n: 3 } },
      { type: 'order', payload: { n: 4 }, ephemeral: true },
    ]);
    const before = await headOf(api, src);
    const body = await ok(src, {
      filter: { eventTypes: ['order'], jsonataCondition: 'payload.n > 1' },
      receiver: hook({ jsonataTransform: '{"payload": {"doubled": payload.n * 2}}' }),
    });
    // The durable events: the stream's creation fact and three appended ones (the ephemeral one is
    // never delivered); only n=2 passes both filters.
    expect(body.scanned).toBe(4);
    expect(body.matched).toBe(1);
    expect(body.errors).toEqual([]);
    expect(body.deliveries).toHaveLength(1);
    const delivery = body.deliveries[0]!;
    expect(delivery.event).toMatchObject({ path: src, offset: delivery.offset, type: 'order', payload: { doubled: 4 } });
    expect(await headOf(api, src)).toBe(before);
  });

  it('answers a copy as the receiving stream would append it, with its hop and idempotency key', async () => {
    const src = '/preview/copy';
    const [e] = await api.append(src, { type: 'x', payload: { v: 1 } });
    const body = await ok(src, { subscriptionKey: 'k', filter: { eventTypes: ['x'] }, receiver: copyTo('/preview/copy-recv') });
    expect(body.deliveries).toHaveLength(1);
    const copy = body.deliveries[0]!.event as { type: string; payload: unknown; idempotencyKey: string; source: { copiedFrom: Array<Record<string, unknown>> } };
    expect(copy.type).toBe('x');
    expect(copy.payload).toEqual({ v: 1 });
    expect(copy.idempotencyKey).toMatch(/^rivulet-internal\/copy:\["k",/);
    expect(copy.source.copiedFrom).toHaveLength(1);
    expect(copy.source.copiedFrom[0]).toMatchObject({ path: src, offset: e!.offset, type: 'x', subscriptionKey: 'k' });
  });

  it('reports condition and transform failures with the texts delivery writes', async () => {
    const src = '/preview/errors';
    await api.append(src, [
      { type: 't', payload: { n: 1 } },
      { type: 't', payload: { n: 'text' } },
    ]);
    const cond = await ok(src, { filter: { eventTypes: ['t'], jsonataCondition: '$error("no " & payload.n)' }, receiver: hook() });
    expect(cond.matched).toBe(0);
    expect(cond.errors.map((x) => x.error)).toEqual([
      expect.stringMatching(/^filter\.jsonataCondition threw on offset \d+: no 1$/),
      expect.stringMatching(/^filter\.jsonataCondition threw on offset \d+: no text$/),
    ]);
    const transform = await ok(src, { filter: { eventTypes: ['t'] }, receiver: hook({ jsonataTransform: '"not an object"' }) });
    expect(transform.matched).toBe(2);
    expect(transform.deliveries).toEqual([]);
    expect(transform.errors[0]!.error).toMatch(/^jsonataTransform failed on offset \d+: jsonataTransform must produce an object/);
  });

  it('runs expressions under the stream budget', async () => {
    const src = '/preview/budget';
    await api.append(src, { type: 'b' });
    // Too big only when evaluated (a static bound refuses literal ranges at configure time).
    const hungry = '$count([1..$number("39999")].[1..50]) > 0';
    const body = await ok(src, { filter: { eventTypes: ['b'], jsonataCondition: hungry }, receiver: hook() });
    expect(body.errors).toEqual([{ offset: expect.any(Number), error: expect.stringMatching(/^filter\.jsonataCondition threw on offset \d+: expression exceeded its (time|memory) budget/) }]);
  });

  it('scans at most limit events after afterOffset, and by default the last limit ones', async () => {
    const src = '/preview/window';
    await api.append(src, Array.from({ length: 10 }, (_, i) => ({ type: 'w', payload: { i } })));
    const head = await headOf(api, src);
    const last3 = await ok(src, { filter: { eventTypes: ['w'] }, receiver: hook(), limit: 3 });
    expect(last3.scanned).toBe(3);
    expect(last3.deliveries.map((d) => d.offset)).toEqual([head - 2, head - 1, head]);
    const from = await ok(src, { filter: { eventTypes: ['w'] }, receiver: hook(), limit: 2, afterOffset: head - 5 });
    expect(from.deliveries.map((d) => d.offset)).toEqual([head - 4, head - 3]);
    expect((await ok(src, { receiver: hook(), afterOffset: head })).scanned).toBe(0);
    expect((await ok(src, { receiver: hook(), limit: 1000 })).scanned).toBeGreaterThan(10);
  });

  it('refuses what a configure refuses, and limits out of range', async () => {
    const src = '/preview/refusals';
    await api.append(src, { type: 'r' });
    const head = await headOf(api, src);
    expectError(await preview(src, { receiver: hook(), afterOffset: head + 1 }), 'INVALID_INPUT', `afterOffset ${head + 1} is beyond`);
    expectError(await preview(src, { receiver: hook(), limit: 1001 }), 'INVALID_INPUT', 'limit must be at most 1000');
    expectError(await preview(src, { receiver: hook(), limit: 0 }), 'INVALID_INPUT', 'limit');
    expectError(await preview(src, { receiver: copyTo(src) }), 'INVALID_INPUT', 'a stream cannot receive from itself');
    expectError(await preview(src, { receiver: hook(), filter: { jsonataCondition: '(' } }), 'INVALID_INPUT', 'filter.jsonataCondition');
    expectError(await preview(src, { receiver: hook(), bogus: 1 }), 'INVALID_INPUT', 'bogus');
    expectError(await api.request('POST', `${streamRoute(src, 'previewSubscription')}?x=1`, { json: { receiver: hook() } }), 'INVALID_INPUT', 'takes no query parameters');
  });

  it('answers an empty preview for a stream that does not exist, and creates nothing', async () => {
    const body = await ok('/preview/nothing-here', { receiver: hook() });
    expect(body).toEqual({ scanned: 0, matched: 0, deliveries: [], errors: [] });
    expect(await headOf(api, '/preview/nothing-here')).toBe(0);
  });
});

