/**
 * The Worker host's /metrics roll-up (docs/cloudflare.md §4.2). Deliveries, halts, skips and lags
 * happen inside each stream's Durable Object, while /metrics is answered by whichever entry isolate
 * takes the scrape, so each stream object reports its figures to its project's index object, which
 * keeps the project's totals in its SQLite, and a scrape reads every project's index.
 *
 * Three parts, one per place they run:
 * - `MetricsReporter`, in a stream object: at most one report per interval while its figures move
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
 */
import { EventType, INTERNAL_IDEMPOTENCY_PREFIX, type CommittedEvent } from '@rivulet/contract';
import { RECEIVER_ACTIONS, labelKey, type ServerMetrics } from '../../engine/metrics.js';
import type { SqlStorage } from '../../ports/storage.js';
import type { CancelTimer, Timer } from '../../ports/timer.js';

/** The index object that lists the projects with figures ("*" is no project id, so it is no project's index). */
export const metricsRegistryName = JSON.stringify(['*']);

/** How long a stream object gathers figures before it reports them. */
export const METRICS_REPORT_INTERVAL_MS = 1_000;

const HALTS = 'rivulet_subscription_halts_total';
const SKIPS = 'rivulet_subscription_skips_total';
const DELIVERIES = 'rivulet_deliveries_total';
const LATENCY = 'rivulet_delivery_latency_seconds';
/** Lags kept per stream and answered per project: the family shows the largest 100 (protocol §15.2). */
export const LAGS_SHOWN = 100;

const SKIP_AUDIT = `${INTERNAL_IDEMPOTENCY_PREFIX}skip:`;

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
}

/** A project's totals as its index answers them. */
export interface ProjectMetrics {
  counters: Array<{ name: string; labels: string; value: number }>;
  histograms: Array<{ name: string; labels: string; counts: number[]; sum: number; count: number }>;
  halted: number;
  lags: Array<{ path: string; key: string; lag: number }>;
  connections: number;
}

/** The counted fact an event is, if it is one (a copy of one is data of its stream, not a fact of it). */
export function countedFact(event: CommittedEvent, actionOf: (subscriptionKey: string) => string | undefined): CountedFact | undefined {
  if (event.source !== undefined) return undefined;
  let kind: CountedFact['kind'];
  if (event.type === EventType.subscriptionDeliveryHalted) kind = 'halt';
  else if (event.type === EventType.errorOccurred && event.idempotencyKey?.startsWith(SKIP_AUDIT)) kind = 'skip';
  else return undefined;
  const key = (event.payload as { subscriptionKey?: unknown } | undefined)?.subscriptionKey;
  const action = typeof key === 'string' ? actionOf(key) : undefined;
  return action === undefined ? undefined : { offset: event.offset, kind, action };
}

/** The event types countedFact looks at (for a scan of the log). */
export const COUNTED_TYPES: readonly string[] = [EventType.subscriptionDeliveryHalted, EventType.errorOccurred];

/** Events read from the log per page by scanFacts. */
export const SCAN_PAGE = 1_000;

/**
 * The halts and skips of a log after `afterOffset`: `read` answers up to `limit` events of
 * COUNTED_TYPES after an offset, in offset order, as stored JSON; pages follow until one is short.
 */
export function scanFacts(
  read: (afterOffset: number, limit: number) => ReadonlyArray<{ offset: number; json: string }>,
  afterOffset: number,
  actionOf: (subscriptionKey: string) => string | undefined,
  page = SCAN_PAGE,
): CountedFact[] {
  const facts: CountedFact[] = [];
  for (let after = afterOffset; ; ) {
    const events = read(after, page);
    for (const raw of events) {
      const fact = countedFact(JSON.parse(raw.json) as CommittedEvent, actionOf);
      if (fact) facts.push(fact);
    }
    if (events.length < page) return facts;
    after = events[events.length - 1]!.offset;
  }
}

/** What the reporter reads of its stream object. */
export interface ReporterPorts {
  timer: Timer;
  intervalMs?: number;
  /** The object's own registry (its engine counts deliveries there). */
  metrics: ServerMetrics;
  /** The stream's lifetime, head, lags and open connections now, or null when it has none. */
  subject(): { streamId: string; path: string; head: number; lags: Array<{ key: string; lag: number }>; connections: number } | null;
  /** The halts and skips of the current lifetime's log after `afterOffset`, through its head. */
  scan(afterOffset: number): CountedFact[];
  /** The offset through which the index counted the facts of `streamId`. */
  mark(streamId: string): Promise<number>;
  send(report: MetricsReport): Promise<void>;
  log(message: string, error: unknown): void;
}

