/**
 * The Worker host's /metrics roll-up (metrics-rollup.ts): the index applies each report once and
 * counts each halt and skip once by its offset; a stream object's reporter reports at most once an
 * interval, nothing when nothing moved, sends a failed report again unchanged, and a new instance
 * reads from its log the facts the index has not counted; the entry folds every project's totals.
 * A manual timer and SQLite in memory: nothing here waits for real time.
 */
import { EventType, INTERNAL_IDEMPOTENCY_PREFIX, type CommittedEvent } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../../adapters/memory/memory-storage.js';
import { createServerMetrics, labelKey } from '../../engine/metrics.js';
import type { Timer } from '../../ports/timer.js';
import {
  CONNECTIONS_FRESH_MS,
  IndexMetrics,
  LAGS_SHOWN,
  applyRollup,
  createWorkerMetrics,
  type CountedFact,
  type MetricsReport,
} from './metrics-rollup.js';
import { FIRST_COUNT_MAX_EVENTS, MetricsReporter, countedFact, scanFacts, type ReporterPorts } from './metrics-reporter.js';
import { SessionsReporter } from './sessions-reporter.js';

const webhook = labelKey({ action: 'webhook-post' });
const halts = (index: IndexMetrics) => index.totals(0).counters.find((c) => c.name === 'rivulet_subscription_halts_total' && c.labels === webhook)?.value ?? 0;

function report(over: Partial<MetricsReport> = {}): MetricsReport {
  return { streamId: 's1', path: '/a', reporter: 'r1', seq: 1, through: 10, facts: [], deliveries: [], latency: [], ...over };
}

const halt = (offset: number): CountedFact => ({ offset, kind: 'halt', action: 'webhook-post' });

