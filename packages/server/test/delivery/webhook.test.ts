/**
 * webhook-post through the real send loop (sender, ladder, watchdog) with the real receiver and
 * the Node outbound adapter, to a real HTTP receiver on loopback (protocol §17; SEMANTICS §5.4,
 * §5.6). The harness composes the engine as hosts/node.ts does; only the webhook receiver is
 * swapped from the scripted fake to the real one.
 */
import { EventType } from '@rivulet/contract';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { setSubscriptionCursor } from '../../src/engine/commands.js';
import { webhookReceiver } from '../../src/engine/delivery/webhook-receiver.js';
import { webhookSecretOf } from '../../src/core/webhook-signature.js';
import { nodeOutbound } from '../../src/hosts/node-outbound.js';
import { HookServer, signatureHeaders } from '../helpers/hook-server.js';
import { createHarness, waitFor, webhookSub, x, type Harness, type HarnessOptions } from './harness.js';

const SECRET = webhookSecretOf(crypto.getRandomValues(new Uint8Array(32)));

let h: Harness;
let hooks: HookServer;
const closers: Array<() => unknown> = [];

async function setup(config: HarnessOptions['config'] = {}): Promise<void> {
  hooks = await HookServer.start();
  const http = nodeOutbound({ allowPrivate: true });
  closers.push(() => http.close(), () => hooks.stop());
  // A generous timeout unless a test is about timeouts: a slow first call under load must not turn
  // into an (allowed, at-least-once) duplicate that breaks an exact sequence.
  h = await createHarness({ config: { deliveryTimeoutMs: 2_000, ...config }, webhookReceiver: webhookReceiver({ http, secret: SECRET, clock: { now: () => Date.now() } }) });
}

afterEach(async () => {
  await h.close();
  for (const close of closers.splice(0)) await close();
});

describe('delivery', () => {
  it('one signed envelope per event, in order, with the configure event and the transform', async () => {
    await setup();
    const configured = await h.configure(
      '/s',
      webhookSub('k', { url: hooks.url('/in'), eventTypes: ['app/x'], transform: '{"type": "hook/" & type, "payload": {"m": payload.n * 10}}' }),
    );
    const appended = await h.append('/s', x(1), x(2), { type: 'app/other' }, x(3));
    await h.caughtUp('/s', 'k');

    const xs = appended.filter((e) => e.type === 'app/x');
    expect(hooks.offsets()).toEqual(xs.map((e) => e.offset));
    const lib = new Webhook(SECRET);
    const streamId = h.core('/s').streamId;
    hooks.requests.forEach((request, i) => {
      const source = xs[i]!;
      expect(lib.verify(request.body, signatureHeaders(request))).toEqual(request.envelope);
      expect(request.headers['webhook-id']).toBe(request.envelope.deliveryId);
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.envelope).toEqual({
        projectId: 'proj',
        path: '/s',
        streamId,
        streamCreatedAt: h.events('/s')[0]!.createdAt,
        subscriptionKey: 'k',
        cursorChangedAtSourceOffset: configured.offset,
        deliveryId: `delivery:${JSON.stringify([streamId, 'k', configured.offset, source.offset, source.offset])}`,
        attempt: 1,
        configuredEvent: configured,
        event: { ...source, type: 'hook/app/x', payload: { m: (source.payload!.n as number) * 10 } },
      });
    });
    expect(h.sub('/s', 'k')).toMatchObject({ attempt: 0, lastError: null, acknowledgedOffset: h.head('/s') });
  });

  it('a new run (cursor set) delivers again under a new webhook-id', async () => {
    await setup();
    await h.configure('/s', webhookSub('k', { url: hooks.url(), eventTypes: ['app/x'] }));
    const [e] = await h.append('/s', x(1));
    await h.caughtUp('/s', 'k');
    const { event: cursorSet } = await setSubscriptionCursor(h.actor('/s'), { subscriptionKey: 'k', afterOffset: e!.offset - 1 });
    await h.caughtUp('/s', 'k');
    expect(hooks.offsets()).toEqual([e!.offset, e!.offset]);
    const [first, second] = hooks.envelopes();
    expect(second!.deliveryId).not.toBe(first!.deliveryId);
    expect(second!.cursorChangedAtSourceOffset).toBe(cursorSet.offset);
    expect(second!.attempt).toBe(1);
  });
});

