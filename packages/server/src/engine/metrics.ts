/**
 * A small Prometheus registry (text exposition format 0.0.4): counters, gauges and histograms with
 * labels. No dependency on Node, so both hosts share it (decision 006 weighs it against
 * prom-client). Label sets must stay bounded: callers use route templates and enumerations, never
 * raw paths, except where a gauge is capped explicitly. A host may add text rendered elsewhere
 * (`addSource`: the Node host's process and runtime metrics), which `scrape` appends.
 */

import type { ReceiverAction } from '@rivulet/contract';

type Labels = Record<string, string>;

interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
}

const DEFAULT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

// Every append touches several series, so the key of a label set is built without intermediate
// arrays, and values with nothing to escape (nearly all) skip the replacements.
/** The key of a label set as series are stored and rendered: `a="x",b="y"`, names sorted. */
export function labelKey(labels: Labels | undefined): string {
  if (labels === undefined) return '';
  const keys = Object.keys(labels);
  if (keys.length === 0) return '';
  // Callers nearly always write the labels in order already; sorting costs more than checking.
  for (let i = 1; i < keys.length; i++) {
    if (keys[i - 1]! > keys[i]!) {
      keys.sort();
      break;
    }
  }
  let key = '';
  for (let i = 0; i < keys.length; i++) key += `${i === 0 ? '' : ','}${keys[i]}="${escapeLabel(labels[keys[i]!]!)}"`;
  return key;
}

