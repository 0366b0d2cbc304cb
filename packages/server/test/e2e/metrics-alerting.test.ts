/**
 * End-to-end over real HTTP: the /metrics families an operator alerts on (protocol §15.2) — the
 * build, method and route as separate labels, halts and skips as counters, delivery latency by
 * action, live connections and RPC sessions, group commits and fsyncs, the database's size, and
 * the Node host's process and runtime metrics. Each test makes its metric move.
 *
 * The build, request, halt, skip, delivery, lag, appended and RPC-session families run on both
 * hosts: on the Worker host each stream object (and each project's hub) reports them to its
 * project's index within a second (docs/cloudflare.md §4.2), so a test waits for the figure,
 * bounded; on the Worker host too, the figures survive a restart of every object, a halt is counted
 * once and appended events are counted once each, those committed just before a restart included.
 * The rest is what only the Node host shows.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, createClient } from '@rivulet/client';
import type { CommittedEvent } from '@rivulet/contract';
import { VERSION } from '../../src/version.js';
import { rawSession } from '../fixtures/rpc-helpers.js';
import { HookServer } from '../helpers/hook-server.js';
import type { Api } from '../helpers/http.js';
import { TEST_HOST, startTestServer, type TestServer } from '../helpers/server.js';
import { startWorkerHost } from '../helpers/worker-host.js';
import { caughtUp, configured, eventually, halted, sampleOf, scrape, subscribe } from '../helpers/subscriptions.js';

const QUICK = { retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 3, deliveryTimeoutMs: 2_000 } as const;

let server: TestServer;
let api: Api;
let hooks: HookServer;

beforeAll(async () => {
  server = await startTestServer(QUICK);
  api = server.api;
  hooks = await HookServer.start();
});

afterAll(async () => {
  await hooks?.stop();
  await server?.close();
});

/** Every sample line whose name is `name` (labels and value included). */
const linesOf = (text: string, name: string): string[] => text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));

/** Allocates `n` short-lived objects (young-generation garbage); answers how many. */
function garbage(n: number): number {
  let kept = 0;
  for (let i = 0; i < n; i++) kept += [{ i }].length;
  return kept;
}

const count = (text: string, histogram: string, labels: Record<string, string> = {}) => sampleOf(text, `${histogram}_count`, labels) ?? 0;

/**
 * The first scrape of `on` where `ready` holds. The Node host counts in the process that answers
 * /metrics (the first scrape holds); the Worker host's stream objects report within a second, so
 * the bound leaves room for a loaded machine.
 */
async function scrapeUntil(on: Api, ready: (text: string) => boolean, what: string): Promise<string> {
  return eventually(
    async () => {
      const text = await scrape(on);
      return ready(text) ? text : undefined;
    },
    what,
    10_000,
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** rivulet_appended_events_total and rivulet_appended_bytes_total of a scrape. */
const appendedOf = (text: string) => [sampleOf(text, 'rivulet_appended_events_total'), sampleOf(text, 'rivulet_appended_bytes_total')];

/** What those counters should say of these streams: every event of their logs, and the UTF-8 bytes of its JSON. */
async function appendedIn(on: Api, paths: string[], destroyed: CommittedEvent[] = []): Promise<number[]> {
  const events = [...destroyed];
  for (const path of paths) events.push(...(await on.readAll(path)));
  return [events.length, events.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e)), 0)];
}

const webhook = (key: string, path: string, onFailingEvent: 'halt' | 'skip') =>
  configured({
    subscriptionKey: key,
    filter: { eventTypes: ['app/x'] },
    receiver: { action: 'webhook-post', url: hooks.url(path), delivery: { start: 'now', onFailingEvent } },
  });