type HistogramSeries = { counts: number[]; sum: number; count: number };

export class MetricsReporter {
  private readonly reporter = crypto.randomUUID();
  private seq = 0;
  private armed: CancelTimer | null = null;
  private chain: Promise<void> = Promise.resolve();
  /** A report made and not yet acknowledged: sent again as it is. */
  private pending: MetricsReport | null = null;
  /** Facts committed since the last report, by lifetime. */
  private facts: Array<CountedFact & { streamId: string }> = [];
  /** The index's mark of the lifetime reported to, once known. */
  private known: { streamId: string; through: number } | null = null;
  private readonly sentDeliveries = new Map<string, number>();
  private readonly sentLatency = new Map<string, HistogramSeries>();
  /** The lags last sent (none at first: a stream without subscriptions sends none). */
  private sentLags = '[]';
  private sentConnections = 0;

  constructor(private readonly ports: ReporterPorts) {}

  /** A commit of `streamId`: its halts and skips are owed to the index. */
  committed(streamId: string, events: readonly CommittedEvent[], actionOf: (subscriptionKey: string) => string | undefined): void {
    for (const event of events) {
      const fact = countedFact(event, actionOf);
      if (fact) this.facts.push({ ...fact, streamId });
    }
    this.poke();
  }

  /** Something may have moved: report within an interval. */
  poke(): void {
    if (this.armed) return;
    this.armed = this.ports.timer.set(this.ports.intervalMs ?? METRICS_REPORT_INTERVAL_MS, () => {
      this.armed = null;
      void this.flush();
    });
  }

  /**
   * The lifetime `streamId` was destroyed: a report of it not yet taken is dropped (its lags must
   * not come back after the index forgot them). Settles once no report of it is under way.
   */
  forget(streamId: string): Promise<void> {
    this.facts = this.facts.filter((f) => f.streamId !== streamId);
    this.chain = this.chain.then(() => {
      if (this.pending?.streamId === streamId) this.pending = null;
    });
    return this.chain;
  }

  /** Reports now what is owed (one report at a time); settles when it was sent or failed. */
  flush(): Promise<void> {
    this.chain = this.chain.then(() => this.flushNow());
    return this.chain;
  }

  private async flushNow(): Promise<void> {
    try {
      if (this.pending === null) this.pending = await this.next();
      if (this.pending === null) return;
      await this.ports.send(this.pending);
      this.pending = null;
      // More may follow while deliveries go on; a quiet interval makes no report and ends the chain.
      this.poke();
    } catch (error) {
      this.ports.log('could not report metrics to the project index (sent again within an interval)', error);
      this.poke();
    }
  }

  /** The next report, or null when nothing changed. */
  private async next(): Promise<MetricsReport | null> {
    let subject = this.ports.subject();
    if (subject === null) return null;
    // Only a stream with subscriptions has halts and skips to count: the others never ask.
    const counts = subject.lags.length > 0 || this.facts.some((f) => f.streamId === subject!.streamId);
    if (counts && this.known?.streamId !== subject.streamId) {
      const through = await this.ports.mark(subject.streamId);
      subject = this.ports.subject();
      if (subject === null) return null;
      // What this instance did not see commit (committed before it started) is read from the log.
      const seen = new Set(this.facts.filter((f) => f.streamId === subject!.streamId).map((f) => f.offset));
      for (const fact of this.ports.scan(through)) if (!seen.has(fact.offset)) this.facts.push({ ...fact, streamId: subject.streamId });
      this.known = { streamId: subject.streamId, through };
    }
    const { streamId } = subject;
    const known = this.known?.streamId === streamId ? this.known : null;
    const facts = known
      ? this.facts.filter((f) => f.streamId === streamId && f.offset > known.through).map(({ offset, kind, action }) => ({ offset, kind, action }))
      : [];
    const deliveries = this.counterDeltas();
    const latency = this.histogramDeltas();
    const lagsText = JSON.stringify(subject.lags);
    const lagsChanged = lagsText !== this.sentLags;
    // Open connections are told every interval: a count the index stops hearing about is dropped
    // (the object went away, and its connections with it).
    const connectionsDue = subject.connections !== this.sentConnections || subject.connections > 0;
    if (facts.length === 0 && deliveries.length === 0 && latency.length === 0 && !lagsChanged && !connectionsDue) return null;
    // The deltas are now the report's: the baselines move, and the report is sent until acknowledged.
    for (const d of deliveries) this.sentDeliveries.set(d.labels, (this.sentDeliveries.get(d.labels) ?? 0) + d.by);
    for (const h of latency) {
      const sent = this.sentLatency.get(h.labels);
      this.sentLatency.set(h.labels, sent ? add(sent, h) : { counts: [...h.counts], sum: h.sum, count: h.count });
    }
    this.sentLags = lagsText;
    this.sentConnections = subject.connections;
    this.facts = [];
    if (known) known.through = Math.max(known.through, subject.head);
    return {
      streamId,
      path: subject.path,
      reporter: this.reporter,
      seq: ++this.seq,
      // Without the index's mark nothing was counted here: the mark stays where it is.
      through: known ? known.through : 0,
      facts,
      deliveries,
      latency,
      ...(lagsChanged ? { lags: subject.lags } : {}),
      ...(connectionsDue ? { connections: subject.connections } : {}),
    };
  }

