/**
 * The SDK's worker side against a real server (protocol §18.5, §18.6, §12.4): WorkerError's flags
 * cross RPC and steer the server's classifier (unavailable → backoff without a skip, retryable:
 * false → halt at once, anything else → a failing event that "skip" skips), and serveWorker
 * registers again after the server restarts on the same port and data folder, without any action
 * of the user — until stop().
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  connect,
  createClient,
  serveWorker,
  WorkerError,
  type CommittedEvent,
  type ItxBatch,
  type ItxConnection,
  type RivuletClient,
} from '@rivulet/client';
import { EventType, type SubscriptionRuntimeState } from '@rivulet/contract';
import { startTestServer, type TestServer } from './harness.js';

let t: TestServer;
let client: RivuletClient;
let itx: ItxConnection | undefined;

beforeEach(async () => {
  t = await startTestServer({ retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 30, deliveryTimeoutMs: 2_000 });
  client = createClient({ url: t.url });
});

afterEach(async () => {
  itx?.close();
  itx = undefined;
  await t.dispose();
});

async function eventually<T>(read: () => Promise<T> | T, ok: (value: T) => boolean, what: string, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function itxSubscription(key: string, worker: string, onFailingEvent: 'halt' | 'skip') {
  return {
    type: EventType.subscriptionConfigured,
    payload: {
      subscriptionKey: key,
      filter: { eventTypes: ['job'] },
      receiver: { action: 'itx-call', expression: ['workers', ['get', worker], 'processEventBatch'], delivery: { start: 'now', onFailingEvent } },
    },
  };
}

const runtime = async (path: string, key: string): Promise<SubscriptionRuntimeState | undefined> =>
  (await client.state(path)).runtime?.subscriptions[key];

const caughtUp = (path: string, key: string) =>
  eventually(
    () => runtime(path, key),
    (row) => !!row && row.lag === 0 && row.attempt === 0 && row.lastError === null && row.inFlightDeadlineAt === null,
    `${path} "${key}" to catch up`,
  );

const audits = async (path: string): Promise<CommittedEvent[]> =>
  (await client.getEvents(path, { eventTypes: [EventType.errorOccurred] })).events;

describe('WorkerError flags seen by the server\'s classifier', () => {
  it('unavailable: true backs off without counting towards a skip; retryable: false halts at once; a plain WorkerError is skipped after three single attempts', async () => {
    itx = await connect(t.url);
    const calls: { kind: string; attempt: number; offsets: number[] }[] = [];
    const served = serveWorker(itx, 'flags', {
      processEventBatch: (batch: ItxBatch) => {
        const kind = String(batch.events[0]!.payload?.kind ?? 'ok');
        calls.push({ kind, attempt: batch.attempt, offsets: batch.events.map((e) => e.offset) });
        if (kind === 'outage' && batch.attempt <= 4) throw new WorkerError('dependency down', { unavailable: true });
        if (kind === 'fatal') throw new WorkerError('cannot ever handle this', { retryable: false });
        if (kind === 'poison') throw new WorkerError('bad event');
        return { ok: true };
      },
    });
    await served.ready;

    // unavailable: four unavailable answers (more than the three confirmations), then delivered.
    await client.append('/flags/outage', itxSubscription('k', 'flags', 'skip'));
    const [outage] = await client.append('/flags/outage', { type: 'job', payload: { kind: 'outage' } });
    await caughtUp('/flags/outage', 'k');
    expect(calls.filter((c) => c.kind === 'outage').map((c) => c.attempt)).toEqual([1, 2, 3, 4, 5]);
    expect(await audits('/flags/outage')).toEqual([]);
    expect(calls.filter((c) => c.kind === 'outage').every((c) => c.offsets[0] === outage!.offset)).toBe(true);

    // retryable: false halts after one attempt, even with "skip".
    await client.append('/flags/fatal', itxSubscription('k', 'flags', 'skip'));
    const [fatal] = await client.append('/flags/fatal', { type: 'job', payload: { kind: 'fatal' } });
    const halted = await eventually(
      async () => (await client.state('/flags/fatal')).core?.subscriptions.outbound.byKey.k?.deliveryHalted,
      (h) => h !== undefined,
      'the fatal subscription to halt',
    );
    expect(halted).toMatchObject({ attempts: 1, afterOffset: fatal!.offset - 1 });
    expect(halted!.error).toContain('cannot ever handle this');
    expect(calls.filter((c) => c.kind === 'fatal')).toHaveLength(1);

    // A plain WorkerError is a failing event: isolated, confirmed three times, skipped.
    await client.append('/flags/poison', itxSubscription('k', 'flags', 'skip'));
    const [poison] = await client.append('/flags/poison', { type: 'job', payload: { kind: 'poison' } });
    const skipped = await eventually(() => audits('/flags/poison'), (a) => a.length === 1, 'the skip audit');
    expect(skipped[0]!.payload).toMatchObject({ subscriptionKey: 'k', offset: poison!.offset });
    expect(calls.filter((c) => c.kind === 'poison').map((c) => c.attempt)).toEqual([1, 2, 3]);
  });
});

describe('serveWorker across a server restart', () => {
  it('registers again by itself when the server comes back on the same port and data folder; not after stop()', async () => {
    itx = await connect(t.url, { reconnect: { initialDelayMs: 10, maxDelayMs: 100 } });
    const seen: number[] = [];
    let sessions = 0;
    itx.onSession(() => void sessions++);
    const served = serveWorker(itx, 'survivor', {
      processEventBatch: (batch: ItxBatch) => void seen.push(...batch.events.map((e) => e.offset)),
    });
    await served.ready;
    await client.append('/restart/src', itxSubscription('k', 'survivor', 'halt'));
    const [before] = await client.append('/restart/src', { type: 'job' });
    await caughtUp('/restart/src', 'k');
    expect(seen).toEqual([before!.offset]);

    await t.stop();
    await t.restart();
    await eventually(() => t.server.workers.has(null, 'survivor'), (has) => has, 'the worker to register on the restarted server');
    expect(sessions).toBeGreaterThanOrEqual(2);
    expect(t.server.workers.size).toBe(1);
    const [after] = await client.append('/restart/src', { type: 'job' });
    await caughtUp('/restart/src', 'k');
    expect(seen).toEqual([before!.offset, after!.offset]);

    // stop() ends the registration; another restart does not bring it back.
    await served.stop();
    expect(t.server.workers.has(null, 'survivor')).toBe(false);
    const sessionsBefore = sessions;
    await t.stop();
    await t.restart();
    await eventually(() => sessions, (n) => n > sessionsBefore, 'the connection to reconnect');
    // The reconnect announced a session (serveWorker's listener is gone); a round trip on it
    // answers after anything that session would have registered.
    expect(await itx.root.workers.has('survivor')).toBe(false);
    expect(t.server.workers.size).toBe(0);
  });
});