describe('on every host', () => {
  it('rivulet_build_info names the running version', async () => {
    expect(linesOf(await scrape(api), 'rivulet_build_info')).toEqual([`rivulet_build_info{version="${VERSION}"} 1`]);
  });

  it('request durations carry method and route as separate labels; the route is the template, never the stream path', async () => {
    const before = await scrape(api);
    const appended = { method: 'POST', route: '/v1/streams/{path}', status: '200' };
    const state = { method: 'GET', route: '/v1/streams/{path}:state', status: '200' };
    await api.append('/alerting/raw-path-xyz', { type: 'x' });
    await api.append('/alerting/raw-path-xyz', { type: 'x' });
    expect((await api.request('GET', '/v1/streams/alerting/raw-path-xyz:state')).status).toBe(200);
    const after = await scrape(api);
    expect(count(after, 'rivulet_http_request_duration_seconds', appended)).toBe(count(before, 'rivulet_http_request_duration_seconds', appended) + 2);
    expect(count(after, 'rivulet_http_request_duration_seconds', state)).toBe(count(before, 'rivulet_http_request_duration_seconds', state) + 1);
    expect(after).not.toContain('raw-path-xyz');
    for (const line of linesOf(after, 'rivulet_http_request_duration_seconds_count')) {
      expect(line).toMatch(/^rivulet_http_request_duration_seconds_count\{method="[A-Z]+",route="\/[^"]*",status="\d{3}"\} \d+$/);
      expect(line).not.toMatch(/route="(GET|POST|DELETE|HEAD) /);
    }
  });

  it('the halt and skip counters exist from the start, at 0 for every action', async () => {
    const text = await scrape(api);
    for (const name of ['rivulet_subscription_halts_total', 'rivulet_subscription_skips_total']) {
      for (const action of ['copy-to-stream', 'webhook-post', 'itx-call', 'processor-wake']) expect(sampleOf(text, name, { action }), `${name} ${action}`).toBe(0);
    }
  });
  it('rivulet_subscription_halts_total goes from 0 to 1 when a webhook subscription halts, beside the halted gauge', async () => {
    hooks.script = (request) => (request.path === '/halt' ? { status: 503, body: 'down' } : { status: 204 });
    const before = await scrape(api);
    expect(sampleOf(before, 'rivulet_subscription_halts_total', { action: 'webhook-post' })).toBe(0);
    expect(sampleOf(before, 'rivulet_subscriptions_halted')).toBe(0);
    await api.append('/alerting/halts', webhook('h', '/halt', 'halt'));
    await api.append('/alerting/halts', { type: 'app/x' });
    const entry = await halted(api, '/alerting/halts', 'h');
    const lag = { project: '', stream: '/alerting/halts', key: 'h' };
    const after = await scrapeUntil(
      api,
      (t) => (sampleOf(t, 'rivulet_subscription_halts_total', { action: 'webhook-post' }) ?? 0) >= 1 && sampleOf(t, 'rivulet_subscription_lag_events', lag) !== undefined,
      'the halt and the lag to be counted',
    );
    expect(sampleOf(after, 'rivulet_subscription_halts_total', { action: 'webhook-post' })).toBe(1);
    expect(sampleOf(after, 'rivulet_subscription_halts_total', { action: 'copy-to-stream' })).toBe(0);
    expect(sampleOf(after, 'rivulet_subscriptions_halted')).toBe(1);
    expect(sampleOf(after, 'rivulet_subscription_skips_total', { action: 'webhook-post' })).toBe(0);
    // Receiver calls by outcome: every failed attempt the halt names, and no success.
    const failedCalls = linesOf(after, 'rivulet_deliveries_total')
      .filter((l) => l.includes('action="webhook-post"') && !l.includes('outcome="ok"'))
      .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
    expect(failedCalls).toBe(entry.deliveryHalted!.attempts);
    expect(sampleOf(after, 'rivulet_deliveries_total', { action: 'webhook-post', outcome: 'ok' })).toBeUndefined();
    // The lag is the one the stream's runtime state shows: the halted event and the halt itself.
    const runtime = (await api.state('/alerting/halts')).runtime?.subscriptions.h;
    expect(runtime?.lag).toBeGreaterThan(0);
    expect(sampleOf(after, 'rivulet_subscription_lag_events', lag)).toBe(runtime?.lag);
    // The gauge follows the stored rows: a destroyed stream's halted subscription is gone from it,
    // and its lag; the counter keeps what happened.
    await api.destroy('/alerting/halts');
    const destroyed = await scrape(api);
    expect(sampleOf(destroyed, 'rivulet_subscriptions_halted')).toBe(0);
    expect(sampleOf(destroyed, 'rivulet_subscription_lag_events', lag)).toBeUndefined();
    expect(sampleOf(destroyed, 'rivulet_subscription_halts_total', { action: 'webhook-post' })).toBe(1);
  });

  it('rivulet_subscription_skips_total counts an event skipped after failing alone; later events are delivered', async () => {
    hooks.script = (request) => ((request.envelope.event.payload as { bad?: boolean } | undefined)?.bad ? { status: 422, body: 'no' } : { status: 204 });
    const before = sampleOf(await scrape(api), 'rivulet_subscription_skips_total', { action: 'webhook-post' });
    await api.append('/alerting/skips', webhook('s', '/skip', 'skip'));
    await api.append('/alerting/skips', [{ type: 'app/x', payload: { bad: true } }, { type: 'app/x' }]);
    await caughtUp(api, '/alerting/skips', 's');
    const skipped = (t: string) => sampleOf(t, 'rivulet_subscription_skips_total', { action: 'webhook-post' }) ?? 0;
    const text = await scrapeUntil(api, (t) => skipped(t) > (before ?? 0), 'the skip to be counted');
    expect(skipped(text)).toBe((before ?? 0) + 1);
  });

  it('rivulet_delivery_latency_seconds counts acknowledged deliveries by action', async () => {
    hooks.script = () => ({ status: 204 });
    const before = await scrape(api);
    await subscribe(api, '/alerting/latency-recv', { sourceStreamPath: '/alerting/latency-src', subscriptionKey: 'c', filter: { eventTypes: ['app/x'] }, delivery: { start: 'beginning' } });
    await api.append('/alerting/latency-src', webhook('w', '/ok', 'halt'));
    await api.append('/alerting/latency-src', [{ type: 'app/x' }, { type: 'app/x' }]);
    await caughtUp(api, '/alerting/latency-src', 'c');
    await caughtUp(api, '/alerting/latency-src', 'w');
    const moved = (t: string, action: string) => count(t, 'rivulet_delivery_latency_seconds', { action }) > count(before, 'rivulet_delivery_latency_seconds', { action });
    const after = await scrapeUntil(api, (t) => moved(t, 'copy-to-stream') && moved(t, 'webhook-post'), 'the deliveries to be counted');
    for (const action of ['copy-to-stream', 'webhook-post']) {
      const labels = { action };
      expect(count(after, 'rivulet_delivery_latency_seconds', labels), action).toBeGreaterThan(count(before, 'rivulet_delivery_latency_seconds', labels));
      const sum = sampleOf(after, 'rivulet_delivery_latency_seconds_sum', labels)!;
      // Seconds, not milliseconds: a loopback delivery of a just-appended event takes well under 2 s.
      expect(sum / count(after, 'rivulet_delivery_latency_seconds', labels)).toBeLessThan(2);
      expect(sampleOf(after, 'rivulet_deliveries_total', { action, outcome: 'ok' }), action).toBeGreaterThanOrEqual(count(after, 'rivulet_delivery_latency_seconds', labels));
    }
  });

  it('rivulet_appended_events_total and _bytes_total count each committed event and its JSON bytes once; a destroyed stream stays counted', async () => {
    // A server of its own: the other tests' deliveries append facts meanwhile.
    const fresh = await startTestServer(QUICK);
    try {
      const on = fresh.api;
      expect(appendedOf(await scrape(on))).toEqual([0, 0]);
      await on.append('/appended/a', { type: 'x', payload: { text: 'é ✓ 🌊' } });
      await on.append('/appended/a', [{ type: 'x' }, { type: 'y', payload: { n: 1 } }, { type: 'x' }]);
      // An idempotent repeat commits nothing, so it counts nothing.
      await on.append('/appended/a', { type: 'x', idempotencyKey: 'once' });
      await on.append('/appended/a', { type: 'x', idempotencyKey: 'once' });
      await on.append('/appended/b', [{ type: 'x' }, { type: 'z', payload: { text: 'ß'.repeat(100) } }]);
      const gone = await on.readAll('/appended/b');
      // Destroyed at once, before its object had an interval to report it.
      await on.destroy('/appended/b');
      const expected = await appendedIn(on, ['/appended/a'], gone);
      // Every append commits the stream's creation fact too: 6 events in /appended/a, 3 in /appended/b.
      expect(expected[0]).toBe(9);
      const text = await scrapeUntil(on, (t) => appendedOf(t)[0] === expected[0], 'the appended events to be counted');
      expect(appendedOf(text)).toEqual(expected);
      // Reports go on while nothing moves: still counted once.
      await sleep(2_500);
      expect(appendedOf(await scrape(on))).toEqual(expected);
    } finally {
      await fresh.close();
    }
  });

  it('rivulet_rpc_sessions follows the open sessions', async () => {
    expect(sampleOf(await scrape(api), 'rivulet_rpc_sessions')).toBe(0);
    const itx = await connect(server.url);
    try {
      await scrapeUntil(api, (t) => sampleOf(t, 'rivulet_rpc_sessions') === 1, 'the session to be counted');
      const second = await connect(server.url);
      await scrapeUntil(api, (t) => sampleOf(t, 'rivulet_rpc_sessions') === 2, 'the second session to be counted');
      second.close();
      await scrapeUntil(api, (t) => sampleOf(t, 'rivulet_rpc_sessions') === 1, 'the second session to end');
    } finally {
      itx.close();
    }
    await scrapeUntil(api, (t) => sampleOf(t, 'rivulet_rpc_sessions') === 0, 'the session to end');
  });

  it('rivulet_live_connections follows an open wait', async () => {
    expect(sampleOf(await scrape(api), 'rivulet_live_connections')).toBe(0);
    const wait = createClient({ url: server.url }).waitForEvent('/alerting/wait', { eventTypes: ['done'], timeoutMs: 10_000 });
    await scrapeUntil(api, (t) => sampleOf(t, 'rivulet_live_connections') === 1, 'the wait to be counted');
    await api.append('/alerting/wait', { type: 'done' });
    await wait;
    await scrapeUntil(api, (t) => sampleOf(t, 'rivulet_live_connections') === 0, 'the wait to end');
  });
});

describe.skipIf(TEST_HOST !== 'worker')('on the Worker host, across restarts of every object', () => {
  const haltsOf = (text: string) => sampleOf(text, 'rivulet_subscription_halts_total', { action: 'webhook-post' }) ?? 0;
  const deliveryLines = (text: string) => linesOf(text, 'rivulet_deliveries_total');

  it('the figures are kept in the index objects, a halt reported by a restarted object is counted once, and lost connections are dropped', async () => {
    hooks.script = (request) => (request.path === '/restart' ? { status: 503, body: 'down' } : { status: 204 });
    const worker = await startWorkerHost(QUICK);
    try {
      const on = worker.api;
      await on.append('/alerting/restart-a', webhook('h', '/restart', 'halt'));
      await on.append('/alerting/restart-a', { type: 'app/x' });
      await halted(on, '/alerting/restart-a', 'h');
      const reported = await scrapeUntil(on, (t) => haltsOf(t) >= 1, 'the first halt to be counted');
      expect(haltsOf(reported)).toBe(1);
      // Every object loses its memory: the scrape reads what the index objects stored.
      await worker.restart();
      const restarted = await scrape(on);
      expect(haltsOf(restarted)).toBe(1);
      expect(sampleOf(restarted, 'rivulet_subscriptions_halted')).toBe(1);
      expect(deliveryLines(restarted)).toEqual(deliveryLines(reported));
      // A halt followed at once by a restart: its object had no interval to report it, and counts
      // it from its log when it runs again (here, for a state read).
      await on.append('/alerting/restart-b', webhook('h', '/restart', 'halt'));
      await on.append('/alerting/restart-b', { type: 'app/x' });
      await halted(on, '/alerting/restart-b', 'h');
      await worker.restart();
      expect((await on.state('/alerting/restart-b')).core?.subscriptions.outbound.byKey.h?.deliveryHalted).toBeDefined();
      const both = await scrapeUntil(on, (t) => haltsOf(t) >= 2, 'the second halt to be counted');
      expect(haltsOf(both)).toBe(2);
      expect(sampleOf(both, 'rivulet_subscriptions_halted')).toBe(2);
      // Two more intervals of reports, and a third restart: still counted once.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect(haltsOf(await scrape(on))).toBe(2);
      await worker.restart();
      await on.state('/alerting/restart-a');
      await on.state('/alerting/restart-b');
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect(haltsOf(await scrape(on))).toBe(2);
      // An open wait dies with its object: the index stops counting it once no report renews it.
      const wait = createClient({ url: worker.url }).waitForEvent('/alerting/restart-wait', { eventTypes: ['done'], timeoutMs: 20_000 }).catch((error: unknown) => error);
      await scrapeUntil(on, (t) => sampleOf(t, 'rivulet_live_connections') === 1, 'the wait to be counted');
      await worker.restart();
      await scrapeUntil(on, (t) => sampleOf(t, 'rivulet_live_connections') === 0, 'the lost wait to be dropped');
      expect(await wait).toBeInstanceOf(Error);
    } finally {
      await worker.close();
    }
  }, 60_000);
});

describe.skipIf(TEST_HOST !== 'worker')('on the Worker host, appended events and RPC sessions across restarts', () => {
  it('appended events are counted once each across restarts, those committed just before one included; a hub that went away stops counting its sessions', async () => {
    const worker = await startWorkerHost(QUICK);
    try {
      const on = worker.api;
      const paths = ['/appended/restart', '/appended/restart-new'];
      const counted = (what: string, expected: number[]) =>
        scrapeUntil(on, (t) => appendedOf(t)[0] === expected[0], what).then((t) => expect(appendedOf(t)).toEqual(expected));
      await on.append(paths[0]!, [{ type: 'x' }, { type: 'x', payload: { text: 'ü' } }]);
      await counted('the first appends to be counted', await appendedIn(on, paths.slice(0, 1)));
      // Appends followed at once by a restart: their objects had no interval to report them (one is
      // a stream whose object never reported at all). The next instances find them in their logs.
      await on.append(paths[0]!, [{ type: 'x' }, { type: 'y', payload: { text: 'ǅ'.repeat(40) } }, { type: 'x' }]);
      await on.append(paths[1]!, { type: 'x' });
      await worker.restart();
      for (const path of paths) await on.state(path);
      const all = await appendedIn(on, paths);
      expect(all[0]).toBe(3 + 3 + 2);
      await counted('the appends before the restart to be counted', all);
      await sleep(2_500);
      expect(appendedOf(await scrape(on))).toEqual(all);
      // Restarted again, and touched: nothing is counted twice; a new append adds its own.
      await worker.restart();
      await on.append(paths[1]!, { type: 'x' });
      await on.state(paths[0]!);
      const more = await appendedIn(on, paths);
      expect(more[0]).toBe(all[0]! + 1);
      await counted('the append after the second restart to be counted', more);
      await sleep(2_500);
      expect(appendedOf(await scrape(on))).toEqual(more);
      // An RPC session lives in its project's hub: a hub that goes away stops being counted. (A
      // raw session: the SDK would open a new one on the new hub at once.)
      const session = await rawSession(worker.url);
      expect(session.ok).toBe(true);
      try {
        await scrapeUntil(on, (t) => sampleOf(t, 'rivulet_rpc_sessions') === 1, 'the session to be counted');
        await worker.restart();
        await scrapeUntil(on, (t) => sampleOf(t, 'rivulet_rpc_sessions') === 0, "the lost hub's session to be dropped");
      } finally {
        if (session.ok) session.close();
      }
    } finally {
      await worker.close();
    }
  }, 60_000);
});

describe.skipIf(TEST_HOST === 'worker')('on the Node host', () => {
  it('group commits: size, commit and fsync durations move with durable appends', async () => {
    const before = await scrape(api);
    const size = 'rivulet_storage_group_commit_transactions';
    // Twenty appends started in one turn share one group commit.
    await Promise.all(Array.from({ length: 20 }, (_, i) => server.server.service.append(null, `/alerting/group/${i}`, [{ type: 'x' }])));
    const after = await scrape(api);
    expect(count(after, size)).toBeGreaterThan(count(before, size));
    expect(sampleOf(after, `${size}_sum`)! - sampleOf(before, `${size}_sum`)!).toBeGreaterThanOrEqual(20);
    // At least one group held more than 16 transactions.
    const over16 = (text: string) => count(text, size) - sampleOf(text, `${size}_bucket`, { le: '16' })!;
    expect(over16(after)).toBeGreaterThan(over16(before));
    for (const name of ['rivulet_storage_commit_duration_seconds', 'rivulet_storage_fsync_duration_seconds']) {
      expect(count(after, name), name).toBeGreaterThan(count(before, name));
      expect(sampleOf(after, `${name}_sum`)!, name).toBeGreaterThan(sampleOf(before, `${name}_sum`)!);
    }
  });

  it('rivulet_database_bytes and rivulet_database_wal_bytes are the sizes of the files at scrape time', async () => {
    await api.append('/alerting/size', { type: 'x', payload: { filler: 'y'.repeat(50_000) } });
    const text = await scrape(api);
    const db = join(server.dataDir, 'rivulet.db');
    const wal = statSync(`${db}-wal`).size;
    expect(wal).toBeGreaterThan(50_000);
    expect(sampleOf(text, 'rivulet_database_wal_bytes')).toBe(wal);
    expect(sampleOf(text, 'rivulet_database_bytes')).toBe(statSync(db).size);
  });

  it('process and runtime metrics: CPU, memory, heap, event-loop lag (it sees a stall) and GC', async () => {
    // The lag a scrape reports is the one measured since the scrape before it (prom-client starts a
    // measurement at each collect), so the first scrape of a process may say 0: read the second.
    await scrape(api);
    let text = await scrape(api);
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds']) {
      expect(sampleOf(text, name), name).toBeGreaterThan(0);
    }
    expect(text).toContain('# TYPE nodejs_gc_duration_seconds histogram');
    // The server runs in this process: a stall of the test's event loop is the server's. A scrape
    // resets the delay histogram, and its first sample after a reset is only a new baseline: let
    // it take one (it samples every 100 ms, hosts/node/node-metrics.ts) before the stall, and
    // record the late one after it.
    const settle = () => new Promise((resolve) => setTimeout(resolve, 250));
    await settle();
    const stalled = performance.now();
    while (performance.now() - stalled < 120) {
      // busy: nothing runs on the event loop meanwhile
    }
    await settle();
    text = await scrape(api);
    expect(sampleOf(text, 'nodejs_eventloop_lag_max_seconds')).toBeGreaterThanOrEqual(0.1);
    // Garbage until a collection is recorded (the observer reports asynchronously).
    await eventually(async () => {
      expect(garbage(200_000)).toBe(200_000);
      return linesOf(await scrape(api), 'nodejs_gc_duration_seconds_count').some((l) => !l.endsWith(' 0'));
    }, 'a garbage collection to be recorded');
  });
});
