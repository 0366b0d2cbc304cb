/**
 * webhook-post through the real send loop (sender, ladder, watchdog) with the real receiver and
 * the Node outbound adapter, to a real HTTP receiver on loopback (protocol §12.4,
 * §17). The harness composes the engine as hosts/node.ts does; only the webhook receiver is
 * swapped from the scripted fake to the real one.
 */
import { EventType } from '@rivulet/contract';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { setSubscriptionCursor } from '../../src/engine/commands.js';
import { webhookReceiver } from '../../src/engine/receivers/webhook.js';
import { webhookSecretOf } from '../../src/core/webhook-signature.js';
import { nodeOutbound } from '../../src/hosts/node/outbound.js';
import { MemoryStorage } from '../../src/adapters/memory/memory-storage.js';
import type { SqlStorage } from '../../src/ports/storage.js';
import { HookServer, signatureHeaders, type HookRequest } from '../helpers/hook-server.js';
import { createHarness, waitFor, type Harness, type HarnessOptions } from './harness.js';
import { webhookSub, x } from './payloads.js';

const SECRET = webhookSecretOf(crypto.getRandomValues(new Uint8Array(32)));

let h: Harness;
let hooks: HookServer;
const closers: Array<() => unknown> = [];

async function setup(config: HarnessOptions['config'] = {}, storage?: SqlStorage): Promise<void> {
  hooks = await HookServer.start();
  const http = nodeOutbound({ allowPrivate: true });
  closers.push(() => http.close(), () => hooks.stop());
  // A generous timeout unless a test is about timeouts: a slow first call under load must not turn
  // into an (allowed, at-least-once) duplicate that breaks an exact sequence.
  h = await createHarness({
    config: { deliveryTimeoutMs: 2_000, ...config },
    webhookReceiver: webhookReceiver({ http, secret: SECRET, clock: { now: () => Date.now() } }),
    ...(storage ? { storage } : {}),
  });
}