describe('failures', () => {
  it('non-2xx is a failing event: with skip it fails alone three times, is skipped with an audit, and later events flow', async () => {
    await setup({ maxDeliveryAttempts: 6 });
    await h.configure('/s', webhookSub('k', { url: hooks.url(), eventTypes: ['app/x'], onFailingEvent: 'skip' }));
    const [a, bad, c] = await h.append('/s', x(1), x(2), x(3));
    hooks.script = (request) =>
      request.envelope.event.offset === bad!.offset ? { status: 422, body: '{"error":"cannot take n=2"}' } : { status: 204 };
    await h.caughtUp('/s', 'k');

    expect(hooks.offsets()).toEqual([a!.offset, bad!.offset, bad!.offset, bad!.offset, c!.offset]);
    const tries = hooks.envelopes().filter((e) => e.event.offset === bad!.offset);
    expect(tries.map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(new Set(tries.map((e) => e.deliveryId)).size).toBe(1);
    const audits = h.eventsOfType('/s', EventType.errorOccurred);
    expect(audits).toHaveLength(1);
    expect(audits[0]!.payload).toMatchObject({
      subscriptionKey: 'k',
      offset: bad!.offset,
      error: 'webhook responded 422 Unprocessable Entity: {"error":"cannot take n=2"}',
    });
    expect(h.eventsOfType('/s', EventType.subscriptionDeliveryHalted)).toEqual([]);
  });

  it('503 is unavailable: with skip nothing is ever skipped; it halts at the attempt limit naming the status', async () => {
    await setup({ maxDeliveryAttempts: 5 });
    hooks.script = () => ({ status: 503 });
    await h.configure('/s', webhookSub('k', { url: hooks.url(), onFailingEvent: 'skip' }));
    const [e] = await h.append('/s', x(1));
    const halt = await h.halted('/s', 'k');
    expect(halt).toMatchObject({ attempts: 5, afterOffset: e!.offset - 1, error: 'webhook responded 503 Service Unavailable' });
    expect(hooks.offsets()).toEqual([1, 2, 3, 4, 5].map(() => e!.offset));
    expect(h.eventsOfType('/s', EventType.errorOccurred)).toEqual([]);
    expect(h.sub('/s', 'k')).toMatchObject({ lastError: 'webhook responded 503 Service Unavailable', acknowledgedOffset: e!.offset - 1 });
  });

  it('a receiver that never answers times out (unavailable), the call is aborted, and the retry keeps the webhook-id', async () => {
    await setup({ deliveryTimeoutMs: 250, maxDeliveryAttempts: 10 });
    hooks.script = (_request, index) => (index < 2 ? 'hang' : { status: 200 });
    await h.configure('/s', webhookSub('k', { url: hooks.url(), onFailingEvent: 'skip' }));
    const [e] = await h.append('/s', x(1));
    await waitFor(() => h.sub('/s', 'k').lastError === 'delivery timed out after 250 ms', 'a timeout recorded');
    await h.caughtUp('/s', 'k');
    // Two hung calls, then the answer (a slow answer under load may add one more timed-out try).
    const tries = hooks.offsets().length;
    expect(tries).toBeGreaterThanOrEqual(3);
    expect(hooks.offsets()).toEqual(Array<number>(tries).fill(e!.offset));
    expect(hooks.envelopes().map((env) => env.attempt)).toEqual(Array.from({ length: tries }, (_, i) => i + 1));
    expect(new Set(hooks.envelopes().map((env) => env.deliveryId)).size).toBe(1);
    expect(h.eventsOfType('/s', EventType.errorOccurred)).toEqual([]);
    // The timed-out calls' connections were dropped, not left hanging.
    await waitFor(() => hooks.openConnections <= 1, 'hung connections closed');
  });

  it('a receiver that is down (connection refused) is unavailable and never skipped', async () => {
    await setup({ maxDeliveryAttempts: 50, retryBaseMs: 5, retryMaxMs: 20 });
    await h.configure('/s', webhookSub('k', { url: hooks.url(), onFailingEvent: 'skip' }));
    await hooks.stop();
    const appended = await h.append('/s', x(1), x(2), x(3));
    await waitFor(() => h.sub('/s', 'k').attempt >= 6, 'six refused attempts');
    expect(h.sub('/s', 'k').lastError).toMatch(/^webhook not delivered: cannot reach http:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED/);
    await hooks.restart();
    await h.caughtUp('/s', 'k');
    expect(hooks.offsets()).toEqual(appended.map((e) => e.offset));
    expect(h.eventsOfType('/s', EventType.errorOccurred)).toEqual([]);
  });
});
