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
  });
});
