/**
 * End-to-end: a processor host that registers wakes the subscriptions waiting for it (protocol
 * §20.6), without their waiting out their backoff. The retry backoff here is far longer than the
 * test: a delivery that arrives in time can only come from the registration. On the Worker host
 * this crosses the project's hub, which tells the stream objects whose wakes it saw
 * (docs/cloudflare.md §1.4).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryAttempt } from '@rivulet/contract';
import { queryString, streamRoute } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { configured, eventually } from '../helpers/subscriptions.js';
import { assertSdkBuilt } from '../fixtures/worker-process.js';
import { foldLedger, killAllHosts, readStore, spawnProcessorHost } from '../fixtures/processor-host-process.js';

const BACKOFF_MS = 120_000;

let dir: string;
let server: TestServer;

beforeAll(async () => {
  assertSdkBuilt();
  dir = mkdtempSync(join(tmpdir(), 'rivulet-processor-registration-'));
  server = await startTestServer({ retryBaseMs: BACKOFF_MS, retryMaxMs: BACKOFF_MS, maxDeliveryAttempts: 100, deliveryTimeoutMs: 2_000 });
}, 60_000);

afterEach(async () => {
  await killAllHosts();
});

afterAll(async () => {
  await killAllHosts();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a processor host registering', () => {
  it('wakes the subscriptions that backed off for want of it, at once', async () => {
    const path = '/registration/orders';
    const dbPath = join(dir, 'host.db');
    const { api } = server;
    await api.append(
      path,
      configured({
        subscriptionKey: 'ledger',
        filter: { eventTypes: ['order'] },
        receiver: { action: 'processor-wake', expression: ['processors', ['get', 'ledger'], 'wakeStreamProcessor'] },
      }),
    );
    const [order] = await api.append(path, { type: 'order', payload: { amount: 9 } });

    // No host: the wake fails as unavailable and the row backs off far beyond this test.
    const waiting = await eventually(async () => {
      const row = (await api.state(path)).runtime?.subscriptions.ledger;
      return row?.lastError ? row : undefined;
    }, 'the failed wake');
    expect(waiting.lastError).toMatch(/no processor "ledger" is connected in this project/);
    expect(waiting.attempt).toBe(1);
    expect(waiting.nextAttemptAt! - Date.now()).toBeGreaterThan(BACKOFF_MS / 2);
    // The failed wake is in the attempt history, as an attempt at the event it was for (§22.2).
    const history = async () => {
      const res = await api.request<{ attempts: DeliveryAttempt[] }>('GET', `${streamRoute(path, 'deliveryAttempts')}${queryString({ subscriptionKey: 'ledger' })}`);
      expect(res.status, res.text).toBe(200);
      return res.body.attempts;
    };
    const [failedWake, ...none] = await history();
    expect(none).toEqual([]);
    expect(failedWake).toMatchObject({ attempt: 1, fromOffset: order!.offset, toOffset: order!.offset, outcome: 'unavailable', error: waiting.lastError });

    const started = Date.now();
    await spawnProcessorHost(server.url, { dbPath });
    const stored = await eventually(() => {
      const row = readStore(dbPath, path, 'ledger');
      return row && row.checkpoint >= order!.offset ? row : undefined;
    }, 'the host to fold the order', 15_000);
    expect(Date.now() - started).toBeLessThan(BACKOFF_MS / 2);
    expect(stored.state).toEqual(foldLedger(await api.readAll(path)));
    const row = await eventually(async () => {
      const r = (await api.state(path)).runtime?.subscriptions.ledger;
      return r?.acknowledgedOffset === order!.offset ? r : undefined;
    }, 'the subscription to acknowledge the order');
    expect(row).toMatchObject({ attempt: 0, lastError: null });
    // Then the batch the woken processor took: newest first, above the failed wake.
    const after = await history();
    expect(after.map((a) => [a.outcome, a.fromOffset, a.toOffset])).toEqual([
      ['ok', order!.offset, order!.offset],
      ['unavailable', order!.offset, order!.offset],
    ]);
    expect(after[0]!.attempt).toBe(2);
  });
});
