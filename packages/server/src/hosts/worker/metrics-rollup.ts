/**
 * The Worker host's /metrics roll-up (docs/cloudflare.md §4.2). Deliveries, halts, skips and lags
 * happen inside each stream's Durable Object, while /metrics is answered by whichever entry isolate
 * takes the scrape, so each stream object reports its figures to its project's index object, which
 * keeps the project's totals in its SQLite, and a scrape reads every project's index.
 *
 * Three parts, one per place they run:
 * - `MetricsReporter` (metrics-reporter.ts), in a stream object: at most one report per interval while its figures move
 *   (the commits, calls and alarms of the object poke it; a quiet interval ends the reports), each
 *   carrying what changed since the last one — counter and histogram deltas of the object's own
 *   registry, the halts and skips committed to its log, its subscriptions' lags — and, every
 *   interval while any is open, its count of live connections (which die with the object, so the
 *   index counts a stream's only while it keeps hearing of them).
 * - `IndexMetrics`, in the index object: applies reports once each and answers the project's totals.
 * - `applyRollup`, in the entry: folds every project's totals into the families /metrics renders.
 *
 * Counted once: a report is sent again unchanged until the index acknowledged it, and the index
 * applies one report of a reporter (an object instance) once, by sequence number. Halts and skips
 * are counted from the committed facts of the log — `subscription-delivery-halted` and the skip
 * audit, never a copy — by offset: the index keeps per stream lifetime the offset through which it
 * counted them, so a fact is counted once whichever report carries it, and a new object instance
 * (after an eviction or a restart) first asks for that offset and reads the facts after it from
 * its log, so a halt committed just before a crash is still counted. Delivery counts and latencies
 * live in the object's memory until reported: a crash loses at most the last interval's.
 *
 * Appended events and bytes (the engine's rivulet_appended_* counters: every event a commit
 * published, platform facts and received copies included, and the UTF-8 bytes of its JSON) are
 * derived from committed facts, as absolute figures per stream lifetime: the events are the
 * lifetime's head (offsets are dense, one per committed event), the bytes those of its log's events
 * through that head. The index keeps, per lifetime, the figures it added to the counters and adds
 * only what a report's figures exceed them by, so a report applied again, late or from another
 * instance adds nothing twice. A new instance learns the index's figures and sums the bytes of the
 * log's events after them (what an instance that went away committed and did not report), then
 * follows the engine's own byte counter. A destroyed lifetime's final figures travel with its
 * removal from the index, and what was added stays in the counters.
 *
 * RPC sessions live in the project's hub object: it tells the index its count of open sessions
 * every interval while any is open (sessions-reporter.ts), and the index sums the counts it heard
 * recently, as it does for live connections.
 */
import { RECEIVER_ACTIONS, createServerMetrics, labelKey, type Gauge, type ServerMetrics } from '../../engine/metrics.js';
import type { SqlStorage } from '../../ports/storage.js';

/** The index object that lists the projects with figures ("*" is no project id, so it is no project's index). */
export const metricsRegistryName = JSON.stringify(['*']);

/** How long a stream object gathers figures before it reports them. */
export const METRICS_REPORT_INTERVAL_MS = 1_000;

const HALTS = 'rivulet_subscription_halts_total';
const SKIPS = 'rivulet_subscription_skips_total';
const DELIVERIES = 'rivulet_deliveries_total';
const LATENCY = 'rivulet_delivery_latency_seconds';
const APPENDED_EVENTS = 'rivulet_appended_events_total';
const APPENDED_BYTES = 'rivulet_appended_bytes_total';
/** Lags kept per stream and answered per project: the family shows the largest 100 (protocol §15.2). */
export const LAGS_SHOWN = 100;


/** A halt or skip committed to a stream's log. */
export interface CountedFact {
  offset: number;
  kind: 'halt' | 'skip';
  action: string;
}

export interface HistogramDelta {
  labels: string;
  counts: number[];
  sum: number;
  count: number;
}

/** One report of one stream object to its project's index. */
export interface MetricsReport {
  streamId: string;
  path: string;
  /** The object instance that sent it, and its number among that instance's reports. */
  reporter: string;
  seq: number;
  /** The stream's head when the report was made: every halt and skip through it is in `facts` or an earlier report. */
  through: number;
  facts: CountedFact[];
  /** Increments of rivulet_deliveries_total by label key. */
  deliveries: Array<{ labels: string; by: number }>;
  latency: HistogramDelta[];
  /** The stream's subscription lags (replacing the last ones), or absent when unchanged. */
  lags?: Array<{ key: string; lag: number }>;
  /** The stream's open live connections and waits: sent when it changed, and every interval while above 0. */
  connections?: number;
  /** The lifetime's appended events and their bytes through its head, as absolute figures: sent when the head moved. */
  appended?: Appended;
}