/** Storage that records every in-flight deadline written to a subscription row (null included). */
async function watchdogRecordingStorage(): Promise<{ storage: SqlStorage; deadlines: Array<number | null> }> {
  const storage = await MemoryStorage.create();
  const deadlines: Array<number | null> = [];
  const run = storage.run.bind(storage);
  storage.run = (sql: string, ...params: unknown[]) => {
    // The upsert's eighth parameter is inflight_deadline_at (SubscriptionRuntime.write).
    if (sql.trimStart().startsWith('INSERT INTO subscription_runtime')) deadlines.push(params[7] as number | null);
    return run(sql, ...(params as never[]));
  };
  return { storage, deadlines };
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

/**
 * Webhooks read a page of owed events at once and prepare the next POST while the previous one is
 * in flight (engine/delivery/read-ahead.ts, prepare.ts). None of that may show on the wire: one
 * event per POST, strictly in order, the next only after the previous was answered; a failure
 * retries its event alone first; a delivery prepared for a run that ended is never sent.
 */
describe('the stored in-flight watchdog (protocol §12.7)', () => {
  /** Delivers a backlog of `n` events; answers the deadlines stored while each request was open. */
  async function backlog(
    n: number,
    config: HarnessOptions['config'],
    answerAfterMs = 0,
  ): Promise<{ seen: Array<number | null>; arrived: number[]; written: Array<number | null> }> {
    const recording = await watchdogRecordingStorage();
    await setup(config, recording.storage);
    const seen: Array<number | null> = [];
    const arrived: number[] = [];
    hooks.script = () => {
      arrived.push(Date.now());
      const rows = h.storage.exec<{ d: number | null }>(`SELECT inflight_deadline_at AS d FROM subscription_runtime WHERE key = 'k'`);
      seen.push(rows[0]?.d ?? null);
      if (answerAfterMs === 0) return { status: 204 };
      return (res) => {
        setTimeout(() => {
          res.writeHead(204);
          res.end();
        }, answerAfterMs);
      };
    };
    await h.append('/s', ...Array.from({ length: n }, (_, i) => x(i)));
    recording.deadlines.length = 0;
    await h.configure('/s', webhookSub('k', { url: hooks.url(), eventTypes: ['app/x'], start: 'beginning' }));
    await h.caughtUp('/s', 'k', 10_000);
    // Distinct values: the periodic persistence of delivery progress may write a row again with
    // the deadline it already holds, which stores nothing new.
    return { seen, arrived, written: [...new Set(recording.deadlines.filter((d) => d !== null))] };
  }

  it('with a lease, a backlog stores the watchdog once, covering every POST, and clears it when caught up', async () => {
    // A timeout far longer than the backlog takes, however loaded the machine: one lease covers all.
    const { seen, arrived, written } = await backlog(30, { deliveryTimeoutMs: 10_000, watchdogLeaseMs: 10_000 });
    expect(arrived).toHaveLength(30);
    expect(written).toHaveLength(1);
    // Every request found the one stored deadline, a call's deadline plus the lease: later than
    // its own call's deadline, which is at most its arrival plus the timeout.
    seen.forEach((deadline, i) => {
      expect(deadline).toBe(written[0]);
      expect(deadline).toBeGreaterThan(arrived[i]! + 10_000);
    });
    expect(h.sub('/s', 'k')).toMatchObject({ acknowledgedOffset: h.head('/s'), inFlightDeadlineAt: null });
    await waitFor(() => h.storage.exec<{ d: number | null }>(`SELECT inflight_deadline_at AS d FROM subscription_runtime WHERE key = 'k'`)[0]!.d === null, 'the cleared watchdog stored');
  });

  it('without a lease (the Worker host), it is stored before every POST with exactly that call\'s deadline', async () => {
    // Answered after 2 ms, so that no two calls share a millisecond (and so a deadline).
    const { seen, arrived, written } = await backlog(30, { deliveryTimeoutMs: 2_000, watchdogLeaseMs: 0 }, 2);
    expect(arrived).toHaveLength(30);
    expect(written).toHaveLength(30);
    // Each request found a deadline written for its own call: a new one each time, and no later
    // than its arrival plus the timeout (the call left before it arrived).
    seen.forEach((deadline, i) => {
      expect(deadline).toBe(written[i]);
      expect(deadline).toBeLessThanOrEqual(arrived[i]! + 2_000);
      if (i > 0) expect(deadline).toBeGreaterThan(seen[i - 1]!);
    });
    expect(h.sub('/s', 'k')).toMatchObject({ acknowledgedOffset: h.head('/s'), inFlightDeadlineAt: null });
  });

  it('a lease that no longer covers the next call is written again', async () => {
    // A lease shorter than the gaps between POSTs (each answered after 5 ms): every call needs its
    // own write, and each must find its own deadline covered.
    const { seen, arrived, written } = await backlog(5, { deliveryTimeoutMs: 2_000, watchdogLeaseMs: 1 }, 5);
    expect(arrived).toHaveLength(5);
    expect(written).toHaveLength(5);
    seen.forEach((deadline, i) => {
      expect(deadline).toBe(written[i]);
      if (i > 0) expect(deadline).toBeGreaterThan(seen[i - 1]!);
    });
  });
});

describe('read-ahead and the prepared next POST', () => {
  /** Answers each request after `delayMs`, and records how many were ever open at once. */
  function slowReceiver(delayMs: number, status: (request: HookRequest) => number = () => 204): { maxOpen: () => number } {
    let open = 0;
    let maxOpen = 0;
    hooks.script = (request) => {
      open++;
      maxOpen = Math.max(maxOpen, open);
      return (res) => {
        setTimeout(() => {
          open--;
          res.writeHead(status(request));
          res.end();
        }, delayMs);
      };
    };
    return { maxOpen: () => maxOpen };
  }

  it('a backlog longer than a page, with non-matching events between, goes one POST per event, in order, one at a time', async () => {
    await setup();
    const receiver = slowReceiver(1);
    const appended = await h.append('/s', ...Array.from({ length: 200 }, (_, i) => (i % 3 === 2 ? { type: 'app/other' } : x(i))));
    await h.configure('/s', webhookSub('k', { url: hooks.url(), eventTypes: ['app/x'], start: 'beginning' }));
    await h.caughtUp('/s', 'k', 10_000);

    const xs = appended.filter((e) => e.type === 'app/x');
    expect(xs.length).toBeGreaterThan(64 * 2);
    expect(hooks.offsets()).toEqual(xs.map((e) => e.offset));
    expect(receiver.maxOpen()).toBe(1);
    expect(hooks.envelopes().every((e) => e.attempt === 1)).toBe(true);
    expect(new Set(hooks.envelopes().map((e) => e.deliveryId)).size).toBe(xs.length);
    expect(h.sub('/s', 'k')).toMatchObject({ acknowledgedOffset: h.head('/s'), attempt: 0, inFlightDeadlineAt: null });
  });

  it('a failure in the middle of a run of POSTs is retried alone, under the same webhook-id, before the next event', async () => {
    await setup({ maxDeliveryAttempts: 5, retryBaseMs: 5, retryMaxMs: 20 });
    const appended = await h.append('/s', ...Array.from({ length: 10 }, (_, i) => x(i)));
    const bad = appended[4]!;
    let failedOnce = false;
    const receiver = slowReceiver(1, (request) => {
      if (request.envelope.event.offset !== bad.offset || failedOnce) return 204;
      failedOnce = true;
      return 500;
    });
    await h.configure('/s', webhookSub('k', { url: hooks.url(), eventTypes: ['app/x'], start: 'beginning' }));
    await h.caughtUp('/s', 'k');

    const offsets = appended.map((e) => e.offset);
    expect(hooks.offsets()).toEqual([...offsets.slice(0, 5), bad.offset, ...offsets.slice(5)]);
    const tries = hooks.envelopes().filter((e) => e.event.offset === bad.offset);
    expect(tries.map((e) => e.attempt)).toEqual([1, 2]);
    expect(tries[0]!.deliveryId).toBe(tries[1]!.deliveryId);
    expect(hooks.envelopes().filter((e) => e.event.offset !== bad.offset).every((e) => e.attempt === 1)).toBe(true);
    expect(receiver.maxOpen()).toBe(1);
  });

  it('a cursor set while a POST is out ends the old run there: its prepared next POST is never sent', async () => {
    await setup();
    const appended = await h.append('/s', ...Array.from({ length: 30 }, (_, i) => x(i)));
    const configured = await h.configure('/s', webhookSub('k', { url: hooks.url(), eventTypes: ['app/x'], start: 'beginning' }));
    let cursorSet: Promise<unknown> | undefined;
    hooks.script = (_request, index) => (res) => {
      // The tenth POST is answered only after the cursor set committed: its success is a late one.
      const answerAfter = index === 9 ? (cursorSet ??= setSubscriptionCursor(h.actor('/s'), { subscriptionKey: 'k', afterOffset: appended[0]!.offset - 1 })) : Promise.resolve();
      void answerAfter.then(() => {
        res.writeHead(204);
        res.end();
      });
    };
    await waitFor(() => cursorSet, 'the cursor set');
    await cursorSet;
    await waitFor(() => hooks.requests.length >= 10 + appended.length && h.sub('/s', 'k').acknowledgedOffset === h.head('/s'), 'the new run caught up', 10_000);

    const offsets = appended.map((e) => e.offset);
    const oldRun = hooks.envelopes().filter((e) => e.cursorChangedAtSourceOffset === configured.offset);
    const newRun = hooks.envelopes().filter((e) => e.cursorChangedAtSourceOffset !== configured.offset);
    expect(oldRun.map((e) => e.event.offset)).toEqual(offsets.slice(0, 10));
    expect(newRun.map((e) => e.event.offset)).toEqual(offsets);
    expect(hooks.requests).toHaveLength(10 + offsets.length);
  });
});
