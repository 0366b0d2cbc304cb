/**
 * End-to-end late results of a superseded run, for itx-call (protocol §12.1, §12.4): a delivery
 * belongs to its run
 * (configuration + cursor-set). With an in-process worker over real RPC (serveWorker in this
 * process) whose handler holds calls until the test releases them:
 * - an old in-flight failure cannot delay or fail a same-key replacement;
 * - an old in-flight success cannot overwrite a newer cursor seek.
 *
 * The retry base is 30 s, so a failure wrongly applied to the new run would show as a backoff
 * that holds the next event far beyond the test's deadlines. The delivery timeout is 15 s, so held
 * calls do not time out meanwhile.
 *
 * Synchronisation: calls from the server and answers from the worker travel in order over one
 * WebSocket, and the server handles an answer with promise continuations only. So once a later
 * round trip on the worker's connection (`workers.has`) has come back, the server has finished
 * handling an answer the worker sent before it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, serveWorker, WorkerError, type ItxBatch, type ItxConnection } from '@rivulet/client';
import type { CommittedEvent } from '@rivulet/contract';
import type { Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { caughtUp, command, configured, eventually, outboundOf, runtimeOf } from '../helpers/subscriptions.js';
import { deferred, type Deferred } from '../fixtures/rpc-helpers.js';

const KNOBS = { retryBaseMs: 30_000, retryMaxMs: 60_000, maxDeliveryAttempts: 5, deliveryTimeoutMs: 15_000 } as const;
const WORKER = 'runs';

interface Call {
  batch: ItxBatch;
  offsets: number[];
}

let server: TestServer;
let api: Api;
let itx: ItxConnection;
const calls: Call[] = [];
/** Per run (cursorChangedAtSourceOffset): how the next calls of that run are answered. */
const plans = new Map<number, Deferred<unknown>[]>();

function itxCall(key: string, description: string, start: 'beginning' | 'now') {
  return configured({
    subscriptionKey: key,
    description,
    filter: { eventTypes: ['job'] },
    receiver: { action: 'itx-call', expression: ['workers', ['get', WORKER], 'processEventBatch'], delivery: { start, onFailingEvent: 'halt' } },
  });
}

/** The next call of run `generation` is held until the returned deferred is settled. */
function hold(generation: number): Deferred<unknown> {
  const d = deferred<unknown>();
  const list = plans.get(generation) ?? [];
  list.push(d);
  plans.set(generation, list);
  return d;
}

async function waitForCall(path: string, generation: number, offsets: number[]): Promise<Call> {
  return eventually(
    () => calls.find((c) => c.batch.path === path && c.batch.cursorChangedAtSourceOffset === generation && JSON.stringify(c.offsets) === JSON.stringify(offsets)),
    `a call of run ${generation} on ${path} with offsets ${JSON.stringify(offsets)}`,
  );
}

/** One round trip on the worker's own connection (see the note at the top). */
async function flushWorkerConnection(): Promise<void> {
  await itx.root.workers.has('flush');
}

const offsetsOf = (events: readonly CommittedEvent[]) => events.map((e) => e.offset);

beforeAll(async () => {
  server = await startTestServer(KNOBS);
  api = server.api;
  itx = await connect(server.url);
  const served = serveWorker(itx, WORKER, {
    processEventBatch: (batch) => {
      calls.push({ batch, offsets: batch.events.map((e) => e.offset) });
      const planned = plans.get(batch.cursorChangedAtSourceOffset)?.shift();
      return planned ? planned.promise : { ok: true };
    },
  });
  await served.ready;
});

afterAll(async () => {
  // Release anything still held so no call outlives the suite.
  for (const list of plans.values()) for (const d of list) d.resolve({ ok: true });
  itx?.close();
  await server?.close();
});