/**
 * What a stream lifetime appended through its head: `events` is the head (offsets are dense from 1,
 * one per committed event), `bytes` the UTF-8 bytes of those events' JSON. A `baseline` is where a
 * lifetime that already held events before it was first reported starts to be counted (nothing
 * before it is added).
 */
export interface Appended {
  events: number;
  bytes: number;
  baseline?: boolean;
}

/** What the index counted of a stream lifetime: halts and skips through an offset, appended events and bytes (null: none yet). */
export interface MetricsMark {
  through: number;
  appended: Appended | null;
}

/** A project's totals as its index answers them. */
export interface ProjectMetrics {
  counters: Array<{ name: string; labels: string; value: number }>;
  histograms: Array<{ name: string; labels: string; counts: number[]; sum: number; count: number }>;
  halted: number;
  lags: Array<{ path: string; key: string; lag: number }>;
  connections: number;
  /** Open RPC sessions of the project's hub, as it last told them (and recently). */
  sessions: number;
}

export type HistogramSeries = { counts: number[]; sum: number; count: number };

export function add(a: HistogramSeries, b: HistogramSeries): HistogramSeries {
  return { counts: a.counts.map((c, i) => c + (b.counts[i] ?? 0)), sum: a.sum + b.sum, count: a.count + b.count };
}

/** A stream's count of open connections is counted while its object told it this recently. */
export const CONNECTIONS_FRESH_MS = 3 * METRICS_REPORT_INTERVAL_MS;

/** The index object's side: the project's totals, in its SQLite. */
export class IndexMetrics {
  constructor(
    private readonly storage: SqlStorage,
    private readonly now: () => number = Date.now,
  ) {
    // Per stream lifetime: the last report applied (by reporter and sequence) and the offset
    // through which its halts and skips were counted.
    storage.run(
      `CREATE TABLE IF NOT EXISTS metric_streams (stream_id TEXT PRIMARY KEY, reporter TEXT NOT NULL, seq INTEGER NOT NULL, through INTEGER NOT NULL)`,
    );
    storage.run(`CREATE TABLE IF NOT EXISTS metric_counters (name TEXT NOT NULL, labels TEXT NOT NULL, value REAL NOT NULL, PRIMARY KEY (name, labels))`);
    storage.run(
      `CREATE TABLE IF NOT EXISTS metric_histograms (name TEXT NOT NULL, labels TEXT NOT NULL, counts TEXT NOT NULL, sum REAL NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (name, labels))`,
    );
    storage.run(`CREATE TABLE IF NOT EXISTS metric_lags (stream_id TEXT NOT NULL, path TEXT NOT NULL, key TEXT NOT NULL, lag INTEGER NOT NULL, PRIMARY KEY (stream_id, key))`);
    // The largest lags are read in order, without sorting every row.
    storage.run(`CREATE INDEX IF NOT EXISTS metric_lags_by_lag ON metric_lags (lag)`);
    storage.run(`CREATE TABLE IF NOT EXISTS metric_connections (stream_id TEXT PRIMARY KEY, count INTEGER NOT NULL, at INTEGER NOT NULL)`);
    // Per stream lifetime: the appended events (its head) and bytes already added to the counters.
    storage.run(`CREATE TABLE IF NOT EXISTS metric_appended (stream_id TEXT PRIMARY KEY, events INTEGER NOT NULL, bytes INTEGER NOT NULL)`);
    // Per hub instance: its open RPC sessions, counted while it keeps telling them.
    storage.run(`CREATE TABLE IF NOT EXISTS metric_sessions (reporter TEXT PRIMARY KEY, count INTEGER NOT NULL, at INTEGER NOT NULL)`);
    // In the deployment's registry object only: the projects whose indexes hold figures.
    storage.run(`CREATE TABLE IF NOT EXISTS metric_projects (project TEXT PRIMARY KEY)`);
  }

  /** What was counted of `streamId`: the offset through which its facts were (0: none yet), its appended figures. */
  mark(streamId: string): MetricsMark {
    const through = this.storage.exec<{ through: number }>(`SELECT through FROM metric_streams WHERE stream_id = ?`, streamId)[0]?.through ?? 0;
    const appended = this.storage.exec<{ events: number; bytes: number }>(`SELECT events, bytes FROM metric_appended WHERE stream_id = ?`, streamId)[0];
    return { through, appended: appended ? { events: appended.events, bytes: appended.bytes } : null };
  }