describe('IndexMetrics (the index object)', () => {
  it('applies a report once: the same reporter and sequence again changes nothing', async () => {
    const index = new IndexMetrics(await MemoryStorage.create());
    const r = report({ facts: [halt(5)], deliveries: [{ labels: labelKey({ action: 'webhook-post', outcome: 'failing' }), by: 3 }] });
    expect(index.apply(r)).toBe(true);
    expect(index.apply(r)).toBe(false);
    expect(halts(index)).toBe(1);
    expect(index.totals(0).counters.find((c) => c.name === 'rivulet_deliveries_total')?.value).toBe(3);
    expect(index.mark('s1')).toEqual({ through: 10, appended: null });
  });

  it('counts a halt once by its offset, whichever report or instance carries it again', async () => {
    const index = new IndexMetrics(await MemoryStorage.create());
    index.apply(report({ facts: [halt(5)], through: 5 }));
    // A new instance (another reporter) read the same halt from the log, and found a later one.
    index.apply(report({ reporter: 'r2', seq: 1, facts: [halt(5), halt(9)], through: 12 }));
    expect(halts(index)).toBe(2);
    // Another lifetime of the same path counts on its own.
    index.apply(report({ streamId: 's2', facts: [halt(5)], through: 5 }));
    expect(halts(index)).toBe(3);
    expect(index.mark('s1').through).toBe(12);
    expect(index.mark('unknown')).toEqual({ through: 0, appended: null });
  });

  it('adds latency histograms bucket by bucket', async () => {
    const index = new IndexMetrics(await MemoryStorage.create());
    const labels = labelKey({ action: 'copy-to-stream' });
    index.apply(report({ latency: [{ labels, counts: [1, 2], sum: 0.5, count: 2 }] }));
    index.apply(report({ seq: 2, latency: [{ labels, counts: [0, 1], sum: 0.25, count: 1 }] }));
    expect(index.totals(0).histograms).toEqual([{ name: 'rivulet_delivery_latency_seconds', labels, counts: [1, 3], sum: 0.75, count: 3 }]);
  });

  it('keeps each stream lifetime latest lags, answers the largest 100, and forgets a destroyed lifetime', async () => {
    const index = new IndexMetrics(await MemoryStorage.create());
    index.apply(report({ lags: [{ key: 'k', lag: 4 }, { key: 'caught-up', lag: 0 }] }));
    expect(index.totals(0).lags).toEqual([{ path: '/a', key: 'k', lag: 4 }]);
    index.apply(report({ seq: 2, lags: [{ key: 'k', lag: 7 }] }));
    // A report without lags leaves them as they are.
    index.apply(report({ seq: 3 }));
    expect(index.totals(0).lags).toEqual([{ path: '/a', key: 'k', lag: 7 }]);
    const many = Array.from({ length: LAGS_SHOWN + 1 }, (_, i) => ({ key: `k${i}`, lag: i + 1 }));
    index.apply(report({ streamId: 's2', path: '/b', lags: many }));
    const shown = index.totals(0).lags;
    expect(shown).toHaveLength(LAGS_SHOWN);
    expect(shown[0]).toEqual({ path: '/b', key: `k${LAGS_SHOWN}`, lag: LAGS_SHOWN + 1 });
    index.forget('s2');
    expect(index.totals(0).lags).toEqual([{ path: '/a', key: 'k', lag: 7 }]);
    index.apply(report({ streamId: 's2', facts: [halt(1)], through: 1 }));
    expect(halts(index)).toBe(1);
  });

  it('counts a stream open connections while its object keeps telling them, and none once told 0 or no longer told', async () => {
    let now = 1_000_000;
    const index = new IndexMetrics(await MemoryStorage.create(), () => now);
    index.apply(report({ connections: 2 }));
    index.apply(report({ streamId: 's2', connections: 1 }));
    expect(index.totals(0).connections).toBe(3);
    index.apply(report({ streamId: 's2', seq: 2, connections: 0 }));
    expect(index.totals(0).connections).toBe(2);
    // s1's object went away: its count is dropped once it is older than CONNECTIONS_FRESH_MS.
    now += CONNECTIONS_FRESH_MS;
    expect(index.totals(0).connections).toBe(2);
    now += 1;
    expect(index.totals(0).connections).toBe(0);
    index.apply(report({ seq: 2, connections: 1 }));
    expect(index.totals(0).connections).toBe(1);
    index.forget('s1');
    expect(index.totals(0).connections).toBe(0);
  });

  it('adds a lifetime appended events and bytes once: absolute figures, only what grew is added, a destroyed one stays counted', async () => {
    const index = new IndexMetrics(await MemoryStorage.create());
    const appended = () => ['rivulet_appended_events_total', 'rivulet_appended_bytes_total'].map((n) => index.totals(0).counters.find((c) => c.name === n)?.value ?? 0);
    index.apply(report({ appended: { events: 3, bytes: 300 } }));
    expect(appended()).toEqual([3, 300]);
    // The same figures again (another sequence, or a new instance), and older ones arriving late: nothing more.
    index.apply(report({ seq: 2, appended: { events: 3, bytes: 300 } }));
    index.apply(report({ reporter: 'r2', seq: 1, appended: { events: 2, bytes: 200 } }));
    expect(appended()).toEqual([3, 300]);
    expect(index.mark('s1').appended).toEqual({ events: 3, bytes: 300 });
    index.apply(report({ reporter: 'r2', seq: 2, appended: { events: 5, bytes: 520 } }));
    expect(appended()).toEqual([5, 520]);
    // Another lifetime counts on its own; its final figures come with its removal, and stay counted.
    index.apply(report({ streamId: 's2', appended: { events: 1, bytes: 10 } }));
    index.forget('s2', { events: 4, bytes: 40 });
    expect(appended()).toEqual([9, 560]);
    expect(index.mark('s2').appended).toBeNull();
    index.forget('s1');
    expect(appended()).toEqual([9, 560]);
    // A lifetime first seen with a baseline is counted from there on.
    index.apply(report({ streamId: 's3', appended: { events: 20_000, bytes: 0, baseline: true } }));
    expect(appended()).toEqual([9, 560]);
    index.apply(report({ streamId: 's3', seq: 2, appended: { events: 20_002, bytes: 25 } }));
    expect(appended()).toEqual([11, 585]);
  });

  it('counts a hub open RPC sessions while it keeps telling them, summed over hub instances', async () => {
    let now = 1_000_000;
    const index = new IndexMetrics(await MemoryStorage.create(), () => now);
    index.reportSessions('hub-1', 2);
    index.reportSessions('hub-2', 1);
    expect(index.totals(0).sessions).toBe(3);
    index.reportSessions('hub-2', 0);
    expect(index.totals(0).sessions).toBe(2);
    now += CONNECTIONS_FRESH_MS + 1;
    expect(index.totals(0).sessions).toBe(0);
    index.reportSessions('hub-1', 1);
    expect(index.totals(0).sessions).toBe(1);
  });

  it('lists the projects registered with it, the deployment-wide one (null) included', async () => {
    const index = new IndexMetrics(await MemoryStorage.create());
    index.registerProject('shop');
    index.registerProject(null);
    index.registerProject('shop');
    expect(index.projects()).toEqual([null, 'shop']);
  });
});