describe('an old in-flight delivery belongs to its run', () => {
  for (const [label, failure] of [
    ['a retryable failure (which would back off 30 s)', () => new WorkerError('old run failed')],
    ['a failure marked retryable: false (which would halt)', () => new WorkerError('old run failed for good', { retryable: false })],
  ] as const) {
    it(`an old in-flight failure — ${label} — cannot delay or fail a same-key replacement`, async () => {
      const src = `/s39/replace/${label.includes('retryable: false') ? 'fatal' : 'retry'}`;
      const [v1] = await api.append(src, itxCall('k', 'v1', 'now'));
      const held = hold(v1!.offset);
      const [e1] = await api.append(src, { type: 'job', payload: { n: 1 } });
      await waitForCall(src, v1!.offset, [e1!.offset]);

      // Replace the key while the old call is held: a new run from the beginning.
      const [v2] = await api.append(src, itxCall('k', 'v2', 'beginning'));
      // Not delayed: the new run delivers while the old call is still in flight.
      await waitForCall(src, v2!.offset, [e1!.offset]);
      await caughtUp(api, src, 'k');

      // The old call fails now; its outcome belongs to a superseded run.
      held.reject(failure());
      await flushWorkerConnection();
      const row = await runtimeOf(api, src, 'k');
      expect(row).toMatchObject({ attempt: 0, nextAttemptAt: null, lastError: null, inFlightDeadlineAt: null, lag: 0 });
      expect((await outboundOf(api, src, 'k'))?.deliveryHalted).toBeUndefined();

      // And the next event flows at once (a 30 s backoff or a halt would hold it).
      const [e2] = await api.append(src, { type: 'job', payload: { n: 2 } });
      await waitForCall(src, v2!.offset, [e2!.offset]);
      const after = await caughtUp(api, src, 'k');
      expect(after.acknowledgedOffset).toBe(e2!.offset);
      expect((await outboundOf(api, src, 'k'))?.deliveryHalted).toBeUndefined();
      expect(server.internalErrors).toEqual([]);
    });
  }

  it('an old in-flight success cannot overwrite a newer cursor seek (setSubscriptionCursor while the call is held)', async () => {
    const src = '/s39/seek';
    const [cfg] = await api.append(src, itxCall('s', 'seek', 'now'));
    const oldCall = hold(cfg!.offset);
    const jobs = await api.append(src, [1, 2, 3, 4].map((n) => ({ type: 'job', payload: { n } })));
    const [j1] = jobs;
    await waitForCall(src, cfg!.offset, offsetsOf(jobs));

    // Seek back while the old call is held: a new run replays from after j1. Hold its call too,
    // so that the cursor stays at the seek while the old success comes back.
    const res = await command(api, src, 'setSubscriptionCursor', { subscriptionKey: 's', afterOffset: j1!.offset });
    expect(res.status, res.text).toBe(200);
    const seek = (res.body as { event: CommittedEvent }).event;
    const newCall = hold(seek.offset);
    const replay = offsetsOf(jobs.slice(1));
    await waitForCall(src, seek.offset, replay);

    oldCall.resolve({ ok: true });
    await flushWorkerConnection();
    const row = await runtimeOf(api, src, 's');
    // The old run's success (through j4) did not move the new run's cursor.
    expect(row?.acknowledgedOffset).toBe(j1!.offset);
    expect(row?.inFlightDeadlineAt).not.toBeNull();

    // The new run completes and owns the cursor.
    newCall.resolve({ ok: true });
    const done = await caughtUp(api, src, 's');
    expect(done.acknowledgedOffset).toBeGreaterThanOrEqual(jobs[3]!.offset);
    // The replayed events reached the worker once more, on purpose (a new run).
    const forSrc = calls.filter((c) => c.batch.path === src);
    expect(forSrc.map((c) => [c.batch.cursorChangedAtSourceOffset, c.offsets])).toEqual([
      [cfg!.offset, offsetsOf(jobs)],
      [seek.offset, replay],
    ]);
    expect(server.internalErrors).toEqual([]);
  });
});
