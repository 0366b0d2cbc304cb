/**
 * The metrics only the Node host has (protocol §15.2): process and runtime metrics from
 * prom-client's default collectors (CPU, resident memory, heap, GC, open file descriptors, the
 * event-loop lag at scrape time) and the event-loop delay percentiles from a monitor that pauses
 * while the process is idle (EventLoopDelay), the storage adapter's commits (group size, commit and fsync durations), the sizes
 * of the database and its WAL read at scrape time, and the open RPC sessions. The rivulet_*
 * families both hosts share stay in engine/metrics.ts; prom-client only renders the process ones
 * (decision 006).
 *
 * The process metrics describe the process, not a server: one prom-client registry per process,
 * made on first use, serves every server in it (tests start many).
 */
import { statSync } from 'node:fs';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import client from 'prom-client';
import type { ServerMetrics } from '../../engine/metrics.js';
import type { ReadCache } from '../../engine/read-cache.js';
import type { CommitObserver } from '../../ports/storage.js';

let processRegistry: client.Registry | undefined;

/**
 * How often the event-loop delay monitor samples, in ms. prom-client's default of 10 ms wakes an
 * idle server 100 times a second, most of its idle CPU (docs/operations.md "Tuning knobs", Idle); a stall
 * longer than this still shows in full, since the late sample measures it.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * After this long with no request and no commit the delay monitor stops sampling, so that an idle
 * server is not woken at all (docs/operations.md "Tuning knobs", Idle); the next request or commit
 * starts it again.
 */
export const EVENT_LOOP_IDLE_MS = 10_000;

/**
 * The delay monitor behind the `nodejs_eventloop_lag_*` families, sampling only while the process
 * has work. prom-client's own monitor cannot be paused, so it is made never to sample (its
 * resolution set past any uptime) and its families are served from this one under the same names.
 */
export class EventLoopDelay {
  private readonly histogram: IntervalHistogram;
  private sampling = false;
  /** Whether `busy` was called since the last idle check. */
  private touched = false;
  private check: ReturnType<typeof setInterval> | undefined;

  constructor(
    sampleMs = EVENT_LOOP_SAMPLE_MS,
    private readonly idleMs = EVENT_LOOP_IDLE_MS,
  ) {
    this.histogram = monitorEventLoopDelay({ resolution: sampleMs });
  }

  /** Whether the monitor samples now. */
  get active(): boolean {
    return this.sampling;
  }

  /** Work arrived: sample while it lasts. Cheap enough to call per request. */
  busy(): void {
    if (this.sampling) {
      this.touched = true;
      return;
    }
    this.sampling = true;
    this.touched = false;
    this.histogram.enable();
    // Checked once per idle period: a period without `busy` pauses the sampling.
    this.check = setInterval(() => {
      if (this.touched) this.touched = false;
      else this.pause();
    }, this.idleMs);
    this.check.unref();
  }

  pause(): void {
    if (!this.sampling) return;
    this.sampling = false;
    this.histogram.disable();
    clearInterval(this.check);
    this.check = undefined;
  }

  /**
   * The delays sampled since the previous read, in seconds, then forgotten; NaN for each figure
   * when no sample fell (a read right after the previous one, or a pause before any sample).
   */
  take(): { min: number; max: number; mean: number; stddev: number; p50: number; p90: number; p99: number } {
    const h = this.histogram;
    const none = h.count === 0;
    const seconds = (ns: number) => (none ? Number.NaN : ns / 1e9);
    const figures = {
      min: seconds(h.min),
      max: seconds(h.max),
      mean: seconds(h.mean),
      stddev: seconds(h.stddev),
      p50: seconds(h.percentile(50)),
      p90: seconds(h.percentile(90)),
      p99: seconds(h.percentile(99)),
    };
    h.reset();
    return figures;
  }
}

/** prom-client's monitor samples this seldom (about 24 days): in effect never. */
const NEVER_MS = 2 ** 31 - 1;

let delayMonitor: EventLoopDelay | undefined;

/** The process's delay monitor (one per process, like the registry its families are in). */
export function eventLoopDelay(): EventLoopDelay {
  processMetrics();
  return delayMonitor!;
}

const LAG_FIGURES = [
  ['min', 'Shortest event-loop delay sampled since the previous scrape'],
  ['max', 'Longest event-loop delay sampled since the previous scrape'],
  ['mean', 'Mean event-loop delay sampled since the previous scrape'],
  ['stddev', 'Standard deviation of the event-loop delays sampled since the previous scrape'],
  ['p50', 'Median event-loop delay sampled since the previous scrape'],
  ['p90', '90th percentile of the event-loop delays sampled since the previous scrape'],
  ['p99', '99th percentile of the event-loop delays sampled since the previous scrape'],
] as const;

