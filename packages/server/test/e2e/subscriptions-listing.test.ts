/**
 * End-to-end over real HTTP: the cross-stream listing `GET /v1/subscriptions` (protocol §21) —
 * fields, halted first, status and prefix filters, pages whose opaque cursor holds across inserts,
 * projects kept apart, the halted count agreeing with /metrics, and its refusals.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { connect } from '@rivulet/client';
import type { SubscriptionListEntry } from '@rivulet/contract';
import { rpcError } from '../fixtures/rpc-helpers.js';
import { expectError, queryString, streamRoute, type Api } from '../helpers/http.js';
import { TEST_HOST } from '../helpers/server.js';
import { QUICK, caughtUp, eventually, halted, sampleOf, scrape, subscribe, useQuickServer } from '../helpers/subscriptions.js';

const quick = useQuickServer();

interface Listing {
  subscriptions: SubscriptionListEntry[];
  next?: string;
}

const listRaw = (query: Record<string, string | number> = {}, a: Api = quick.api) => a.request<Listing>('GET', `/v1/subscriptions${queryString(query)}`);

async function list(query: Record<string, string | number> = {}, a: Api = quick.api): Promise<Listing> {
  const res = await listRaw(query, a);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** Every page, following `next`. */
async function listAll(query: Record<string, string | number>, a: Api = quick.api): Promise<SubscriptionListEntry[]> {
  const out: SubscriptionListEntry[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await list({ ...query, ...(after ? { after } : {}) }, a);
    out.push(...page.subscriptions);
    if (!page.next) return out;
    after = page.next;
  }
}

const names = (entries: SubscriptionListEntry[]) => entries.map((e) => `${e.sourcePath}#${e.subscriptionKey}`);

/** A copy subscription whose condition throws on every event: it halts after QUICK.maxDeliveryAttempts. */
async function haltedCopy(src: string, key: string): Promise<void> {
  await subscribe(quick.api, `${src}-recv`, { sourceStreamPath: src, subscriptionKey: key, filter: { jsonataCondition: 'type = "x" ? $error("boom") : false' } });
  await quick.api.append(src, { type: 'x' });
  await halted(quick.api, src, key);
}

async function healthyCopy(src: string, key: string, a: Api = quick.api): Promise<void> {
  await subscribe(a, `${src}-recv`, { sourceStreamPath: src, subscriptionKey: key });
  await a.append(src, { type: 'x' });
  await caughtUp(a, src, key);
}

