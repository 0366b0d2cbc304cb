/**
 * The metrics only the Node host has (protocol §15.2): process and runtime metrics from
 * prom-client's default collectors (CPU, resident memory, heap, event-loop lag, GC, open file
 * descriptors), the storage adapter's commits (group size, commit and fsync durations), the sizes
 * of the database and its WAL read at scrape time, and the open RPC sessions. The rivulet_*
 * families both hosts share stay in engine/metrics.ts; prom-client only renders the process ones
 * (decision 006).
 *
 * The process metrics describe the process, not a server: one prom-client registry per process,
 * made on first use, serves every server in it (tests start many).
 */
import { statSync } from 'node:fs';
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

function processMetrics(): client.Registry {
  if (!processRegistry) {
    processRegistry = new client.Registry();
    client.collectDefaultMetrics({ register: processRegistry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
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
  // monitor's mean and percentiles are NaN when no sample fell since the scrape before (two
  // scrapes closer than EVENT_LOOP_SAMPLE_MS).
  registry.addSource(async () => (await processes.metrics()).replace(/ Nan$/gm, ' NaN'));
  return ({ transactions, seconds, syncSeconds }) => {
    groupSize.observe(transactions);
    commit.observe(seconds);
    if (syncSeconds !== null) fsync.observe(syncSeconds);
  };
}
