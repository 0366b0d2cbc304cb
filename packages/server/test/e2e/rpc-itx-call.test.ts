/**
 * End-to-end: itx-call delivery to a REAL worker process over RPC (protocol §18.4, §18.5, §12.4,
 * §12.6). The worker is test/fixtures/worker.mjs, which imports the BUILT SDK,
 * serveWorker()s a named worker, prints every batch it receives as one NDJSON line, and fails by
 * simple rules (payload.poison → WorkerError, payload.fatal → {retryable: false}, payload.outage →
 * {unavailable: true}, payload.plan → a behaviour per attempt). The suite runs after
 * `npm run build`; a missing build fails with a message saying so.
 *
 * The server runs in this process (startNodeServer); it is restarted on the same port and data
 * folder for the skips-without-success test, and the worker reconnects and re-registers by itself
 * (serveWorker). A worker that is unavailable: rpc-itx-call-unavailable.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CommittedEvent } from '@rivulet/contract';
import { startNodeServer, type RunningServer } from '../../src/hosts/node/serve.js';
import { Api } from '../helpers/http.js';
import { TEST_HOST, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import {
  EventType,
  allEvents,
  caughtUp,
  command,
  eventually,
  halted,
  lifetimeOf,
  outboundOf,
  runtimeOf,
  sampleOf,
  scrape,
} from '../helpers/subscriptions.js';
import { MAX_BATCH_BYTES, sizedJobs, storedBytes } from '../helpers/batch-bytes.js';
import { errorsOn, flat, itxCall, offsets } from '../helpers/itx-call.js';
import { assertSdkBuilt, killAllWorkers, offsetsOf, spawnWorker } from '../fixtures/worker-process.js';

/** Small knobs: halts and skips within well under a second. */
const QUICK = { retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 10, deliveryTimeoutMs: 1_000 } as const;

beforeAll(() => {
  assertSdkBuilt();
});

afterEach(async () => {
  await killAllWorkers();
});