describe('countedFact', () => {
  const event = (over: Partial<CommittedEvent>): CommittedEvent =>
    ({ offset: 3, type: EventType.subscriptionDeliveryHalted, payload: { subscriptionKey: 'k' }, createdAt: 'x', ...over }) as CommittedEvent;
  const actionOf = (key: string) => (key === 'k' ? 'webhook-post' : undefined);

  it('is a halt, a skip audit, and nothing else; a copy of one is data', () => {
    expect(countedFact(event({}), actionOf)).toEqual({ offset: 3, kind: 'halt', action: 'webhook-post' });
    expect(countedFact(event({ type: EventType.errorOccurred, idempotencyKey: `${INTERNAL_IDEMPOTENCY_PREFIX}skip:["k",1,2]` }), actionOf)).toEqual({
      offset: 3,
      kind: 'skip',
      action: 'webhook-post',
    });
    expect(countedFact(event({ type: EventType.errorOccurred, idempotencyKey: `${INTERNAL_IDEMPOTENCY_PREFIX}condition:["k",1,2]` }), actionOf)).toBeUndefined();
    expect(countedFact(event({ type: 'app/x' }), actionOf)).toBeUndefined();
    expect(countedFact(event({ source: { copiedFrom: { streamPath: '/s', offset: 1 } } } as never), actionOf)).toBeUndefined();
    expect(countedFact(event({ payload: { subscriptionKey: 'unknown' } }), actionOf)).toBeUndefined();
  });
});

describe('scanFacts', () => {
  const stored = (offset: number, over: Partial<CommittedEvent> = {}) => ({
    offset,
    json: JSON.stringify({ path: '/a', offset, type: EventType.subscriptionDeliveryHalted, payload: { subscriptionKey: 'k' }, createdAt: 'x', ...over }),
  });
  const log = [stored(2), stored(3, { type: EventType.errorOccurred, idempotencyKey: `${INTERNAL_IDEMPOTENCY_PREFIX}condition:x` }), stored(5), stored(8), stored(9)];
  const reads: Array<[number, number]> = [];
  const read = (after: number, limit: number) => {
    reads.push([after, limit]);
    return log.filter((e) => e.offset > after).slice(0, limit);
  };

  it('reads page after page until a short one, keeping only the facts', () => {
    reads.length = 0;
    expect(scanFacts(read, 0, () => 'copy-to-stream', 2).map((f) => f.offset)).toEqual([2, 5, 8, 9]);
    // Pages of 2: [2, 3], [5, 8], then [9] is short and ends the scan.
    expect(reads).toEqual([
      [0, 2],
      [3, 2],
      [8, 2],
    ]);
  });

  it('stops after one page when it is short, and starts after the mark', () => {
    reads.length = 0;
    expect(scanFacts(read, 5, () => 'copy-to-stream').map((f) => f.offset)).toEqual([8, 9]);
    expect(reads).toEqual([[5, 1_000]]);
  });
});