  private counterDeltas(): Array<{ labels: string; by: number }> {
    const out: Array<{ labels: string; by: number }> = [];
    for (const [labels, value] of this.ports.metrics.deliveries.values) {
      const by = value - (this.sentDeliveries.get(labels) ?? 0);
      if (by !== 0) out.push({ labels, by });
    }
    return out;
  }

  private histogramDeltas(): HistogramDelta[] {
    const out: HistogramDelta[] = [];
    for (const [labels, s] of this.ports.metrics.deliveryLatency.series) {
      const sent = this.sentLatency.get(labels);
      const count = s.count - (sent?.count ?? 0);
      if (count === 0) continue;
      out.push({ labels, counts: s.counts.map((c, i) => c - (sent?.counts[i] ?? 0)), sum: s.sum - (sent?.sum ?? 0), count });
    }
    return out;
  }
}

function add(a: HistogramSeries, b: HistogramSeries): HistogramSeries {
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
    // In the deployment's registry object only: the projects whose indexes hold figures.
    storage.run(`CREATE TABLE IF NOT EXISTS metric_projects (project TEXT PRIMARY KEY)`);
  }

  /** The offset through which the facts of `streamId` were counted (0: none yet). */
  mark(streamId: string): number {
    return this.storage.exec<{ through: number }>(`SELECT through FROM metric_streams WHERE stream_id = ?`, streamId)[0]?.through ?? 0;
  }

  /** Applies a report once; answers whether it was new. */
  apply(report: MetricsReport): boolean {
    return this.storage.transaction(() => {
      const row = this.storage.exec<{ reporter: string; seq: number; through: number }>(
        `SELECT reporter, seq, through FROM metric_streams WHERE stream_id = ?`,
        report.streamId,
      )[0];
      if (row && row.reporter === report.reporter && row.seq >= report.seq) return false;
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

  /** A destroyed lifetime: its lags are gone; the counters keep what happened. */
  forget(streamId: string): void {
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
    };
  }

  registerProject(project: string | null): void {
    this.storage.run(`INSERT OR IGNORE INTO metric_projects (project) VALUES (?)`, project ?? '');
  }

  projects(): Array<string | null> {
    return this.storage.exec<{ project: string }>(`SELECT project FROM metric_projects ORDER BY project`).map((r) => (r.project === '' ? null : r.project));
  }
}

/**
 * Folds every project's totals into the entry's families: the halt, skip and delivery counters,
 * the latency histogram, the halted and live-connection gauges and the largest lags. These families count nothing in
 * the entry itself, so the roll-up replaces what they hold.
 */
export function applyRollup(metrics: ServerMetrics, projects: ReadonlyArray<{ project: string | null; totals: ProjectMetrics }>): void {
  const counters = new Map<string, Map<string, number>>();
  const histograms = new Map<string, HistogramSeries>();
  let halted = 0;
  let connections = 0;
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
  metrics.deliveryLatency.series.clear();
  for (const [labels, s] of histograms) metrics.deliveryLatency.series.set(labels, s);
  metrics.subscriptionsHalted.collect = () => [{ labels: {}, value: halted }];
  metrics.liveConnections.collect = () => [{ labels: {}, value: connections }];
  lags.sort((a, b) => b.value - a.value);
  const shown = lags.slice(0, LAGS_SHOWN);
  metrics.subscriptionLag.collect = () => shown;
}