function processMetrics(): client.Registry {
  if (!processRegistry) {
    const registry = new client.Registry();
    client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: NEVER_MS });
    const monitor = new EventLoopDelay();
    // The same family names, read from the monitor that pauses. Registered in this order, `min`
    // is collected first at each scrape and sets every figure from one take().
    const gauges = new Map<string, client.Gauge>();
    for (const [figure, help] of LAG_FIGURES) {
      const name = `nodejs_eventloop_lag_${figure}_seconds`;
      registry.removeSingleMetric(name);
      const gauge = new client.Gauge({
        name,
        help,
        registers: [registry],
        ...(figure === 'min'
          ? {
              collect() {
                const taken = monitor.take();
                for (const [f] of LAG_FIGURES) gauges.get(f)!.set(taken[f]);
              },
            }
          : {}),
      });
      gauges.set(figure, gauge);
    }
    monitor.busy();
    delayMonitor = monitor;
    processRegistry = registry;
  }
  return processRegistry;
}

/** Transactions per group commit: 1 alone, up to the appends of one busy event-loop turn. */
const GROUP_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
/** Seconds: a commit without a sync takes microseconds, an fsync from ~0.1 ms to many ms. */
const COMMIT_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

/** The size of a file in bytes, 0 while it does not exist. */
function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

export interface NodeMetricsOptions {
  /** The database file; its WAL is the file beside it with `-wal` appended. */
  databaseFile: string;
  /** Open RPC sessions, read at scrape time. */
  rpcSessions: () => number;
  /** The read cache, if the server has one (its size and pages are read at scrape time). */
  readCache?: ReadCache | undefined;
}

/**
 * Adds the Node host's families to `metrics.registry` and the process metrics to its scrape;
 * answers the observer to give the SQLite adapter (`onCommit`).
 */
export function nodeMetrics(metrics: ServerMetrics, options: NodeMetricsOptions): CommitObserver {
  const { registry } = metrics;
  const groupSize = registry.histogram('rivulet_storage_group_commit_transactions', 'Transactions committed together in one group commit', GROUP_BUCKETS);
  const commit = registry.histogram('rivulet_storage_commit_duration_seconds', 'One group commit, from its start until it is durable (a running WAL fsync waited for and its own included)', COMMIT_BUCKETS);
  const fsync = registry.histogram('rivulet_storage_fsync_duration_seconds', 'One WAL fsync, counted once however many group commits it made durable', COMMIT_BUCKETS);
  registry.gauge('rivulet_database_bytes', 'Size of the database file').collect = () => [{ labels: {}, value: sizeOf(options.databaseFile) }];
  registry.gauge('rivulet_database_wal_bytes', 'Size of the database\'s write-ahead log').collect = () => [
    { labels: {}, value: sizeOf(`${options.databaseFile}-wal`) },
  ];
  registry.gauge('rivulet_rpc_sessions', 'Open RPC sessions (/v1/rpc)').collect = () => [{ labels: {}, value: options.rpcSessions() }];
  const readCache = options.readCache;
  if (readCache) {
    registry.gauge('rivulet_read_cache_bytes', 'Memory the read cache holds, estimated (texts and a per-event overhead)').collect = () => [
      { labels: {}, value: readCache.stats().bytes },
    ];
    registry.gauge('rivulet_read_cache_pages', 'Joined pages read since start, by where they came from (memory: hit; SQL: miss)').collect = () => {
      const { hits, misses } = readCache.stats();
      return [
        { labels: { outcome: 'hit' }, value: hits },
        { labels: { outcome: 'miss' }, value: misses },
      ];
    };
  }
  const processes = processMetrics();
  // prom-client 15 writes a NaN sample as `Nan`; the text format spells it `NaN`. The delay
  // monitor's figures are NaN when no sample fell since the scrape before (two scrapes closer
  // than EVENT_LOOP_SAMPLE_MS, or the monitor paused while idle).
  registry.addSource(async () => (await processes.metrics()).replace(/ Nan$/gm, ' NaN'));
  const delay = eventLoopDelay();
  return ({ transactions, seconds, syncSeconds }) => {
    delay.busy();
    groupSize.observe(transactions);
    commit.observe(seconds);
    if (syncSeconds !== null) fsync.observe(syncSeconds);
  };
}