/** A one-shot timer that fires only when the test says so. */
class ManualTimer implements Timer {
  readonly due: Array<{ delayMs: number; fn: () => void }> = [];
  set(delayMs: number, fn: () => void) {
    const entry = { delayMs, fn };
    this.due.push(entry);
    return () => {
      const i = this.due.indexOf(entry);
      if (i >= 0) this.due.splice(i, 1);
    };
  }
  /** Fires every timer set so far; answers how many. */
  fire(): number {
    const now = this.due.splice(0);
    for (const t of now) t.fn();
    return now.length;
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

function reporterSetup(over: Partial<ReporterPorts> = {}) {
  const timer = new ManualTimer();
  const metrics = createServerMetrics();
  const sent: MetricsReport[] = [];
  const subject = { streamId: 's1', path: '/a', head: 4, lags: [{ key: 'k', lag: 0 }], connections: 0 };
  let failSends = 0;
  const log: string[] = [];
  const ports: ReporterPorts = {
    timer,
    metrics,
    subject: () => subject,
    scan: () => [],
    scanBytes: () => 0,
    mark: async () => ({ through: 0, appended: null }),
    send: async (r) => {
      if (failSends > 0) {
        failSends--;
        throw new Error('index unreachable');
      }
      sent.push(r);
    },
    log: (message) => log.push(message),
    ...over,
  };
  const reporter = new MetricsReporter(ports);
  const tick = async () => {
    const fired = timer.fire();
    await settle();
    return fired;
  };
  return { reporter, timer, metrics, sent, subject, log, tick, failNext: (n: number) => (failSends = n) };
}

const haltAt = (offset: number): CommittedEvent =>
  ({ path: '/a', offset, type: EventType.subscriptionDeliveryHalted, payload: { subscriptionKey: 'k' }, createdAt: 'x' }) as CommittedEvent;

describe('MetricsReporter (a stream object)', () => {
  it('gathers for an interval, reports what moved in one report, and stops after a quiet interval', async () => {
    const { reporter, timer, metrics, sent, subject, tick } = reporterSetup();
    reporter.poke();
    reporter.poke();
    expect(timer.due.map((t) => t.delayMs)).toEqual([1_000]);
    metrics.deliveries.inc({ action: 'webhook-post', outcome: 'ok' });
    metrics.deliveries.inc({ action: 'webhook-post', outcome: 'ok' });
    metrics.deliveryLatency.observe(0.02, { action: 'webhook-post' });
    subject.head = 6;
    reporter.committed('s1', [haltAt(5)], () => 'webhook-post');
    expect(await tick()).toBe(1);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      streamId: 's1',
      seq: 1,
      through: 6,
      facts: [{ offset: 5, kind: 'halt', action: 'webhook-post' }],
      deliveries: [{ labels: labelKey({ action: 'webhook-post', outcome: 'ok' }), by: 2 }],
      lags: [{ key: 'k', lag: 0 }],
    });
    expect(sent[0]!.latency).toEqual([{ labels: webhook, counts: expect.any(Array) as unknown as number[], sum: 0.02, count: 1 }]);
    // After a report, one more interval looks; only what moved since is sent.
    metrics.deliveries.inc({ action: 'webhook-post', outcome: 'ok' });
    expect(await tick()).toBe(1);
    expect(sent[1]).toMatchObject({ seq: 2, facts: [], deliveries: [{ by: 1 }], latency: [] });
    expect(sent[1]!.lags).toBeUndefined();
    // Nothing moved: no report, and no timer left.
    expect(await tick()).toBe(1);
    expect(sent).toHaveLength(2);
    expect(timer.due).toHaveLength(0);
  });

  it('sends a failed report again unchanged, then what came meanwhile in the next one', async () => {
    const { reporter, metrics, sent, tick, failNext, log } = reporterSetup();
    metrics.deliveries.inc({ action: 'copy-to-stream', outcome: 'ok' });
    failNext(1);
    reporter.poke();
    await tick();
    expect(sent).toHaveLength(0);
    expect(log).toEqual(['could not report metrics to the project index (sent again within an interval)']);
    metrics.deliveries.inc({ action: 'copy-to-stream', outcome: 'ok' }, 4);
    await tick();
    expect(sent.map((r) => [r.seq, r.deliveries[0]?.by])).toEqual([[1, 1]]);
    await tick();
    expect(sent.map((r) => [r.seq, r.deliveries[0]?.by])).toEqual([
      [1, 1],
      [2, 4],
    ]);
  });

  it('a new instance asks the index how far it counted and reads the facts after that from its log', async () => {
    const scanned: number[] = [];
    const { reporter, sent, subject, tick } = reporterSetup({
      mark: async () => ({ through: 3, appended: null }),
      scan: (after) => {
        scanned.push(after);
        return [halt(4), halt(8)];
      },
    });
    subject.head = 9;
    // Committed in this instance too: counted once.
    reporter.committed('s1', [haltAt(8)], () => 'webhook-post');
    await tick();
    expect(scanned).toEqual([3]);
    expect(sent[0]!.facts.map((f) => f.offset).sort()).toEqual([4, 8]);
    expect(sent[0]!.through).toBe(9);
    // The mark is asked once per lifetime.
    reporter.committed('s1', [haltAt(10)], () => 'webhook-post');
    subject.head = 10;
    await tick();
    expect(scanned).toEqual([3]);
    expect(sent[1]!.facts).toEqual([halt(10)]);
  });

  it('tells open connections every interval while there are any, then 0 once, then nothing', async () => {
    const { reporter, sent, subject, tick, timer } = reporterSetup();
    subject.connections = 1;
    reporter.poke();
    await tick();
    await tick();
    expect(sent.map((r) => r.connections)).toEqual([1, 1]);
    subject.connections = 0;
    await tick();
    await tick();
    expect(sent.map((r) => r.connections)).toEqual([1, 1, 0]);
    expect(timer.due).toHaveLength(0);
  });

  it('a stream without subscriptions reads no facts from its log, and tells its connections without facts', async () => {
    let scans = 0;
    const { reporter, sent, subject, tick } = reporterSetup({
      mark: async () => ({ through: 0, appended: { events: 50, bytes: 5_000 } }),
      scan: () => {
        scans++;
        return [];
      },
    });
    subject.lags = [];
    subject.head = 50;
    reporter.committed('s1', [{ ...haltAt(3), type: 'app/x' }], () => undefined);
    await tick();
    // The head is where the index counted it: nothing moved, nothing sent.
    expect([sent.length, scans]).toEqual([0, 0]);
    subject.connections = 1;
    reporter.poke();
    await tick();
    expect(scans).toBe(0);
    expect(sent).toEqual([expect.objectContaining({ through: 0, facts: [], connections: 1 })]);
    expect(sent[0]!.appended).toBeUndefined();
  });

  it('drops a report of a destroyed lifetime that the index did not take', async () => {
    const { reporter, metrics, sent, subject, tick, failNext } = reporterSetup();
    metrics.deliveries.inc({ action: 'webhook-post', outcome: 'ok' });
    failNext(1);
    reporter.poke();
    await tick();
    await reporter.forget('s1');
    subject.streamId = 's2';
    subject.lags = [];
    await tick();
    // Without forget the failed report of s1 would be sent again here.
    expect(sent.map((r) => r.streamId)).not.toContain('s1');
  });

  it('reports nothing while the object holds no stream', async () => {
    const { reporter, metrics, sent, tick } = reporterSetup({ subject: () => null });
    metrics.deliveries.inc({ action: 'webhook-post', outcome: 'ok' });
    reporter.poke();
    await tick();
    expect(sent).toEqual([]);
  });
});