  /**
   * Adds what a lifetime appended beyond what was added of it already. The figures are absolute
   * and grow with the head, so a report applied again, late or from a new instance adds nothing twice.
   */
  private addAppended(streamId: string, appended: Appended): void {
    const row = this.storage.exec<{ events: number; bytes: number }>(`SELECT events, bytes FROM metric_appended WHERE stream_id = ?`, streamId)[0];
    if (row && appended.events <= row.events) return;
    if (!(row === undefined && appended.baseline)) {
      this.addCounter(APPENDED_EVENTS, '', appended.events - (row?.events ?? 0));
      this.addCounter(APPENDED_BYTES, '', Math.max(0, appended.bytes - (row?.bytes ?? 0)));
    }
    this.storage.run(`INSERT OR REPLACE INTO metric_appended (stream_id, events, bytes) VALUES (?, ?, ?)`, streamId, appended.events, appended.bytes);
  }

  /** Applies a report once; answers whether it was new. */
  apply(report: MetricsReport): boolean {
    return this.storage.transaction(() => {
      const row = this.storage.exec<{ reporter: string; seq: number; through: number }>(
        `SELECT reporter, seq, through FROM metric_streams WHERE stream_id = ?`,
        report.streamId,
      )[0];
      if (row && row.reporter === report.reporter && row.seq >= report.seq) return false;
      if (report.appended) this.addAppended(report.streamId, report.appended);
      const counted = row?.through ?? 0;
      for (const fact of report.facts) {
        if (fact.offset > counted) this.addCounter(fact.kind === 'halt' ? HALTS : SKIPS, labelKey({ action: fact.action }), 1);
      }
      for (const d of report.deliveries) this.addCounter(DELIVERIES, d.labels, d.by);
      for (const h of report.latency) this.addHistogram(LATENCY, h);
      if (report.lags) {
        this.storage.run(`DELETE FROM metric_lags WHERE stream_id = ?`, report.streamId);
        // A stream's own largest lags are all a project's largest could need of it.
        const largest = report.lags.filter((l) => l.lag > 0).sort((a, b) => b.lag - a.lag).slice(0, LAGS_SHOWN);
        for (const l of largest) {
          this.storage.run(`INSERT INTO metric_lags (stream_id, path, key, lag) VALUES (?, ?, ?, ?)`, report.streamId, report.path, l.key, l.lag);
        }
      }
      if (report.connections === 0) this.storage.run(`DELETE FROM metric_connections WHERE stream_id = ?`, report.streamId);
      else if (report.connections !== undefined) {
        this.storage.run(`INSERT OR REPLACE INTO metric_connections (stream_id, count, at) VALUES (?, ?, ?)`, report.streamId, report.connections, this.now());
      }
      this.storage.run(
        `INSERT OR REPLACE INTO metric_streams (stream_id, reporter, seq, through) VALUES (?, ?, ?, ?)`,
        report.streamId,
        report.reporter,
        report.seq,
        Math.max(counted, report.through),
      );
      return true;
    });
  }

  /**
   * A destroyed lifetime: its lags are gone; the counters keep what happened, `appended` (its
   * figures as the lifetime ended, when its object knew them) included.
   */
  forget(streamId: string, appended?: Appended): void {
    this.storage.transaction(() => {
      if (appended) this.addAppended(streamId, appended);
      this.storage.run(`DELETE FROM metric_appended WHERE stream_id = ?`, streamId);
      this.forgetRows(streamId);
    });
  }

  private forgetRows(streamId: string): void {
    this.storage.run(`DELETE FROM metric_lags WHERE stream_id = ?`, streamId);
    this.storage.run(`DELETE FROM metric_streams WHERE stream_id = ?`, streamId);
    this.storage.run(`DELETE FROM metric_connections WHERE stream_id = ?`, streamId);
  }

  private addCounter(name: string, labels: string, by: number): void {
    this.storage.run(
      `INSERT INTO metric_counters (name, labels, value) VALUES (?, ?, ?) ON CONFLICT (name, labels) DO UPDATE SET value = value + excluded.value`,
      name,
      labels,
      by,
    );
  }

  private addHistogram(name: string, h: HistogramDelta): void {
    const row = this.storage.exec<{ counts: string; sum: number; count: number }>(
      `SELECT counts, sum, count FROM metric_histograms WHERE name = ? AND labels = ?`,
      name,
      h.labels,
    )[0];
    const next = row ? add({ counts: JSON.parse(row.counts) as number[], sum: row.sum, count: row.count }, h) : h;
    this.storage.run(
      `INSERT OR REPLACE INTO metric_histograms (name, labels, counts, sum, count) VALUES (?, ?, ?, ?, ?)`,
      name,
      h.labels,
      JSON.stringify(next.counts),
      next.sum,
      next.count,
    );
  }

