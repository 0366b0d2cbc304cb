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
  type CountedFact,
  type MetricsReport,
} from './metrics-rollup.js';
import { MetricsReporter, countedFact, scanFacts, type ReporterPorts } from './metrics-reporter.js';

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
    expect(index.mark('s1')).toBe(10);
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
    expect(index.mark('s1')).toBe(12);
    expect(index.mark('unknown')).toBe(0);
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
    mark: async () => 0,
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
      mark: async () => 3,
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

  it('a stream without subscriptions or connections never calls its index', async () => {
    let marks = 0;
    const { reporter, sent, subject, tick } = reporterSetup({ mark: async () => ++marks });
    subject.lags = [];
    subject.head = 50;
    reporter.committed('s1', [{ ...haltAt(3), type: 'app/x' }], () => undefined);
    await tick();
    await tick();
    expect([marks, sent.length]).toEqual([0, 0]);
    // A connection opens: it is told, without asking for the mark (there is nothing to count).
    subject.connections = 1;
    reporter.poke();
    await tick();
    expect(marks).toBe(0);
    expect(sent).toEqual([expect.objectContaining({ through: 0, facts: [], connections: 1 })]);
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

describe('applyRollup (the entry)', () => {
  it('sums the projects, keeps 0 for every action, and labels lags by project', () => {
    const metrics = createServerMetrics();
    const latency = { name: 'rivulet_delivery_latency_seconds', labels: webhook, counts: new Array<number>(14).fill(1), sum: 1, count: 1 };
    applyRollup(metrics, [
      {
        project: null,
        totals: { counters: [{ name: 'rivulet_subscription_halts_total', labels: webhook, value: 2 }], histograms: [latency], halted: 1, lags: [{ path: '/a', key: 'k', lag: 3 }], connections: 1 },
      },
      {
        project: 'shop',
        totals: { counters: [{ name: 'rivulet_subscription_halts_total', labels: webhook, value: 1 }], histograms: [latency], halted: 2, lags: [{ path: '/b', key: 'j', lag: 9 }], connections: 2 },
      },
    ]);
    const text = metrics.registry.render();
    expect(text).toContain('rivulet_subscription_halts_total{action="webhook-post"} 3\n');
    expect(text).toContain('rivulet_subscription_halts_total{action="copy-to-stream"} 0\n');
    expect(text).toContain('rivulet_subscription_skips_total{action="webhook-post"} 0\n');
    expect(text).toContain('rivulet_subscriptions_halted 3\n');
    expect(text).toContain('rivulet_live_connections 3\n');
    expect(text).toContain('rivulet_delivery_latency_seconds_count{action="webhook-post"} 2\n');
    expect(text).toContain('rivulet_subscription_lag_events{key="j",project="shop",stream="/b"} 9\nrivulet_subscription_lag_events{key="k",project="",stream="/a"} 3\n');
  });
});