describe('MetricsReporter: appended events and bytes', () => {
  it('a new lifetime is counted from its first event: its head, and the bytes of its log then the engine counter after it', async () => {
    const scanned: Array<[number, number]> = [];
    const { reporter, metrics, sent, subject, tick } = reporterSetup({
      scanBytes: (_id, after, through) => {
        scanned.push([after, through]);
        return 400;
      },
    });
    subject.lags = [];
    metrics.appendedBytes.inc({}, 400);
    reporter.poke();
    await tick();
    expect(scanned).toEqual([[0, 4]]);
    expect(sent.map((r) => r.appended)).toEqual([{ events: 4, bytes: 400 }]);
    subject.head = 6;
    metrics.appendedBytes.inc({}, 150);
    reporter.poke();
    await tick();
    expect(sent.map((r) => r.appended)).toEqual([{ events: 4, bytes: 400 }, { events: 6, bytes: 550 }]);
    // The head did not move: no report. The final figures are what it would report.
    await tick();
    expect(sent).toHaveLength(2);
    expect(reporter.appended('s1')).toEqual({ events: 6, bytes: 550 });
    expect(reporter.appended('other')).toBeNull();
    expect(scanned).toHaveLength(1);
  });

  it('a new instance counts from the index figures, adding the log bytes after them (committed by the instance that went away)', async () => {
    const scanned: Array<[number, number]> = [];
    const { reporter, metrics, sent, subject, tick } = reporterSetup({
      mark: async () => ({ through: 0, appended: { events: 3, bytes: 300 } }),
      scanBytes: (_id, after, through) => {
        scanned.push([after, through]);
        return 220;
      },
    });
    subject.lags = [];
    subject.head = 5;
    // This instance committed nothing yet: its own counter is 0.
    reporter.poke();
    await tick();
    expect(scanned).toEqual([[3, 5]]);
    expect(sent.map((r) => r.appended)).toEqual([{ events: 5, bytes: 520 }]);
    subject.head = 7;
    metrics.appendedBytes.inc({}, 80);
    reporter.poke();
    await tick();
    expect(sent[1]!.appended).toEqual({ events: 7, bytes: 600 });
  });

  it('a lifetime unknown to the index with more events than FIRST_COUNT_MAX_EVENTS starts with a baseline, without reading its log', async () => {
    let scans = 0;
    const { reporter, metrics, sent, subject, tick } = reporterSetup({
      scanBytes: () => {
        scans++;
        return 1;
      },
    });
    subject.lags = [];
    subject.head = FIRST_COUNT_MAX_EVENTS + 1;
    reporter.poke();
    await tick();
    expect(scans).toBe(0);
    expect(sent[0]!.appended).toEqual({ events: FIRST_COUNT_MAX_EVENTS + 1, bytes: 0, baseline: true });
    subject.head += 2;
    metrics.appendedBytes.inc({}, 30);
    reporter.poke();
    await tick();
    expect(sent[1]!.appended).toEqual({ events: FIRST_COUNT_MAX_EVENTS + 3, bytes: 30 });
  });

  it('a lifetime destroyed while the index was asked is not given that mark; the new lifetime asks again', async () => {
    const asked: string[] = [];
    const { reporter, sent, subject, tick } = reporterSetup({
      mark: async (streamId) => {
        asked.push(streamId);
        if (streamId === 's1') subject.streamId = 's2';
        return { through: 0, appended: { events: 1, bytes: 10 } };
      },
    });
    subject.lags = [];
    reporter.poke();
    await tick();
    expect(sent).toEqual([]);
    reporter.poke();
    await tick();
    expect(asked).toEqual(['s1', 's2']);
    expect(sent.map((r) => [r.streamId, r.appended])).toEqual([['s2', { events: 4, bytes: 10 }]]);
  });
});

