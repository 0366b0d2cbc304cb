/**
 * End-to-end over real HTTP: webhook-post from a real server to a real HTTP receiver on loopback
 * (protocol §17, and an outage of the receiver). Open mode, so
 * private webhooks are allowed and the receiver can live on 127.0.0.1.
 */
import { statSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyWebhook } from '@rivulet/client';
import { Webhook } from 'standardwebhooks';
import type { CommittedEvent } from '@rivulet/contract';
import { startNodeServer, readStoredWebhookSecret, type NodeServerOptions } from '../../src/hosts/node/serve.js';
import { HookServer, signatureHeaders, type HookRequest } from '../helpers/hook-server.js';
import type { Api } from '../helpers/http.js';
import { TEST_HOST, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { EventType, caughtUp, configured, eventually, halted, runtimeOf, sampleOf, scrape, settle } from '../helpers/subscriptions.js';

const QUICK = { retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 6, deliveryTimeoutMs: 1_000 } as const;

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(options: Omit<NodeServerOptions, 'port' | 'data'> = {}): Promise<TestServer> {
  const server = await startTestServer({ ...QUICK, ...options });
  cleanups.push(() => server.close());
  return server;
}

async function receiver(): Promise<HookServer> {
  const hooks = await HookServer.start();
  cleanups.push(() => hooks.stop());
  return hooks;
}

function webhook(key: string, url: string, onFailingEvent: 'halt' | 'skip' = 'halt', eventTypes = ['app/x']) {
  return configured({
    subscriptionKey: key,
    filter: { eventTypes },
    receiver: { action: 'webhook-post', url, delivery: { start: 'now', onFailingEvent } },
  });
}

const xs = (...ns: number[]) => ns.map((n) => ({ type: 'app/x', payload: { n } }));

/** The webhook requests as a WHATWG Request, as a fetch-style handler would get them. */
function asRequest(request: HookRequest, url: string): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) if (typeof value === 'string') headers.set(name, value);
  return new Request(url, { method: 'POST', headers, body: request.body });
}

async function configure(api: Api, path: string, event: ReturnType<typeof webhook>): Promise<CommittedEvent> {
  const [committed] = await api.append(path, event);
  return committed!;
}

describe('one signed envelope per event', () => {
  it('in order, verifying with standardwebhooks and verifyWebhook; attempt counts retries; webhook-id is stable across them', async () => {
    const server = await serve();
    const hooks = await receiver();
    const secret = readStoredWebhookSecret(server.dataDir)!;
    const cfg = await configure(server.api, '/s36', webhook('k', hooks.url('/in')));
    // Scripted before the append: the first deliveries can be answered before the append's own
    // answer reaches this test (the Worker host delivers from another process).
    hooks.script = (request) =>
      (request.envelope.event.payload as { n?: number } | undefined)?.n === 2 && request.envelope.attempt < 3
        ? { status: 500, body: 'not yet' }
        : { status: 204 };
    const events = await server.api.append('/s36', [...xs(1, 2), { type: 'app/ignored' }, ...xs(3)]);
    const second = events[1]!;
    await caughtUp(server.api, '/s36', 'k');

    const delivered = events.filter((e) => e.type === 'app/x');
    expect(hooks.offsets()).toEqual([delivered[0]!.offset, second.offset, second.offset, second.offset, delivered[2]!.offset]);
    const lib = new Webhook(secret);
    for (const request of hooks.requests) {
      expect(request.method).toBe('POST');
      expect(request.path).toBe('/in');
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['user-agent']).toMatch(/^Rivulet/);
      expect(request.headers['webhook-id']).toBe(request.envelope.deliveryId);
      expect(Number(request.headers['webhook-timestamp'])).toBeCloseTo(Date.now() / 1000, -2);
      expect(lib.verify(request.body, signatureHeaders(request))).toEqual(request.envelope);
      expect(await verifyWebhook(asRequest(request, hooks.url('/in')), secret)).toEqual(request.envelope);
      expect(await verifyWebhook({ headers: request.headers, body: request.body }, secret)).toEqual(request.envelope);
    }
    const envelopes = hooks.envelopes();
    expect(envelopes.map((e) => e.attempt)).toEqual([1, 1, 2, 3, 1]);
    const retries = envelopes.slice(1, 4);
    expect(new Set(retries.map((e) => e.deliveryId)).size).toBe(1);
    expect(new Set(envelopes.map((e) => e.deliveryId)).size).toBe(3);
    const { streamId } = (await server.api.state('/s36')).core!;
    expect(envelopes[4]).toEqual({
      projectId: null,
      path: '/s36',
      streamId,
      streamCreatedAt: (await server.api.read('/s36', { limit: 1 })).events[0]!.createdAt,
      subscriptionKey: 'k',
      cursorChangedAtSourceOffset: cfg.offset,
      deliveryId: `delivery:${JSON.stringify([streamId, 'k', cfg.offset, delivered[2]!.offset, delivered[2]!.offset])}`,
      attempt: 1,
      configuredEvent: cfg,
      event: delivered[2],
    });
    // The Node host's client keeps its connection between POSTs (and retries): /metrics counts them.
    if (TEST_HOST === 'node') {
      const metrics = await scrape(server.api);
      expect(hooks.connections).toBe(1);
      expect(sampleOf(metrics, 'rivulet_webhook_connections_total', { scheme: 'http' })).toBe(1);
      expect(sampleOf(metrics, 'rivulet_webhook_resent_total') ?? 0).toBe(0);
    }
  });
});