describe('with small retry knobs', () => {
  let server: TestServer;
  let api: Api;

  beforeAll(async () => {
    server = await startTestServer(QUICK);
    api = server.api;
  });

  afterAll(async () => {
    await killAllWorkers();
    await server?.close();
  });

  it('two events of one append arrive in one awaited batch (attempt 1, the batch of protocol §18.4), transformed, and the cursor advances', async () => {
    const worker = await spawnWorker(server.url, { name: 's32-worker' });
    const src = '/s32/orders';
    const transform = '{"type": "billing/" & type, "payload": {"cents": payload.n * 100}, "metadata": {"via": "itx"}}';
    const [cfg] = await api.append(src, itxCall('bill', 's32-worker', { jsonataTransform: transform }));
    const appended = await api.append(src, [
      { type: 'job', payload: { n: 1 }, metadata: { by: 'ci' }, idempotencyKey: 'job-1' },
      { type: 'job', payload: { n: 2 } },
    ]);
    const [a, b] = appended as [CommittedEvent, CommittedEvent];

    const row = await caughtUp(api, src, 'bill');
    expect(row.acknowledgedOffset).toBe(b.offset);
    expect(row.lag).toBe(0);
    // Caught up means the one call was acknowledged: nothing else reached the worker.
    expect(offsetsOf(worker.calls)).toEqual([[a.offset, b.offset]]);
    const { streamId, streamCreatedAt } = await lifetimeOf(api, src);
    const batch = worker.calls[0]!.batch;
    expect(Object.keys(batch).sort()).toEqual(
      [
        'projectId',
        'path',
        'streamId',
        'streamCreatedAt',
        'subscriptionKey',
        'cursorChangedAtSourceOffset',
        'deliveryId',
        'attempt',
        'streamMaxOffset',
        'events',
      ].sort(),
    );
    // The transform shapes type/payload/metadata; offsets, path, createdAt (and the caller's
    // idempotency key) stay the source's.
    const coordinates = ({ type: _t, payload: _p, metadata: _m, ...rest }: CommittedEvent) => rest;
    expect(batch).toEqual({
      projectId: null,
      path: src,
      streamId,
      streamCreatedAt,
      subscriptionKey: 'bill',
      cursorChangedAtSourceOffset: cfg!.offset,
      deliveryId: `delivery:${JSON.stringify([streamId, 'bill', cfg!.offset, a.offset, b.offset])}`,
      attempt: 1,
      streamMaxOffset: b.offset,
      events: [
        { ...coordinates(a), type: 'billing/job', payload: { cents: 100 }, metadata: { via: 'itx' } },
        { ...coordinates(b), type: 'billing/job', payload: { cents: 200 }, metadata: { via: 'itx' } },
      ],
    });
    expect(batch.events[0]).toMatchObject({ path: src, offset: a.offset, createdAt: a.createdAt, idempotencyKey: 'job-1' });

    // The next append is the next batch, again attempt 1, and the cursor follows it.
    const [c] = await api.append(src, { type: 'job', payload: { n: 3 } });
    const after = await caughtUp(api, src, 'bill');
    expect(after.acknowledgedOffset).toBe(c!.offset);
    expect(offsetsOf(worker.calls)).toEqual([[a.offset, b.offset], [c!.offset]]);
    expect(worker.calls[1]!.batch).toMatchObject({
      attempt: 1,
      streamMaxOffset: c!.offset,
      deliveryId: `delivery:${JSON.stringify([streamId, 'bill', cfg!.offset, c!.offset, c!.offset])}`,
    });
    // Delivery metrics live in each stream's Durable Object on the Worker host (docs/cloudflare.md §4.2).
    if (TEST_HOST === 'node') expect(sampleOf(await scrape(api), 'rivulet_deliveries_total', { action: 'itx-call', outcome: 'ok' })).toBeGreaterThanOrEqual(2);
  });

  it('a backlog reaches the worker in batches of at most 1000 events: the 1000th closes a batch, the 1001st opens the next (protocol §12.3)', async () => {
    const worker = await spawnWorker(server.url, { name: 'batch-worker' });
    const src = '/s32/backlog';
    const jobs = await api.append(
      src,
      Array.from({ length: 1001 }, (_, n) => ({ type: 'job', payload: { n } })),
    );
    const [cfg] = await api.append(src, itxCall('big', 'batch-worker', { start: 'beginning' }));
    // Caught up past the configure event, which the filter leaves out.
    expect((await caughtUp(api, src, 'big', 15_000)).acknowledgedOffset).toBe(cfg!.offset);
    await worker.waitForEvents(jobs.length);
    expect(offsetsOf(worker.calls)).toEqual([offsets(jobs.slice(0, 1000)), [jobs[1000]!.offset]]);
  });

  /**
   * A backlog of jobs whose stored texts are `lengths` UTF-8 bytes long (helpers/batch-bytes.ts; `wide`: padded with 2-byte characters), checked on the
   * events as read back, delivered from the beginning to a worker: answers the jobs and the offsets
   * of each batch the worker received.
   */
  async function workerBatchesOf(src: string, name: string, lengths: number[], wide = false): Promise<{ jobs: CommittedEvent[]; batches: number[][] }> {
    const worker = await spawnWorker(server.url, { name });
    const jobs = await api.append(src, sizedJobs(src, 2, lengths, wide));
    const stored = (await allEvents(api, src)).filter((e) => e.type === 'job');
    expect(stored.map(storedBytes)).toEqual(lengths);
    const [cfg] = await api.append(src, itxCall('bytes', name, { start: 'beginning' }));
    expect((await caughtUp(api, src, 'bytes', 15_000)).acknowledgedOffset).toBe(cfg!.offset);
    await worker.waitForEvents(lengths.length, 15_000);
    // The worker got the events as stored, every one once (compared by offset and length: a diff of
    // megabytes says nothing).
    const got = worker.calls.flatMap((call) => call.batch.events);
    expect(got.map((e) => [e.offset, storedBytes(e)])).toEqual(stored.map((e) => [e.offset, storedBytes(e)]));
    return { jobs, batches: offsetsOf(worker.calls) };
  }

  it('a batch holds 1 MiB of stored event JSON: four events of exactly 1,048,576 bytes reach the worker in one batch, the next event in the next (protocol §12.3)', async () => {
    const quarter = MAX_BATCH_BYTES / 4;
    const { jobs, batches } = await workerBatchesOf('/s32/bytes-at', 'bytes-at-worker', [quarter, quarter, quarter, quarter, 1000]);
    expect(batches).toEqual([offsets(jobs.slice(0, 4)), [jobs[4]!.offset]]);
  });

  it('one byte past 1 MiB: the event that would take a batch over it opens the next batch the worker receives (protocol §12.3)', async () => {
    const quarter = MAX_BATCH_BYTES / 4;
    const { jobs, batches } = await workerBatchesOf('/s32/bytes-past', 'bytes-past-worker', [quarter, quarter, quarter, quarter + 1, 1000]);
    expect(batches).toEqual([offsets(jobs.slice(0, 3)), offsets(jobs.slice(3))]);
  });

  it('the bound is in UTF-8 bytes, not characters: events of 2-byte characters split at 1 MiB of bytes, where their characters come to about half of it (protocol §12.3)', async () => {
    const quarter = MAX_BATCH_BYTES / 4;
    const { jobs, batches } = await workerBatchesOf('/s32/bytes-wide', 'bytes-wide-worker', [quarter, quarter, quarter, quarter + 1, 1000], true);
    const characters = (await allEvents(api, '/s32/bytes-wide')).filter((e) => e.type === 'job').reduce((n, e) => n + JSON.stringify(e).length, 0);
    expect(characters).toBeLessThan(MAX_BATCH_BYTES * 0.6);
    expect(batches).toEqual([offsets(jobs.slice(0, 3)), offsets(jobs.slice(3))]);
  });

  it('with skip: one multi-event attempt, then exactly three single-event attempts of the poison event, an error-occurred naming its offset, and later events flow', async () => {
    const worker = await spawnWorker(server.url, { name: 's33-worker' });
    const src = '/s33/jobs';
    await api.append(src, itxCall('skipper', 's33-worker', { onFailingEvent: 'skip' }));
    const [poison, b, c] = (await api.append(src, [
      { type: 'job', payload: { n: 1, poison: true } },
      { type: 'job', payload: { n: 2 } },
      { type: 'job', payload: { n: 3 } },
    ])) as [CommittedEvent, CommittedEvent, CommittedEvent];

    await caughtUp(api, src, 'skipper');
    expect(offsetsOf(worker.calls)).toEqual([
      [poison.offset, b.offset, c.offset],
      [poison.offset],
      [poison.offset],
      [poison.offset],
      [b.offset],
      [c.offset],
    ]);
    expect(worker.calls.map((call) => call.behaviour)).toEqual(['fail', 'fail', 'fail', 'fail', 'ok', 'ok']);
    // attempt counts consecutive failures: 1 for the batch, 2..4 for the confirmations; after the
    // skip the ladder starts over.
    expect(worker.calls.map((call) => call.batch.attempt)).toEqual([1, 2, 3, 4, 1, 1]);

    const audits = await errorsOn(api, src);
    expect(audits).toHaveLength(1);
    expect(audits[0]!.payload).toMatchObject({ subscriptionKey: 'skipper', offset: poison.offset });
    expect(String(audits[0]!.payload!.message)).toContain(`offset ${poison.offset}`);
    expect(String(audits[0]!.payload!.error)).toContain('poison');
    expect((await outboundOf(api, src, 'skipper'))?.deliveryHalted).toBeUndefined();

    // Later events flow again in one batch.
    const later = await api.append(src, [{ type: 'job', payload: { n: 4 } }, { type: 'job', payload: { n: 5 } }]);
    await caughtUp(api, src, 'skipper');
    expect(offsetsOf(worker.calls.slice(6))).toEqual([offsets(later)]);
    expect(worker.calls[6]!.batch.attempt).toBe(1);
    expect(await errorsOn(api, src)).toHaveLength(1);
  });

  it('an error marked retryable: false halts at once (attempts 1), even with onFailingEvent "skip"; setSubscriptionCursorAndResume goes on', async () => {
    const worker = await spawnWorker(server.url, { name: 'fatal-worker' });
    const src = '/fatal/jobs';
    await api.append(src, itxCall('fatal', 'fatal-worker', { onFailingEvent: 'skip' }));
    const [bad] = await api.append(src, { type: 'job', payload: { fatal: true } });

    const entry = await halted(api, src, 'fatal');
    expect(entry.deliveryHalted).toMatchObject({ reason: 'delivery-failed', afterOffset: bad!.offset - 1, attempts: 1 });
    expect(entry.deliveryHalted!.error).toContain('fatal');
    expect(offsetsOf(worker.calls)).toEqual([[bad!.offset]]);
    expect(await errorsOn(api, src)).toHaveLength(0);

    const res = await command(api, src, 'setSubscriptionCursorAndResume', { subscriptionKey: 'fatal', afterOffset: bad!.offset });
    expect(res.status, res.text).toBe(200);
    const [good] = await api.append(src, { type: 'job', payload: { n: 2 } });
    await caughtUp(api, src, 'fatal');
    expect(offsetsOf(worker.calls)).toEqual([[bad!.offset], [good!.offset]]);
  });

  it('an error marked unavailable: true backs off without counting towards a skip, and the event is delivered once it passes', async () => {
    const worker = await spawnWorker(server.url, { name: 'outage-worker' });
    const src = '/outage/jobs';
    await api.append(src, itxCall('dep', 'outage-worker', { onFailingEvent: 'skip' }));
    const before = sampleOf(await scrape(api), 'rivulet_deliveries_total', { action: 'itx-call', outcome: 'unavailable' }) ?? 0;
    // Five unavailable answers in a row: with "skip", three failing ones would have skipped it.
    const [event] = await api.append(src, { type: 'job', payload: { plan: ['outage', 'outage', 'outage', 'outage', 'outage'] } });

    await caughtUp(api, src, 'dep');
    expect(worker.calls.map((c) => c.behaviour)).toEqual(['outage', 'outage', 'outage', 'outage', 'outage', 'ok']);
    expect(worker.calls.map((c) => c.batch.attempt)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(flat(worker.calls)).toEqual(Array(6).fill(event!.offset));
    expect(await errorsOn(api, src)).toHaveLength(0);
    expect((await outboundOf(api, src, 'dep'))?.deliveryHalted).toBeUndefined();
    const after = sampleOf(await scrape(api), 'rivulet_deliveries_total', { action: 'itx-call', outcome: 'unavailable' }) ?? 0;
    if (TEST_HOST === 'node') expect(after - before).toBe(5);
  });

  it('a call that outlives deliveryTimeoutMs is unavailable: after two failing attempts the timed-out third does not confirm a skip', async () => {
    const worker = await spawnWorker(server.url, { name: 'slow-worker' });
    const src = '/timeout/jobs';
    await api.append(src, itxCall('slow', 'slow-worker', { onFailingEvent: 'skip' }));
    const [event] = await api.append(src, { type: 'job', payload: { plan: ['fail', 'fail', 'hang'] } });
    await caughtUp(api, src, 'slow', 10_000);
    expect(worker.calls.map((c) => [c.behaviour, c.batch.attempt])).toEqual([
      ['fail', 1],
      ['fail', 2],
      ['hang', 3],
      ['ok', 4],
    ]);
    expect(flat(worker.calls)).toEqual(Array(4).fill(event!.offset));
    expect(await errorsOn(api, src)).toHaveLength(0);
  });

  it('a plain (non-WorkerError) failure counts as a failing event: with "halt" it halts after maxDeliveryAttempts', async () => {
    const worker = await spawnWorker(server.url, { name: 'plain-worker' });
    const src = '/plain/jobs';
    await api.append(src, itxCall('plain', 'plain-worker'));
    const [event] = await api.append(src, { type: 'job', payload: { plain: true } });
    const entry = await halted(api, src, 'plain');
    expect(entry.deliveryHalted).toMatchObject({ afterOffset: event!.offset - 1, attempts: QUICK.maxDeliveryAttempts });
    expect(entry.deliveryHalted!.error).toContain('plain');
    expect(worker.calls).toHaveLength(QUICK.maxDeliveryAttempts);
  });
});

describe('the skips-without-success count', () => {
  it('after two skips with no success between, the third failing event halts instead — across a server restart — and setSubscriptionCursorAndResume recovers', async () => {
    const { dir, remove } = await tempDir('rivulet-s34-');
    const internal: string[] = [];
    const logger = { error: (message: string, error: unknown) => internal.push(`${message}: ${String(error)}`) };
    let server: RunningServer | undefined;
    try {
      server = await startNodeServer({ host: '127.0.0.1', port: 0, data: dir, logger, ...QUICK });
      const port = server.port;
      let api = new Api(server.url);
      const worker = await spawnWorker(server.url, { name: 's34-worker' });
      const src = '/s34/jobs';
      await api.append(src, itxCall('twice', 's34-worker', { onFailingEvent: 'skip' }));
      const [p1, p2] = (await api.append(src, [
        { type: 'job', payload: { n: 1, poison: true } },
        { type: 'job', payload: { n: 2, poison: true } },
      ])) as [CommittedEvent, CommittedEvent];

      // Two skips, no success in between.
      const audits = await eventually(async () => {
        const found = await errorsOn(api, src);
        return found.length >= 2 ? found : undefined;
      }, 'two skip audits');
      expect(audits.map((a) => a.payload!.offset)).toEqual([p1.offset, p2.offset]);
      await eventually(async () => {
        const row = await runtimeOf(api, src, 'twice');
        // Past the second skipped event (and the audits after it, which the filter passes over).
        return row && row.acknowledgedOffset > p2.offset && row.lag === 0 && row.inFlightDeadlineAt === null && row.attempt === 0 ? row : undefined;
      }, 'the cursor past the second skipped event');
      expect(offsetsOf(worker.calls)).toEqual([[p1.offset, p2.offset], [p1.offset], [p1.offset], [p1.offset], [p2.offset], [p2.offset], [p2.offset]]);

      // Restart the server on the same data folder and port; the worker reconnects by itself.
      await server.close();
      server = await startNodeServer({ host: '127.0.0.1', port, data: dir, logger, ...QUICK });
      api = new Api(server.url);
      await worker.waitForSessions(2);
      const restarted = server;
      await eventually(() => restarted.workers.has(null, 's34-worker'), 'the worker registered again after the restart');

      // The third failing event in a row halts instead of being skipped: the count was stored.
      const callsBefore = worker.calls.length;
      const [p3] = await api.append(src, { type: 'job', payload: { n: 3, poison: true } });
      const entry = await halted(api, src, 'twice');
      expect(entry.deliveryHalted).toMatchObject({ reason: 'delivery-failed', afterOffset: p3!.offset - 1, attempts: 3 });
      expect(offsetsOf(worker.calls.slice(callsBefore))).toEqual([[p3!.offset], [p3!.offset], [p3!.offset]]);
      expect((await errorsOn(api, src)).map((a) => a.payload!.offset)).toEqual([p1.offset, p2.offset]);

      // setSubscriptionCursorAndResume past it recovers; the next event is delivered.
      const res = await command(api, src, 'setSubscriptionCursorAndResume', { subscriptionKey: 'twice', afterOffset: p3!.offset });
      expect(res.status, res.text).toBe(200);
      expect((res.body as { resumed: CommittedEvent | null }).resumed?.type).toBe(EventType.subscriptionDeliveryResumed);
      const [ok] = await api.append(src, { type: 'job', payload: { n: 4 } });
      const row = await caughtUp(api, src, 'twice');
      expect(row.acknowledgedOffset).toBe(ok!.offset);
      expect(offsetsOf(worker.calls.slice(callsBefore + 3))).toEqual([[ok!.offset]]);
      expect(internal).toEqual([]);
    } finally {
      await killAllWorkers();
      await server?.close();
      await remove();
    }
  });
});
