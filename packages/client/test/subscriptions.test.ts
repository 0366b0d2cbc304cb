/**
 * The SDK's subscription commands against a real server (protocol §14): each appends exactly the
 * events of protocol §9 on the source, and missing keys are NOT_FOUND.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient, RivuletError, type RivuletClient } from '@rivulet/client';
import { startTestServer, type TestServer } from './harness.js';

let t: TestServer;
let client: RivuletClient;

beforeEach(async () => {
  t = await startTestServer({ retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 3 });
  client = createClient({ url: t.url });
});

afterEach(async () => {
  await t.dispose();
});

async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('subscription commands', () => {
  it('subscribe copies, setSubscriptionCursor re-copies, unsubscribe removes', async () => {
    await client.append('/src', [{ type: 'a', payload: { n: 1 } }, { type: 'b' }]);
    const sub = await client.subscribeToEventsFrom('/dst', {
      sourceStreamPath: '/src',
      subscriptionKey: 'k',
      filter: { eventTypes: ['a'] },
      delivery: { start: 'beginning' },
    });
    expect(sub.subscriptionKey).toBe('k');
    expect(sub.subscriptionConfiguredEvent).toMatchObject({ path: '/src', offset: 4, type: 'events.iterate.com/stream/subscription-configured' });
    const copied = await eventually(() => client.getEvents('/dst', { afterOffset: 1 }), (r) => r.events.length === 1, 'the first copy');
    expect(copied.events[0]).toMatchObject({ type: 'a', payload: { n: 1 } });

    const { event } = await client.setSubscriptionCursor('/src', { subscriptionKey: 'k', afterOffset: 0 });
    expect(event).toMatchObject({ type: 'events.iterate.com/stream/subscription-cursor-set', payload: { subscriptionKey: 'k', afterOffset: 0 } });
    await eventually(() => client.getEvents('/dst', { afterOffset: 1 }), (r) => r.events.length === 2, 'the copy of the new run');

    expect(await client.resumeSubscription('/src', { subscriptionKey: 'k' })).toEqual({ event: null });
    const both = await client.setSubscriptionCursorAndResume('/src', { subscriptionKey: 'k', afterOffset: 5 });
    expect(both.resumed).toBeNull();
    expect(both.cursorSet.payload).toEqual({ subscriptionKey: 'k', afterOffset: 5 });

    const removed = await client.unsubscribeFromEvents('/dst', { sourceStreamPath: '/src', subscriptionKey: 'k' });
    expect(removed.status).toBe('removed');
    expect(await client.unsubscribeFromEvents('/dst', { sourceStreamPath: '/src', subscriptionKey: 'k' })).toEqual({ status: 'already-absent' });
  });

  it('commands on a missing key are NOT_FOUND; a keyless subscribe needs an idempotency key', async () => {
    await client.append('/src', { type: 'a' });
    const missing = await client.resumeSubscription('/src', { subscriptionKey: 'nope' }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(RivuletError);
    expect((missing as RivuletError).code).toBe('NOT_FOUND');
    expect((missing as RivuletError).message).toBe('no subscription "nope" on /src');
    const keyless = await client.subscribeToEventsFrom('/dst', { sourceStreamPath: '/src' }).catch((e: unknown) => e);
    expect((keyless as RivuletError).code).toBe('INVALID_INPUT');
    expect((keyless as RivuletError).message).toContain('needs an idempotencyKey');
    const generated = await client.subscribeToEventsFrom('/dst', { sourceStreamPath: '/src', idempotencyKey: 'once' });
    expect(generated.subscriptionKey).toBe(`subscription:${generated.subscriptionConfiguredEvent.offset}`);
    expect(await client.subscribeToEventsFrom('/dst', { sourceStreamPath: '/src', idempotencyKey: 'once' })).toEqual(generated);
  });
});

describe('subscriptions(path)', () => {
  it('summarises each outbound subscription with its target, progress and halt; a resume clears the halt', async () => {
    expect(await client.subscriptions('/nothing')).toEqual([]);
    await client.subscribeToEventsFrom('/dst', { sourceStreamPath: '/src', subscriptionKey: 'copy' });
    // A webhook to a port nothing listens on: it fails 3 times and halts (the server's knobs above).
    await client.append('/src', {
      type: 'events.iterate.com/stream/subscription-configured',
      payload: { subscriptionKey: 'hook', receiver: { action: 'webhook-post', url: 'http://127.0.0.1:9/hook', delivery: { start: 'now', onFailingEvent: 'halt' } } },
    });
    await client.append('/src', { type: 'a' });
    const halted = await eventually(
      () => client.subscriptions('/src'),
      (subs) => subs.some((s) => s.subscriptionKey === 'hook' && s.halted !== null),
      'the webhook to halt',
    );
    const byKey = Object.fromEntries(halted.map((s) => [s.subscriptionKey, s]));
    expect(Object.keys(byKey).sort()).toEqual(['copy', 'hook']);
    expect(byKey.copy).toMatchObject({ action: 'copy-to-stream', target: '/dst', halted: null, lastError: null, attempt: 0 });
    expect(byKey.hook).toMatchObject({
      action: 'webhook-post',
      target: 'http://127.0.0.1:9/hook',
      halted: { reason: 'delivery-failed', attempts: 3 },
      attempt: 3,
      lastError: expect.stringContaining('ECONNREFUSED'),
    });
    expect(byKey.hook!.halted!.error).toBe(byKey.hook!.lastError);
    expect(halted.filter((s) => s.halted).map((s) => s.subscriptionKey)).toEqual(['hook']);

    await client.resumeSubscription('/src', { subscriptionKey: 'hook' });
    const resumed = (await client.subscriptions('/src')).find((s) => s.subscriptionKey === 'hook')!;
    expect(resumed.halted).toBeNull();
  });
});