const NEEDS_ESCAPE = /[\\\n"]/;

function escapeLabel(value: string): string {
  if (!NEEDS_ESCAPE.test(value)) return value;
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

export class Counter {
  readonly values = new Map<string, number>();
  constructor(readonly family: Family) {}
  inc(labels?: Labels, by = 1): void {
    const key = labelKey(labels);
    this.values.set(key, (this.values.get(key) ?? 0) + by);
  }
  get(labels?: Labels): number {
    return this.values.get(labelKey(labels)) ?? 0;
  }
}

export class Gauge {
  readonly values = new Map<string, number>();
  /** A gauge may be computed at scrape time instead of being set. */
  collect: (() => Array<{ labels: Labels; value: number }>) | undefined;
  constructor(readonly family: Family) {}
  set(value: number, labels?: Labels): void {
    this.values.set(labelKey(labels), value);
  }
  inc(labels?: Labels, by = 1): void {
    const key = labelKey(labels);
    this.values.set(key, (this.values.get(key) ?? 0) + by);
  }
  dec(labels?: Labels, by = 1): void {
    this.inc(labels, -by);
  }
}

export class Histogram {
  readonly series = new Map<string, { counts: number[]; sum: number; count: number }>();
  constructor(
    readonly family: Family,
    readonly buckets: readonly number[] = DEFAULT_BUCKETS,
  ) {}
  observe(value: number, labels?: Labels): void {
    this.observeAt(labelKey(labels), value);
  }
  /** `observe` for a label set whose key (`labelKey`) the caller keeps: the request hook's, per request. */
  observeAt(key: string, value: number): void {
    let s = this.series.get(key);
    if (!s) {
      s = { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]!) s.counts[i]!++;
    s.sum += value;
    s.count++;
  }
}

type Metric = Counter | Gauge | Histogram;

/** Text in the exposition format from elsewhere, each line ending in a newline. */
export type MetricsSource = () => string | Promise<string>;

export class MetricsRegistry {
  private readonly metrics: Metric[] = [];
  private readonly sources: MetricsSource[] = [];
  private readonly preparers: Array<() => Promise<void>> = [];

  /** Text that `scrape` appends after this registry's own families. */
  addSource(source: MetricsSource): void {
    this.sources.push(source);
  }

  /**
   * Work that brings the families up to date before each scrape renders them (the Worker host
   * reads the roll-up of its stream objects' figures there). A preparer that fails fails the scrape.
   */
  beforeScrape(prepare: () => Promise<void>): void {
    this.preparers.push(prepare);
  }

  /** This registry's families, then every source's text: what /metrics answers. */
  async scrape(): Promise<string> {
    for (const prepare of this.preparers) await prepare();
    let text = this.render();
    for (const source of this.sources) text += await source();
    return text;
  }

  counter(name: string, help: string): Counter {
    return this.add(new Counter({ name, help, type: 'counter' }));
  }
  gauge(name: string, help: string): Gauge {
    return this.add(new Gauge({ name, help, type: 'gauge' }));
  }
  histogram(name: string, help: string, buckets?: readonly number[]): Histogram {
    return this.add(new Histogram({ name, help, type: 'histogram' }, buckets));
  }

  private add<M extends Metric>(metric: M): M {
    this.metrics.push(metric);
    return metric;
  }

  render(): string {
    const out: string[] = [];
    for (const m of this.metrics) {
      const { name, help, type } = m.family;
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      const wrap = (key: string) => (key ? `{${key}}` : '');
      if (m instanceof Histogram) {
        for (const [key, s] of m.series) {
          m.buckets.forEach((le, i) => {
            const labels = key ? `${key},le="${le}"` : `le="${le}"`;
            out.push(`${name}_bucket{${labels}} ${s.counts[i]}`);
          });
          out.push(`${name}_bucket{${key ? `${key},` : ''}le="+Inf"} ${s.count}`);
          out.push(`${name}_sum${wrap(key)} ${s.sum}`, `${name}_count${wrap(key)} ${s.count}`);
        }
      } else if (m instanceof Gauge && m.collect) {
        for (const { labels, value } of m.collect()) out.push(`${name}${wrap(labelKey(labels))} ${value}`);
      } else {
        if (m.values.size === 0 && m instanceof Counter) out.push(`${name} 0`);
        for (const [key, value] of m.values) out.push(`${name}${wrap(key)} ${value}`);
      }
    }
    return `${out.join('\n')}\n`;
  }
}

/** Seconds, for latencies from milliseconds (deliveries wait out back-offs: up to minutes). */
const DELIVERY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Only these methods become a label value; anything else is `other` (bounded cardinality). */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The `method` label of a request: its method when it is a common one, else `other`. */
export function methodLabel(method: string): string {
  return METHODS.has(method) ? method : 'other';
}

/** The receiver actions (protocol §9): counters by action start at 0 for each, so that a rate or increase sees the first one. */
export const RECEIVER_ACTIONS: readonly ReceiverAction[] = ['copy-to-stream', 'webhook-post', 'itx-call', 'processor-wake'];

function byAction(counter: Counter): Counter {
  for (const action of RECEIVER_ACTIONS) counter.inc({ action }, 0);
  return counter;
}

export interface ServerMetricsOptions {
  /** The server's version, for `rivulet_build_info{version}`. */
  version?: string;
}

/** The metrics every host exposes (protocol §15.2). */
export function createServerMetrics(registry = new MetricsRegistry(), options: ServerMetricsOptions = {}) {
  const buildInfo = registry.gauge('rivulet_build_info', 'Always 1; the label names the running version');
  buildInfo.set(1, { version: options.version ?? 'unknown' });
  return {
    registry,
    appends: registry.counter('rivulet_appends_total', 'Append requests committed'),
    appendedEvents: registry.counter('rivulet_appended_events_total', 'Events committed by appends (platform facts included)'),
    appendedBytes: registry.counter('rivulet_appended_bytes_total', 'Bytes of committed events as JSON'),
    appendRejections: registry.counter('rivulet_append_rejections_total', 'Appends rejected, by error code'),
    httpDuration: registry.histogram('rivulet_http_request_duration_seconds', 'HTTP request latency by method, route template and status'),
    sseReaders: registry.gauge('rivulet_sse_readers', 'Open SSE tail responses'),
    deliveries: registry.counter('rivulet_deliveries_total', 'Receiver calls by action and outcome'),
    subscriptionsHalted: registry.gauge('rivulet_subscriptions_halted', 'Durable subscriptions currently halted'),
    subscriptionHalts: byAction(registry.counter('rivulet_subscription_halts_total', 'Subscriptions halted by failed deliveries, by action')),
    subscriptionSkips: byAction(registry.counter('rivulet_subscription_skips_total', 'Events skipped after failing alone, by action')),
    deliveryLatency: registry.histogram(
      'rivulet_delivery_latency_seconds',
      'From the commit of an event to its acknowledgement by the receiver, by action',
      DELIVERY_BUCKETS,
    ),
    liveConnections: registry.gauge('rivulet_live_connections', 'Open live connections (openConnection and waitForEvent)'),
    subscriptionLag: registry.gauge('rivulet_subscription_lag_events', 'Events a subscription is behind its source head (largest 100)'),
  };
}

export type ServerMetrics = ReturnType<typeof createServerMetrics>;
