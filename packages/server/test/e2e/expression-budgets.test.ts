/**
 * End-to-end over real HTTP: hostile JSONata expressions (protocol §16.8) neither stall nor crash the
 * server (protocol §16.8). While one runs, a plain append on another stream is answered within
 * 50 ms; a budget overrun is INVALID_INPUT at configure time when it can be seen, else an error
 * answer (waitForEvent) or a delivery failure that halts through the retry ladder (subscriptions);
 * and a server restarted with such a stored subscription answers appends promptly.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startNodeServer, type RunningServer } from '../../src/hosts/node/serve.js';
import { Api } from '../helpers/http.js';
import { TEST_HOST, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { command, eventually, halted, runtimeOf, subscribe } from '../helpers/subscriptions.js';

const QUICK = { retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 3, deliveryTimeoutMs: 5_000, durability: 'relaxed' as const };
/** Within the sequence cap, so no static check sees them: they run until a budget stops them. */
const SLOW = '$reduce([1..$number("30000")], function($a,$b){$a+$b}) > 0';
const HUNGRY = '$count([1..$number("39999")].[1..50]) > 0';
const BUDGET_ERROR = /expression exceeded its (time|memory) budget/;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function started(): Promise<TestServer> {
  const server = await startTestServer(QUICK);
  cleanups.push(() => server.close());
  return server;
}

/** The slowest of the appends on `path` made one after another while `busy` is unsettled. */
async function slowestAppendWhile(api: Api, path: string, busy: Promise<unknown>): Promise<number> {
  let settled = false;
  void busy.finally(() => (settled = true));
  let slowest = 0;
  for (let i = 0; i < 8 && !settled; i++) {
    const t0 = performance.now();
    const res = await api.post(path, { type: 'ping', payload: { i } });
    slowest = Math.max(slowest, performance.now() - t0);
    expect(res.status).toBe(200);
  }
  return slowest;
}

/**
 * The best of three rounds of `round` (each answering its slowest append). A stall is the same in
 * every round; a busy test machine delays a round now and then, rarely all three.
 */
async function bestOf(round: (n: number) => Promise<number>): Promise<number> {
  let best = Infinity;
  for (let n = 0; n < 3 && best >= 50; n++) best = Math.min(best, await round(n));
  return best;
}

describe('waitForEvent with a hostile condition', () => {
  it('the reported $reduce over a literal range is INVALID_INPUT at once, not a stall answered 200', async () => {
    const { api } = await started();
    await api.append('/budget/x', { type: 'job' });
    const t0 = performance.now();
    const res = await command(api, '/budget/x', 'waitForEvent', {
      afterOffset: 0,
      timeoutMs: 1000,
      jsonataCondition: '$reduce([1..2000000], function($a,$b){$a+$b}) > 0',
    });
    expect(res.status).toBe(400);
    expect(res.text).toContain('exceeds the expression budget');
    expect(performance.now() - t0).toBeLessThan(500);
  });

  it('a condition stopped by its time budget answers INVALID_INPUT naming it; appends elsewhere stay prompt', async () => {
    const { api } = await started();
    await api.append('/budget/y', { type: 'warm-up' });
    await api.append('/budget/x', { type: 'job' });
    const answers: Promise<{ status: number; body: unknown }>[] = [];
    const slowest = await bestOf((n) => {
      const waiting = command(api, '/budget/x', 'waitForEvent', { afterOffset: n, timeoutMs: 3000, jsonataCondition: SLOW });
      answers.push(waiting);
      return slowestAppendWhile(api, '/budget/y', waiting);
    });
    expect(slowest).toBeLessThan(50);
    for (const res of await Promise.all(answers)) {
      expect(res.status).toBe(400);
      expect((res.body as { error: { code: string; message: string } }).error).toMatchObject({
        code: 'INVALID_INPUT',
        message: expect.stringMatching(/expression exceeded its time budget/),
      });
    }
  });
});

describe('a subscription with a hostile condition', () => {
  it('the reported $count over a literal range is refused when configured', async () => {
    const { api } = await started();
    const res = await command(api, '/budget/recv', 'subscribeToEventsFrom', {
      sourceStreamPath: '/budget/src',
      subscriptionKey: 'k',
      filter: { jsonataCondition: '$count([1..9999999].[1..50]) > 0' },
    });
    expect(res.status).toBe(400);
    expect((res.body as { error: { code: string } }).error.code).toBe('INVALID_INPUT');
  });

  it.each([
    ['condition', { filter: { jsonataCondition: HUNGRY } }],
    ['transform', { jsonataTransform: `{"payload": {"n": ${SLOW}}}` }],
  ])('a %s that overruns its budget fails the delivery and halts; appends elsewhere stay prompt', async (_name, shape) => {
    const { api } = await started();
    await api.append('/budget/other', { type: 'warm-up' });
    const slowest = await bestOf(async (n) => {
      const src = `/budget/src${n}`;
      await subscribe(api, '/budget/recv', { sourceStreamPath: src, subscriptionKey: 'k', delivery: { start: 'beginning' }, ...shape });
      await api.append(src, { type: 'job', payload: { n: 1 } });
      const halt = halted(api, src, 'k', 10_000);
      const ms = await slowestAppendWhile(api, '/budget/other', halt);
      const entry = await halt;
      expect(entry.deliveryHalted?.error).toMatch(BUDGET_ERROR);
      expect((await runtimeOf(api, src, 'k'))?.lastError).toMatch(BUDGET_ERROR);
      return ms;
    });
    expect(slowest).toBeLessThan(50);
  });
});

describe.skipIf(TEST_HOST === 'worker')('a restart with a hostile subscription stored', () => {
  it('answers appends promptly and keeps failing the delivery, not the process', async () => {
    const { dir, remove } = await tempDir();
    cleanups.push(remove);
    // Many attempts, retried often: the hostile condition keeps being evaluated across the restart.
    const options = { ...QUICK, maxDeliveryAttempts: 1000, host: '127.0.0.1', port: 0, data: dir };
    let server: RunningServer = await startNodeServer(options);
    let api = new Api(server.url);
    await subscribe(api, '/budget/recv', { sourceStreamPath: '/budget/src', subscriptionKey: 'k', filter: { jsonataCondition: HUNGRY }, delivery: { start: 'beginning' } });
    await api.append('/budget/src', { type: 'job' });
    await eventually(async () => ((await runtimeOf(api, '/budget/src', 'k'))?.lastError ?? '').match(BUDGET_ERROR), 'a budget failure', 10_000);
    await server.close();

    server = await startNodeServer(options);
    cleanups.push(() => server.close());
    api = new Api(server.url);
    await api.append('/budget/other', { type: 'warm-up' });
    const attempts = async () => (await runtimeOf(api, '/budget/src', 'k'))?.attempt ?? 0;
    const slowest = await bestOf(async () => {
      const target = (await attempts()) + 3;
      const failing = eventually(async () => ((await attempts()) >= target ? true : undefined), 'more attempts after the restart', 10_000);
      const ms = await slowestAppendWhile(api, '/budget/other', failing);
      await failing;
      return ms;
    });
    expect(slowest).toBeLessThan(50);
    expect((await runtimeOf(api, '/budget/src', 'k'))?.lastError).toMatch(BUDGET_ERROR);
  });
});