describe('SessionsReporter (the hub)', () => {
  it('tells its open sessions every interval while there are any, then 0 once, then nothing; a failed report is sent again', async () => {
    const timer = new ManualTimer();
    let open = 0;
    let fail = 0;
    const sent: Array<[string, number]> = [];
    const log: string[] = [];
    const reporter = new SessionsReporter({
      timer,
      sessions: () => open,
      send: async (id, count) => {
        if (fail > 0) {
          fail--;
          throw new Error('index unreachable');
        }
        sent.push([id, count]);
      },
      log: (message) => log.push(message),
    });
    const tick = async () => {
      timer.fire();
      await settle();
    };
    // Nothing open and nothing told: no report.
    reporter.poke();
    await tick();
    expect(sent).toEqual([]);
    open = 2;
    reporter.poke();
    reporter.poke();
    expect(timer.due).toHaveLength(1);
    await tick();
    await tick();
    expect(sent.map(([, n]) => n)).toEqual([2, 2]);
    open = 0;
    fail = 1;
    await tick();
    expect(log).toEqual(['could not report RPC sessions to the project index (sent again within an interval)']);
    await tick();
    await tick();
    expect(sent.map(([, n]) => n)).toEqual([2, 2, 0]);
    expect(timer.due).toHaveLength(0);
    expect(new Set(sent.map(([id]) => id)).size).toBe(1);
  });
});