describe('skip', () => {
  it('the failing event fails alone three times with non-2xx, is skipped with an error-occurred, and later events flow', async () => {
    const server = await serve();
    const hooks = await receiver();
    await configure(server.api, '/s37', webhook('k', hooks.url(), 'skip'));
    // Scripted before the append, for the same reason as above.
    hooks.script = (request) =>
      (request.envelope.event.payload as { n?: number } | undefined)?.n === 2 ? { status: 400, body: 'bad n' } : { status: 200 };
    const [a, bad, c] = await server.api.append('/s37', xs(1, 2, 3));
    await caughtUp(server.api, '/s37', 'k');

    expect(hooks.offsets()).toEqual([a!.offset, bad!.offset, bad!.offset, bad!.offset, c!.offset]);
    const errors = (await server.api.readAll('/s37')).filter((e) => e.type === EventType.errorOccurred);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.payload).toMatchObject({ subscriptionKey: 'k', offset: bad!.offset, error: 'webhook responded 400 Bad Request: bad n' });
    expect(errors[0]!.payload!.message).toContain(`skipped offset ${bad!.offset}`);
    // Later appends keep flowing.
    const [d] = await server.api.append('/s37', xs(4));
    await eventually(() => hooks.offsets().includes(d!.offset), 'the next event delivered');
  });
});

describe('halt', () => {
  it('halts after the configured attempts: durable fact, :state, runtime lastError and /metrics', async () => {
    const server = await serve({ maxDeliveryAttempts: 3 });
    const hooks = await receiver();
    hooks.script = () => ({ status: 503 });
    await configure(server.api, '/s38', webhook('k', hooks.url()));
    const [e] = await server.api.append('/s38', xs(1));
    const entry = await halted(server.api, '/s38', 'k');
    const error = 'webhook responded 503 Service Unavailable';
    expect(entry.deliveryHalted).toEqual({ reason: 'delivery-failed', afterOffset: e!.offset - 1, attempts: 3, error });
    expect(hooks.offsets()).toEqual([e!.offset, e!.offset, e!.offset]);
    const runtime = await eventually(async () => {
      const row = await runtimeOf(server.api, '/s38', 'k');
      return row?.inFlightDeadlineAt === null ? row : undefined;
    }, 'the halted row to settle');
    expect(runtime).toMatchObject({ lastError: error, attempt: 3, acknowledgedOffset: e!.offset - 1, nextAttemptAt: null });
    const facts = (await server.api.readAll('/s38')).filter((x) => x.type === EventType.subscriptionDeliveryHalted);
    expect(facts.map((f) => f.payload)).toEqual([{ subscriptionKey: 'k', reason: 'delivery-failed', afterOffset: e!.offset - 1, attempts: 3, error }]);
    // Delivery metrics live in each stream's Durable Object on the Worker host (docs/cloudflare.md §4.2).
    if (TEST_HOST === 'node') {
      const metrics = await scrape(server.api);
      expect(sampleOf(metrics, 'rivulet_subscriptions_halted')).toBe(1);
      expect(sampleOf(metrics, 'rivulet_deliveries_total', { action: 'webhook-post', outcome: 'unavailable' })).toBe(3);
    }

    // Halted: nothing more is sent, even for new events.
    await server.api.append('/s38', xs(2));
    await settle(100);
    expect(hooks.requests).toHaveLength(3);
  });
});

