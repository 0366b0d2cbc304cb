/**
 * End-to-end: itx-call delivery to a REAL worker process over RPC while the worker is unavailable
 * (protocol §12.4, §12.6, §18.5): one that never connected, one killed while idle and one killed
 * with SIGKILL in the middle of a call back off without confirming a skip, and every event arrives
 * once the worker is back. The worker is test/fixtures/worker.mjs (see rpc-itx-call.test.ts); the
 * suite runs after `npm run build`; a missing build fails with a message saying so.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Api } from '../helpers/http.js';
import { TEST_HOST, startTestServer, type TestServer } from '../helpers/server.js';
import { caughtUp, eventually, outboundOf, runtimeOf, sampleOf, scrape } from '../helpers/subscriptions.js';
import { errorsOn, flat, itxCall, offsets } from '../helpers/itx-call.js';
import { assertSdkBuilt, killAllWorkers, spawnWorker } from '../fixtures/worker-process.js';

/** An outage may last many attempts without halting: 200 attempts of at most 50 ms. */
const LONG = { retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 200, deliveryTimeoutMs: 1_000 } as const;

beforeAll(() => {
  assertSdkBuilt();
});

afterEach(async () => {
  await killAllWorkers();
});

describe('an unavailable worker (long ladder)', () => {
  let server: TestServer;
  let api: Api;

  beforeAll(async () => {
    server = await startTestServer(LONG);
    api = server.api;
  });

  afterAll(async () => {
    await killAllWorkers();
    await server?.close();
  });

  /** Waits until `key` has failed at least `n` times in a row with a "not connected" error. */
  const unavailableFor = (src: string, key: string, worker: string, n: number) =>
    eventually(
      async () => {
        const row = await runtimeOf(api, src, key);
        return row && row.attempt >= n && new RegExp(`no worker "${worker}" is connected`).test(row.lastError ?? '') ? row : undefined;
      },
      `${src} "${key}" to fail ${n} times with "not connected"`,
    );

  it('a worker that never connected is unavailable: attempts grow beyond 3, no skip audit even with "skip", and every event arrives once, in order, when it starts', async () => {
    const src = '/s35/never';
    await api.append(src, itxCall('later', 's35-late'));
    await api.append(src, itxCall('later-skip', 's35-late-skip', { onFailingEvent: 'skip' }));
    const first = await api.append(src, [
      { type: 'job', payload: { n: 1 } },
      { type: 'job', payload: { n: 2 } },
      { type: 'job', payload: { n: 3 } },
    ]);
    await unavailableFor(src, 'later', 's35-late', 5);
    const row = await unavailableFor(src, 'later-skip', 's35-late-skip', 5);
    expect(row.acknowledgedOffset).toBe(first[0]!.offset - 1);
    const more = await api.append(src, { type: 'job', payload: { n: 4 } });
    expect(await errorsOn(api, src)).toHaveLength(0);
    expect((await outboundOf(api, src, 'later-skip'))?.deliveryHalted).toBeUndefined();

    const late = await spawnWorker(server.url, { name: 's35-late' });
    const lateSkip = await spawnWorker(server.url, { name: 's35-late-skip' });
    await caughtUp(api, src, 'later');
    await caughtUp(api, src, 'later-skip');
    const expected = offsets([...first, ...more]);
    expect(flat(late.calls)).toEqual(expected);
    expect(flat(lateSkip.calls)).toEqual(expected);
    // The ladder went on while nobody was there: the first call is a late attempt.
    expect(late.calls[0]!.batch.attempt).toBeGreaterThan(5);
    expect(await errorsOn(api, src)).toHaveLength(0);
  });

  it('a worker killed while idle: its registration ends, deliveries back off as "not connected" (never skipped), and a new worker process receives every later event once, in order', async () => {
    const src = '/s35/killed';
    const first = await spawnWorker(server.url, { name: 's35-killed' });
    await api.append(src, itxCall('k', 's35-killed', { onFailingEvent: 'skip' }));
    const [e1] = await api.append(src, { type: 'job', payload: { n: 1 } });
    await caughtUp(api, src, 'k');
    expect(flat(first.calls)).toEqual([e1!.offset]);

    await first.kill('SIGKILL');
    // The Worker host's registrations live in the project's hub object, out of the test's reach.
    if (TEST_HOST === 'node') await eventually(() => !server.server.workers.has(null, 's35-killed'), 'the registration to end with the killed session');
    const down = await api.append(src, [
      { type: 'job', payload: { n: 2 } },
      { type: 'job', payload: { n: 3 } },
    ]);
    await unavailableFor(src, 'k', 's35-killed', 5);
    const down2 = await api.append(src, { type: 'job', payload: { n: 4 } });
    expect(await errorsOn(api, src)).toHaveLength(0);

    const second = await spawnWorker(server.url, { name: 's35-killed' });
    await caughtUp(api, src, 'k');
    expect(flat(second.calls)).toEqual(offsets([...down, ...down2]));
    expect(flat(first.calls)).toEqual([e1!.offset]);
    expect(await errorsOn(api, src)).toHaveLength(0);
  });

  it('a worker killed with SIGKILL in the middle of a call counts as unavailable: two failing attempts plus the killed one do not confirm a skip', async () => {
    const src = '/killed/mid-call';
    const worker = await spawnWorker(server.url, { name: 'mid-call' });
    await api.append(src, itxCall('mid', 'mid-call', { onFailingEvent: 'skip' }));
    const metrics = await scrape(api);
    const failingBefore = sampleOf(metrics, 'rivulet_deliveries_total', { action: 'itx-call', outcome: 'failing' }) ?? 0;
    const unavailableBefore = sampleOf(metrics, 'rivulet_deliveries_total', { action: 'itx-call', outcome: 'unavailable' }) ?? 0;
    // Attempts 1 and 2 fail (two confirmations of this single event), attempt 3 never answers.
    const [event] = await api.append(src, { type: 'job', payload: { plan: ['fail', 'fail', 'hang'] } });
    await worker.waitForCalls(3);
    expect(worker.calls.map((c) => c.behaviour)).toEqual(['fail', 'fail', 'hang']);
    await worker.kill('SIGKILL');

    // The killed call is unavailable (had it counted as failing, it would be the third
    // confirmation and the event would be skipped now).
    await unavailableFor(src, 'mid', 'mid-call', 5);
    const after = await scrape(api);
    if (TEST_HOST === 'node') {
      expect((sampleOf(after, 'rivulet_deliveries_total', { action: 'itx-call', outcome: 'failing' }) ?? 0) - failingBefore).toBe(2);
      expect((sampleOf(after, 'rivulet_deliveries_total', { action: 'itx-call', outcome: 'unavailable' }) ?? 0) - unavailableBefore).toBeGreaterThanOrEqual(3);
    }
    expect(await errorsOn(api, src)).toHaveLength(0);

    // A new process of the worker gets the event (a later attempt: the plan says "ok").
    const again = await spawnWorker(server.url, { name: 'mid-call' });
    await caughtUp(api, src, 'mid');
    expect(flat(again.calls)).toEqual([event!.offset]);
    expect(again.calls[0]!.batch.attempt).toBeGreaterThan(3);
    expect(await errorsOn(api, src)).toHaveLength(0);
  });
});