describe('GET /v1/subscriptions', () => {
  beforeAll(async () => {
    await healthyCopy('/ls/a', 'k1');
    await haltedCopy('/ls/b', 'k2');
    await healthyCopy('/ls/c', 'k3');
    await haltedCopy('/ls/d/e', 'k4');
    await healthyCopy('/lsx', 'k5');
  });

  it('answers every field, halted ones first, then by path and key', async () => {
    const all = await listAll({ prefix: '/ls' });
    expect(names(all)).toEqual(['/ls/b#k2', '/ls/d/e#k4', '/ls/a#k1', '/ls/c#k3']);
    const b = all[0]!;
    expect(Object.keys(b)).toEqual(['sourcePath', 'subscriptionKey', 'action', 'target', 'status', 'acknowledgedOffset', 'lag', 'attempt', 'lastError', 'deliveryHalted', 'configuredAt']);
    expect(b).toMatchObject({ action: 'copy-to-stream', target: '/ls/b-recv', status: 'halted', attempt: QUICK.maxDeliveryAttempts });
    expect(b.lastError).toContain('boom');
    expect(b.deliveryHalted).toEqual({ reason: 'delivery-failed', afterOffset: b.acknowledgedOffset, attempts: QUICK.maxDeliveryAttempts, error: expect.stringContaining('boom') });
    expect(b.lag).toBeGreaterThan(0);
    const a = all[2]!;
    expect(a).toMatchObject({ status: 'healthy', lag: 0, attempt: 0, lastError: null });
    expect(a.deliveryHalted).toBeUndefined();
    expect(Date.parse(a.configuredAt)).not.toBeNaN();
    // What :state says of the same subscription.
    const state = await quick.api.state('/ls/a');
    expect(a.acknowledgedOffset).toBe(state.runtime!.subscriptions.k1!.acknowledgedOffset);
    expect(a.configuredAt).toBe(state.core!.subscriptions.outbound.byKey.k1!.configuredAt);
  });

  it('filters by status, alone or as a comma list', async () => {
    expect(names((await list({ prefix: '/ls', status: 'halted' })).subscriptions)).toEqual(['/ls/b#k2', '/ls/d/e#k4']);
    expect(names((await list({ prefix: '/ls', status: 'healthy' })).subscriptions)).toEqual(['/ls/a#k1', '/ls/c#k3']);
    expect(names((await list({ prefix: '/ls', status: 'retrying,lagging' })).subscriptions)).toEqual([]);
    expect(names((await list({ prefix: '/ls', status: 'healthy,halted' })).subscriptions)).toEqual(['/ls/b#k2', '/ls/d/e#k4', '/ls/a#k1', '/ls/c#k3']);
  });

  it('matches the prefix segment-wise', async () => {
    expect(names((await list({ prefix: '/ls/d' })).subscriptions)).toEqual(['/ls/d/e#k4']);
    expect(names((await list({ prefix: '/lsx' })).subscriptions)).toEqual(['/lsx#k5']);
    expect(names(await listAll({}))).toEqual(expect.arrayContaining(['/lsx#k5', '/ls/a#k1']));
  });

  it('pages with an opaque cursor; rows added between pages neither repeat nor shift the rest', async () => {
    for (const p of ['/pg/b', '/pg/d', '/pg/f']) await healthyCopy(p, 'k');
    const first = await list({ prefix: '/pg', limit: 2 });
    expect(names(first.subscriptions)).toEqual(['/pg/b#k', '/pg/d#k']);
    expect(first.next).toMatch(/^[A-Za-z0-9_-]+$/);
    // One before the cursor, one after it.
    await healthyCopy('/pg/a', 'k');
    await healthyCopy('/pg/e', 'k');
    const second = await list({ prefix: '/pg', limit: 2, after: first.next! });
    expect(names(second.subscriptions)).toEqual(['/pg/e#k', '/pg/f#k']);
    // A full last page says nothing follows only when nothing does.
    expect(second.next).toBeUndefined();
    expect((await list({ prefix: '/pg', limit: 5 })).next).toBeUndefined();
    expect((await list({ prefix: '/pg', limit: 4 })).next).toBeDefined();
  });

  it('follows a resume: a subscription set past its failing event and resumed leaves the halted group', async () => {
    await haltedCopy('/rs/x', 'k');
    expect(names((await list({ prefix: '/rs', status: 'halted' })).subscriptions)).toEqual(['/rs/x#k']);
    const head = (await quick.api.read('/rs/x', { limit: 1 })).streamMaxOffset;
    const res = await quick.api.request('POST', streamRoute('/rs/x', 'setSubscriptionCursorAndResume'), { json: { subscriptionKey: 'k', afterOffset: head } });
    expect(res.status, res.text).toBe(200);
    const entry = await eventually(async () => {
      const [e] = (await list({ prefix: '/rs' })).subscriptions;
      return e && e.status === 'healthy' ? e : undefined;
    }, 'the resumed subscription to be healthy');
    expect(entry.deliveryHalted).toBeUndefined();
    expect(names((await list({ prefix: '/rs', status: 'halted' })).subscriptions)).toEqual([]);
  });

  it('lists the subscriptions of the caller project only', async () => {
    const p1 = quick.api.with({ 'x-project-id': 'p1' });
    await healthyCopy('/ls/a', 'other', p1);
    expect(names((await list({ prefix: '/ls/a' }, p1)).subscriptions)).toEqual(['/ls/a#other']);
    expect(names((await list({ prefix: '/ls/a' })).subscriptions)).toEqual(['/ls/a#k1']);
  });

  it('drops removed subscriptions and destroyed streams', async () => {
    await healthyCopy('/gone/a', 'k');
    await healthyCopy('/gone/b', 'k');
    expect(names((await list({ prefix: '/gone' })).subscriptions)).toEqual(['/gone/a#k', '/gone/b#k']);
    await quick.api.append('/gone/a', { type: 'events.iterate.com/stream/subscription-removed', payload: { subscriptionKey: 'k' } });
    await quick.api.destroy('/gone/b');
    await eventually(async () => ((await list({ prefix: '/gone' })).subscriptions.length === 0 ? true : undefined), 'the listing to forget /gone');
  });

  it.skipIf(TEST_HOST === 'worker')('counts the same halted subscriptions as /metrics', async () => {
    const halts = await listAll({ status: 'halted' });
    const halted = sampleOf(await scrape(quick.api), 'rivulet_subscriptions_halted');
    // /metrics counts every project; the projects other than the deployment-wide one have none halted.
    expect(halts.length).toBeGreaterThan(0);
    expect(halted).toBe(halts.length);
  });

  it('answers the same page on the RPC root, and refuses bad options there', async () => {
    const itx = await connect(quick.server.url);
    try {
      const page = await itx.root.listSubscriptions({ prefix: '/ls', status: ['halted'] });
      expect(page).toEqual(await list({ prefix: '/ls', status: 'halted' }));
      const refused = await rpcError(itx.root.listSubscriptions({ status: ['stuck'] as never }));
      expect(refused.code).toBe('INVALID_INPUT');
      expect(refused.message).toContain('listSubscriptions.status[0]');
      expect((await rpcError(itx.root.listSubscriptions({ limit: 1001 }))).message).toContain('limit must be at most 1000');
    } finally {
      itx.close();
    }
  });

  it('is described in the OpenAPI document, with the two stream methods', async () => {
    const doc = (await quick.api.request<{ paths: Record<string, Record<string, { parameters: Array<{ name: string }> }>> }>('GET', '/v1/openapi.json')).body;
    expect(doc.paths['/v1/subscriptions']!.get!.parameters.map((p) => p.name)).toEqual(['status', 'prefix', 'limit', 'after']);
    expect(doc.paths['/v1/streams/{path}:deliveryAttempts']!.get!.parameters.map((p) => p.name)).toEqual(['path', 'subscriptionKey', 'limit']);
    expect(doc.paths['/v1/streams/{path}:previewSubscription']!.post).toBeDefined();
  });

  it('refuses bad parameters with INVALID_INPUT', async () => {
    expectError(await listRaw({ status: 'stuck' }), 'INVALID_INPUT', '"stuck" is not a status');
    expectError(await listRaw({ status: 'halted,' }), 'INVALID_INPUT', '"" is not a status');
    expectError(await listRaw({ limit: 0 }), 'INVALID_INPUT', 'limit must be at least 1');
    expectError(await listRaw({ limit: 1001 }), 'INVALID_INPUT', 'limit must be at most 1000');
    expect((await listRaw({ limit: 1000 })).status).toBe(200);
    expectError(await listRaw({ after: 'bm90IGEgY3Vyc29y' }), 'INVALID_INPUT', 'after: not a position of this listing');
    expectError(await listRaw({ after: '%%%' }), 'INVALID_INPUT', 'after: not a position of this listing');
    expectError(await listRaw({ sort: 'path' }), 'INVALID_INPUT', 'sort');
    expectError(await listRaw({ prefix: 'no-slash/../..' }), 'INVALID_INPUT', '');
    const repeated = await quick.api.request('GET', '/v1/subscriptions?status=halted&status=healthy');
    expectError(repeated, 'INVALID_INPUT', 'query parameter "status" is given more than once');
  });
});
