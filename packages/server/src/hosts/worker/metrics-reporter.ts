/**
 * The stream object's side of the Worker host's /metrics roll-up (metrics-rollup.ts has the whole
 * design; docs/cloudflare.md §4.2): which committed events are counted facts, reading them from the
 * log after an offset, and the reporter that sends a stream's figures to its project's index —
 * its appended events and bytes among them, so that an object that only takes appends calls its
 * index once an interval while its head moves.
 */
import { EventType, INTERNAL_IDEMPOTENCY_PREFIX, type CommittedEvent } from '@rivulet/contract';
import type { ServerMetrics } from '../../engine/metrics.js';
import type { CancelTimer, Timer } from '../../ports/timer.js';
import {
  METRICS_REPORT_INTERVAL_MS,
  add,
  type Appended,
  type CountedFact,
  type HistogramDelta,
  type HistogramSeries,
  type MetricsMark,
  type MetricsReport,
} from './metrics-rollup.js';

const SKIP_AUDIT = `${INTERNAL_IDEMPOTENCY_PREFIX}skip:`;

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
 * A lifetime the index has no appended figures of is counted from its first event when its head
 * is at most this (it is new, or its object went away before its first report); beyond it, it held
 * events before this build first ran, and is counted from its head then (a baseline): its log is
 * not summed whole.
 */
export const FIRST_COUNT_MAX_EVENTS = 10_000;

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
  /** UTF-8 bytes of the JSON of the lifetime's events at offsets in (afterOffset, throughOffset]. */
  scanBytes(streamId: string, afterOffset: number, throughOffset: number): number;
  /** What the index counted of `streamId`. */
  mark(streamId: string): Promise<MetricsMark>;
  send(report: MetricsReport): Promise<void>;
  log(message: string, error: unknown): void;
}

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
  /**
   * Where the lifetime's appended bytes stand against the object's own counter (the engine's
   * rivulet_appended_bytes_total, from 0 when the instance started): `bytes` through `head` when
   * the counter read `counter`. Set once per lifetime, from the index's figures and the log after them.
   */
  private appendedBase: { streamId: string; head: number; bytes: number; counter: number; baseline: boolean } | null = null;
  /** The head last reported as the lifetime's appended events. */
  private sentAppended: { streamId: string; events: number } | null = null;

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

  /**
   * The lifetime's appended figures now (null until the index's were learnt). Read synchronously
   * just before the lifetime is destroyed, they are its final ones.
   */
  appended(streamId: string): Appended | null {
    const base = this.appendedBase;
    const subject = this.ports.subject();
    if (base === null || base.streamId !== streamId || subject?.streamId !== streamId) return null;
    const bytes = base.bytes + (this.ports.metrics.appendedBytes.get() - base.counter);
    return { events: subject.head, bytes, ...(base.baseline && this.sentAppended?.streamId !== streamId ? { baseline: true } : {}) };
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
    // Only a stream with subscriptions has halts and skips to count.
    const counts = subject.lags.length > 0 || this.facts.some((f) => f.streamId === subject!.streamId);
    if (this.appendedBase?.streamId !== subject.streamId || (counts && this.known?.streamId !== subject.streamId)) {
      const asked = subject.streamId;
      const mark = await this.ports.mark(asked);
      subject = this.ports.subject();
      // Destroyed meanwhile: the mark is of a lifetime that is gone; the next interval asks again.
      if (subject === null || subject.streamId !== asked) {
        this.poke();
        return null;
      }
      if (this.appendedBase?.streamId !== asked) {
        this.appendedBase = this.baseOf(asked, subject.head, mark.appended);
        // What the index holds needs no report.
        if (mark.appended) this.sentAppended = { streamId: asked, events: mark.appended.events };
      }
      if (counts && this.known?.streamId !== asked) {
        // What this instance did not see commit (committed before it started) is read from the log.
        const seen = new Set(this.facts.filter((f) => f.streamId === asked).map((f) => f.offset));
        for (const fact of this.ports.scan(mark.through)) if (!seen.has(fact.offset)) this.facts.push({ ...fact, streamId: asked });
        this.known = { streamId: asked, through: mark.through };
      }
    }
    const { streamId } = subject;
    const appended = this.appended(streamId);
    const appendedDue = appended !== null && (this.sentAppended?.streamId !== streamId || this.sentAppended.events !== appended.events);
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
    if (facts.length === 0 && deliveries.length === 0 && latency.length === 0 && !lagsChanged && !connectionsDue && !appendedDue) return null;
    // The deltas are now the report's: the baselines move, and the report is sent until acknowledged.
    for (const d of deliveries) this.sentDeliveries.set(d.labels, (this.sentDeliveries.get(d.labels) ?? 0) + d.by);
    for (const h of latency) {
      const sent = this.sentLatency.get(h.labels);
      this.sentLatency.set(h.labels, sent ? add(sent, h) : { counts: [...h.counts], sum: h.sum, count: h.count });
    }
    this.sentLags = lagsText;
    this.sentConnections = subject.connections;
    if (appendedDue) this.sentAppended = { streamId, events: appended.events };
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
      ...(appendedDue ? { appended } : {}),
    };
  }

  /**
   * Where a lifetime's appended bytes stand now: the index's figures and the bytes of the log's
   * events after them (committed by an instance that went away before reporting them). Called in
   * one synchronous step with the head and the counter it pairs them with.
   */
  private baseOf(streamId: string, head: number, counted: Appended | null): NonNullable<MetricsReporter['appendedBase']> {
    const counter = this.ports.metrics.appendedBytes.get();
    if (counted === null && head > FIRST_COUNT_MAX_EVENTS) return { streamId, head, bytes: 0, counter, baseline: true };
    const from = Math.min(counted?.events ?? 0, head);
    return { streamId, head, bytes: (counted?.bytes ?? 0) + this.ports.scanBytes(streamId, from, head), counter, baseline: false };
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