  /** The project's totals; `halted` is the index's count of halted subscriptions (the listing's). */
  totals(halted: number): ProjectMetrics {
    return {
      counters: this.storage.exec<{ name: string; labels: string; value: number }>(`SELECT name, labels, value FROM metric_counters`),
      histograms: this.storage
        .exec<{ name: string; labels: string; counts: string; sum: number; count: number }>(`SELECT name, labels, counts, sum, count FROM metric_histograms`)
        .map((r) => ({ ...r, counts: JSON.parse(r.counts) as number[] })),
      halted,
      lags: this.storage.exec<{ path: string; key: string; lag: number }>(`SELECT path, key, lag FROM metric_lags ORDER BY lag DESC LIMIT ?`, LAGS_SHOWN),
      connections: this.storage.exec<{ n: number }>(`SELECT coalesce(sum(count), 0) AS n FROM metric_connections WHERE at >= ?`, this.now() - CONNECTIONS_FRESH_MS)[0]!.n,
      sessions: this.storage.exec<{ n: number }>(`SELECT coalesce(sum(count), 0) AS n FROM metric_sessions WHERE at >= ?`, this.now() - CONNECTIONS_FRESH_MS)[0]!.n,
    };
  }

  /** A hub instance's open RPC sessions (0: it has none, and is no longer counted). */
  reportSessions(reporter: string, count: number): void {
    if (count === 0) this.storage.run(`DELETE FROM metric_sessions WHERE reporter = ?`, reporter);
    else this.storage.run(`INSERT OR REPLACE INTO metric_sessions (reporter, count, at) VALUES (?, ?, ?)`, reporter, count, this.now());
  }

  registerProject(project: string | null): void {
    this.storage.run(`INSERT OR IGNORE INTO metric_projects (project) VALUES (?)`, project ?? '');
  }

  projects(): Array<string | null> {
    return this.storage.exec<{ project: string }>(`SELECT project FROM metric_projects ORDER BY project`).map((r) => (r.project === '' ? null : r.project));
  }
}

/** The entry's families: every host's, and the RPC session gauge (the Node host's family, fed here by the hubs' reports). */
export type WorkerMetrics = ServerMetrics & { rpcSessions: Gauge };

export function createWorkerMetrics(version: string): WorkerMetrics {
  const metrics = createServerMetrics(undefined, { version });
  return { ...metrics, rpcSessions: metrics.registry.gauge('rivulet_rpc_sessions', 'Open RPC sessions (/v1/rpc)') };
}

/**
 * Folds every project's totals into the entry's families: the halt, skip, delivery and appended
 * counters, the latency histogram, the halted, live-connection and RPC-session gauges and the
 * largest lags. These families count nothing in the entry itself, so the roll-up replaces what they hold.
 */
export function applyRollup(metrics: ServerMetrics & { rpcSessions?: Gauge }, projects: ReadonlyArray<{ project: string | null; totals: ProjectMetrics }>): void {
  const counters = new Map<string, Map<string, number>>();
  const histograms = new Map<string, HistogramSeries>();
  let halted = 0;
  let connections = 0;
  let sessions = 0;
  const lags: Array<{ labels: Record<string, string>; value: number }> = [];
  for (const { project, totals } of projects) {
    for (const c of totals.counters) {
      let family = counters.get(c.name);
      if (!family) counters.set(c.name, (family = new Map()));
      family.set(c.labels, (family.get(c.labels) ?? 0) + c.value);
    }
    for (const h of totals.histograms) {
      if (h.name !== LATENCY) continue;
      const sum = histograms.get(h.labels);
      histograms.set(h.labels, sum ? add(sum, h) : { counts: [...h.counts], sum: h.sum, count: h.count });
    }
    halted += totals.halted;
    connections += totals.connections;
    sessions += totals.sessions;
    for (const l of totals.lags) lags.push({ labels: { project: project ?? '', stream: l.path, key: l.key }, value: l.lag });
  }
  const replace = (counter: { values: Map<string, number> }, name: string, zeroes: boolean) => {
    counter.values.clear();
    if (zeroes) for (const action of RECEIVER_ACTIONS) counter.values.set(labelKey({ action }), 0);
    for (const [labels, value] of counters.get(name) ?? []) counter.values.set(labels, value);
  };
  replace(metrics.subscriptionHalts, HALTS, true);
  replace(metrics.subscriptionSkips, SKIPS, true);
  replace(metrics.deliveries, DELIVERIES, false);
  replace(metrics.appendedEvents, APPENDED_EVENTS, false);
  replace(metrics.appendedBytes, APPENDED_BYTES, false);
  metrics.deliveryLatency.series.clear();
  for (const [labels, s] of histograms) metrics.deliveryLatency.series.set(labels, s);
  metrics.subscriptionsHalted.collect = () => [{ labels: {}, value: halted }];
  metrics.liveConnections.collect = () => [{ labels: {}, value: connections }];
  if (metrics.rpcSessions) metrics.rpcSessions.collect = () => [{ labels: {}, value: sessions }];
  lags.sort((a, b) => b.value - a.value);
  const shown = lags.slice(0, LAGS_SHOWN);
  metrics.subscriptionLag.collect = () => shown;
}