describe('applyRollup (the entry)', () => {
  it('sums the projects, keeps 0 for every action, and labels lags by project', () => {
    const metrics = createWorkerMetrics('test');
    const latency = { name: 'rivulet_delivery_latency_seconds', labels: webhook, counts: new Array<number>(14).fill(1), sum: 1, count: 1 };
    applyRollup(metrics, [
      {
        project: null,
        totals: {
          counters: [
            { name: 'rivulet_subscription_halts_total', labels: webhook, value: 2 },
            { name: 'rivulet_appended_events_total', labels: '', value: 5 },
            { name: 'rivulet_appended_bytes_total', labels: '', value: 500 },
          ],
          histograms: [latency],
          halted: 1,
          lags: [{ path: '/a', key: 'k', lag: 3 }],
          connections: 1,
          sessions: 1,
        },
      },
      {
        project: 'shop',
        totals: {
          counters: [
            { name: 'rivulet_subscription_halts_total', labels: webhook, value: 1 },
            { name: 'rivulet_appended_events_total', labels: '', value: 2 },
            { name: 'rivulet_appended_bytes_total', labels: '', value: 20 },
          ],
          histograms: [latency],
          halted: 2,
          lags: [{ path: '/b', key: 'j', lag: 9 }],
          connections: 2,
          sessions: 3,
        },
      },
    ]);
    const text = metrics.registry.render();
    expect(text).toContain('rivulet_subscription_halts_total{action="webhook-post"} 3\n');
    expect(text).toContain('rivulet_subscription_halts_total{action="copy-to-stream"} 0\n');
    expect(text).toContain('rivulet_subscription_skips_total{action="webhook-post"} 0\n');
    expect(text).toContain('rivulet_subscriptions_halted 3\n');
    expect(text).toContain('rivulet_live_connections 3\n');
    expect(text).toContain('rivulet_rpc_sessions 4\n');
    expect(text).toContain('rivulet_appended_events_total 7\n');
    expect(text).toContain('rivulet_appended_bytes_total 520\n');
    expect(text).toContain('rivulet_delivery_latency_seconds_count{action="webhook-post"} 2\n');
    expect(text).toContain('rivulet_subscription_lag_events{key="j",project="shop",stream="/b"} 9\nrivulet_subscription_lag_events{key="k",project="",stream="/a"} 3\n');
  });
});