describe('outage', () => {
  it('a receiver down for many attempts, then back: no event is skipped and none is lost, all in order', async () => {
    const server = await serve({ maxDeliveryAttempts: 100 });
    const hooks = await receiver();
    await configure(server.api, '/outage', webhook('k', hooks.url(), 'skip'));
    const [first] = await server.api.append('/outage', xs(0));
    await caughtUp(server.api, '/outage', 'k');

    await hooks.stop();
    const during = await server.api.append('/outage', xs(1, 2, 3, 4, 5));
    // Far more failed attempts than the three confirmations a skip needs.
    const down = await eventually(async () => {
      const row = await runtimeOf(server.api, '/outage', 'k');
      return row && row.attempt >= 10 ? row : undefined;
    }, 'ten refused attempts');
    // Node names the socket error; Workers' fetch says "Network connection lost."
    expect(down.lastError).toMatch(/^webhook not delivered: cannot reach http:\/\/127\.0\.0\.1:\d+: .*(ECONNREFUSED|Network connection lost)/);
    const more = await server.api.append('/outage', xs(6, 7));
    await hooks.restart();
    await caughtUp(server.api, '/outage', 'k');

    const expected = [first!, ...during, ...more].map((e) => e.offset);
    expect(hooks.offsets()).toEqual(expected);
    const all = await server.api.readAll('/outage');
    expect(all.filter((e) => e.type === EventType.errorOccurred || e.type === EventType.subscriptionDeliveryHalted)).toEqual([]);
    expect((await runtimeOf(server.api, '/outage', 'k'))?.acknowledgedOffset).toBe(all[all.length - 1]!.offset);
  });
});

describe('the webhook secret', () => {
  it('is generated once on first start, stored with mode 0600, and kept across restarts', async () => {
    const { dir, remove } = await tempDir();
    cleanups.push(remove);
    const quiet = { error: () => undefined };
    const first = await startNodeServer({ port: 0, host: '127.0.0.1', data: dir, logger: quiet });
    const secret = readStoredWebhookSecret(dir);
    await first.close();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(statSync(`${dir}/webhook-secret`).mode & 0o777).toBe(0o600);
    const second = await startNodeServer({ port: 0, host: '127.0.0.1', data: dir, logger: quiet });
    await second.close();
    expect(readStoredWebhookSecret(dir)).toBe(secret);
  });

  it('a given secret signs instead and is not stored; an invalid one refuses to start', async () => {
    const given = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const server = await serve({ webhookSecret: given });
    expect(readStoredWebhookSecret(server.dataDir)).toBeUndefined();
    const hooks = await receiver();
    await configure(server.api, '/given', webhook('k', hooks.url()));
    await server.api.append('/given', xs(1));
    await caughtUp(server.api, '/given', 'k');
    expect(new Webhook(given).verify(hooks.requests[0]!.body, signatureHeaders(hooks.requests[0]!))).toEqual(hooks.requests[0]!.envelope);

    const { dir, remove } = await tempDir();
    cleanups.push(remove);
    await expect(startNodeServer({ port: 0, host: '127.0.0.1', data: dir, webhookSecret: 'whsec_tooshort' })).rejects.toThrow(
      /^--webhook-secret \(RIVULET_WEBHOOK_SECRET\): a webhook secret/,
    );
    // The data folder was unlocked again.
    const after = await startNodeServer({ port: 0, host: '127.0.0.1', data: dir, logger: { error: () => undefined } });
    await after.close();
  });
});
