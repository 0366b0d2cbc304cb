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
 * Holding a call: the server starts a run's first delivery as soon as the command that starts the
 * run commits, at the same time as it answers that command; nothing orders the worker's call
 * before or after the test reads the answer (on Node 24 the call often came first). So a hold is
 * planned before the command that starts the run, by path and by which run it is for, never by an
 * offset only the command's answer tells. The seek test forces the order that broke the earlier
 * form of this test: it reads the seek's answer only once the new run's call has reached the worker.
 *
 * Synchronisation: calls from the server and answers from the worker travel in order over one
 * WebSocket, and the server handles an answer with promise continuations only. So once a later
 * round trip on the worker's connection (`workers.has`) has come back, the server has finished
 * handling an answer the worker sent before it. On the Worker host the answer reaches the project's
 * hub object, which hands it back to the stream object before it answers the round trip; the
 * runtime read that follows is a later request to that stream object.
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
/** Calls to hold, in the order planned: the first plan a call matches answers it. */
interface Plan {
  path: string;
  run(cursorChangedAtSourceOffset: number): boolean;
  answer: Deferred<unknown>;
}
const plans: Plan[] = [];

function itxCall(key: string, description: string, start: 'beginning' | 'now') {
  return configured({
    subscriptionKey: key,
    description,
    filter: { eventTypes: ['job'] },
    receiver: { action: 'itx-call', expression: ['workers', ['get', WORKER], 'processEventBatch'], delivery: { start, onFailingEvent: 'halt' } },
  });
}

/**
 * The next call on `path` of a run `run` accepts (by its cursorChangedAtSourceOffset) is held until
 * the returned deferred is settled. Plan it before whatever starts that call (see the note at the top).
 */
function hold(path: string, run: (cursorChangedAtSourceOffset: number) => boolean): Deferred<unknown> {
  const answer = deferred<unknown>();
  plans.push({ path, run, answer });
  return answer;
}

const runOf = (generation: number) => (run: number) => run === generation;

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
      const at = plans.findIndex((p) => p.path === batch.path && p.run(batch.cursorChangedAtSourceOffset));
      if (at < 0) return { ok: true };
      const [plan] = plans.splice(at, 1);
      return plan!.answer.promise;
    },
  });
  await served.ready;
});

afterAll(async () => {
  // Release anything still held so no call outlives the suite.
  for (const plan of plans.splice(0)) plan.answer.resolve({ ok: true });
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
      const held = hold(src, runOf(v1!.offset));
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
    const oldCall = hold(src, runOf(cfg!.offset));
    const jobs = await api.append(src, [1, 2, 3, 4].map((n) => ({ type: 'job', payload: { n } })));
    const [j1] = jobs;
    await waitForCall(src, cfg!.offset, offsetsOf(jobs));

    // Seek back while the old call is held: a new run replays from after j1. Its call is held too,
    // so that the cursor stays at the seek while the old success comes back; the hold is planned
    // before the seek, for whichever run is not the old one.
    const newCall = hold(src, (run) => run !== cfg!.offset);
    const seeking = command(api, src, 'setSubscriptionCursor', { subscriptionKey: 's', afterOffset: j1!.offset });
    // The new run's call reaches the worker before the test reads the seek's answer.
    const first = await eventually(
      () => calls.find((c) => c.batch.path === src && c.batch.cursorChangedAtSourceOffset !== cfg!.offset),
      `the new run's call on ${src}`,
    );
    const res = await seeking;
    expect(res.status, res.text).toBe(200);
    const seek = (res.body as { event: CommittedEvent }).event;
    const replay = offsetsOf(jobs.slice(1));
    expect([first.batch.cursorChangedAtSourceOffset, first.offsets]).toEqual([seek.offset, replay]);

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
