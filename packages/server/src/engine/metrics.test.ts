import { describe, expect, it } from 'vitest';
import { createServerMetrics, labelKey, methodLabel, MetricsRegistry } from './metrics.js';

/** The sample lines of one metric family (everything but comments). */
const samples = (text: string, name: string): string[] =>
  text.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `) || line.startsWith(`${name}_`));

describe('Prometheus text rendering', () => {
  it('renders HELP and TYPE for every family, and ends with a newline', () => {
    const r = new MetricsRegistry();
    r.counter('c_total', 'A counter');
    r.gauge('g', 'A gauge');
    r.histogram('h_seconds', 'A histogram');
    const text = r.render();
    expect(text.endsWith('\n')).toBe(true);
    expect(text).toContain('# HELP c_total A counter\n# TYPE c_total counter\n');
    expect(text).toContain('# HELP g A gauge\n# TYPE g gauge\n');
    expect(text).toContain('# HELP h_seconds A histogram\n# TYPE h_seconds histogram\n');
  });

  it('counters: an untouched counter reads 0; increments add up per label set; labels are sorted', () => {
    const r = new MetricsRegistry();
    const c = r.counter('appends_total', 'Appends');
    expect(samples(r.render(), 'appends_total')).toEqual(['appends_total 0']);
    c.inc();
    c.inc({}, 2);
    c.inc({ code: 'CONFLICT', route: '/a' });
    c.inc({ route: '/a', code: 'CONFLICT' }, 4);
    expect(c.get()).toBe(3);
    expect(c.get({ route: '/a', code: 'CONFLICT' })).toBe(5);
    expect(c.get({ code: 'absent' })).toBe(0);
    expect(samples(r.render(), 'appends_total')).toEqual(['appends_total 3', 'appends_total{code="CONFLICT",route="/a"} 5']);
  });

  it('one series per label set, whatever order its labels are written in', () => {
    const r = new MetricsRegistry();
    const h = r.histogram('h', 'H', [1]);
    const orders = [{ a: '1', b: '2', c: '3' }, { b: '2', a: '1', c: '3' }, { c: '3', b: '2', a: '1' }, { a: '1', c: '3', b: '2' }, { 10: 'x', 9: 'y', a: '1' }];
    for (const labels of orders) h.observe(0.5, labels);
    expect(samples(r.render(), 'h').filter((l) => l.startsWith('h_count'))).toEqual(['h_count{a="1",b="2",c="3"} 4', 'h_count{10="x",9="y",a="1"} 1']);
  });

  it('gauges: set, inc and dec; an unset gauge renders no sample', () => {
    const r = new MetricsRegistry();
    const g = r.gauge('readers', 'Readers');
    expect(samples(r.render(), 'readers')).toEqual([]);
    g.set(10);
    g.inc();
    g.dec({}, 3);
    g.dec({ kind: 'sse' });
    expect(samples(r.render(), 'readers')).toEqual(['readers 8', 'readers{kind="sse"} -1']);
  });

  it('gauges computed at scrape time use collect and ignore set values', () => {
    const r = new MetricsRegistry();
    const g = r.gauge('lag', 'Lag');
    g.set(99);
    let calls = 0;
    g.collect = () => {
      calls++;
      return [
        { labels: { stream: '/b', key: 'k' }, value: 2 },
        { labels: {}, value: 1 },
      ];
    };
    expect(samples(r.render(), 'lag')).toEqual(['lag{key="k",stream="/b"} 2', 'lag 1']);
    r.render();
    expect(calls).toBe(2);
  });

  it('histograms: cumulative buckets, +Inf equals count, sum and count, per label set', () => {
    const r = new MetricsRegistry();
    const h = r.histogram('latency_seconds', 'Latency', [0.1, 0.5, 1]);
    for (const v of [0.05, 0.1, 0.3, 0.7, 2, 5]) h.observe(v, { route: '/x' });
    h.observe(0.2);
    expect(samples(r.render(), 'latency_seconds')).toEqual([
      'latency_seconds_bucket{route="/x",le="0.1"} 2',
      'latency_seconds_bucket{route="/x",le="0.5"} 3',
      'latency_seconds_bucket{route="/x",le="1"} 4',
      'latency_seconds_bucket{route="/x",le="+Inf"} 6',
      'latency_seconds_sum{route="/x"} 8.15',
      'latency_seconds_count{route="/x"} 6',
      'latency_seconds_bucket{le="0.1"} 0',
      'latency_seconds_bucket{le="0.5"} 1',
      'latency_seconds_bucket{le="1"} 1',
      'latency_seconds_bucket{le="+Inf"} 1',
      'latency_seconds_sum 0.2',
      'latency_seconds_count 1',
    ]);
  });

  it('observeAt with a kept label key counts in the same series as observe with those labels', () => {
    const r = new MetricsRegistry();
    const h = r.histogram('latency_seconds', 'Latency', [0.1, 0.5, 1]);
    const labels = { method: 'POST', route: '/x "q"', status: '200' };
    h.observe(0.05, labels);
    h.observeAt(labelKey(labels), 0.7);
    h.observeAt(labelKey({ method: 'GET', route: '/x "q"', status: '200' }), 0.3);
    expect(h.series.size).toBe(2);
    const series = h.series.get(labelKey(labels));
    expect(series).toEqual({ counts: [1, 1, 2], sum: 0.75, count: 2 });
  });

  it('histogram buckets never decrease and end at the count, whatever is observed', () => {
    const r = new MetricsRegistry();
    const h = r.histogram('d', 'D');
    const values = Array.from({ length: 500 }, (_, i) => ((i * 7919) % 1000) / 50);
    for (const v of values) h.observe(v);
    const buckets = samples(r.render(), 'd').filter((l) => l.startsWith('d_bucket')).map((l) => Number(l.split(' ')[1]));
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]!).toBeGreaterThanOrEqual(buckets[i - 1]!);
    expect(buckets[buckets.length - 1]).toBe(values.length);
    // Each finite bucket holds exactly the values at or below its bound.
    const bounds = h.buckets;
    bounds.forEach((le, i) => expect(buckets[i]).toBe(values.filter((v) => v <= le).length));
  });

  it('escapes backslash, double quote and newline in label values', () => {
    const r = new MetricsRegistry();
    const c = r.counter('esc_total', 'Escapes');
    c.inc({ path: 'a\\b"c\nd' });
    expect(samples(r.render(), 'esc_total')).toEqual(['esc_total{path="a\\\\b\\"c\\nd"} 1']);
    // The same raw value addresses the same series.
    expect(c.get({ path: 'a\\b"c\nd' })).toBe(1);
  });

  it('label values that would collide after naive joining stay distinct series', () => {
    const r = new MetricsRegistry();
    const c = r.counter('x_total', 'X');
    c.inc({ a: '1",b="2' });
    c.inc({ a: '1', b: '2' });
    expect(samples(r.render(), 'x_total')).toHaveLength(2);
  });

  it('createServerMetrics registers the documented families once each', () => {
    const metrics = createServerMetrics();
    const text = metrics.registry.render();
    const types = text.split('\n').filter((l) => l.startsWith('# TYPE '));
    const names = types.map((l) => l.split(' ')[2]);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(
      expect.arrayContaining(['rivulet_appends_total', 'rivulet_http_request_duration_seconds', 'rivulet_sse_readers', 'rivulet_subscriptions_halted']),
    );
    for (const name of names) expect(name).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/);
  });

  it('scrape appends the text of every source after the registry\'s own families, awaiting async ones', async () => {
    const r = new MetricsRegistry();
    r.counter('own_total', 'Own').inc();
    r.addSource(() => '# TYPE a gauge\na 1\n');
    r.addSource(async () => '# TYPE b gauge\nb 2\n');
    expect(await r.scrape()).toBe(`${r.render()}# TYPE a gauge\na 1\n# TYPE b gauge\nb 2\n`);
    expect(await new MetricsRegistry().scrape()).toBe(new MetricsRegistry().render());
  });

  it('rivulet_build_info is 1 with the version as its label', () => {
    expect(samples(createServerMetrics(undefined, { version: '1.2.3' }).registry.render(), 'rivulet_build_info')).toEqual([
      'rivulet_build_info{version="1.2.3"} 1',
    ]);
    expect(samples(createServerMetrics().registry.render(), 'rivulet_build_info')).toEqual(['rivulet_build_info{version="unknown"} 1']);
  });

  it('the halt and skip counters show 0 for every action before the first one (an increase sees the first)', () => {
    const metrics = createServerMetrics();
    const actions = ['copy-to-stream', 'itx-call', 'processor-wake', 'webhook-post'];
    for (const name of ['rivulet_subscription_halts_total', 'rivulet_subscription_skips_total']) {
      expect(samples(metrics.registry.render(), name).sort()).toEqual(actions.map((a) => `${name}{action="${a}"} 0`));
    }
    metrics.subscriptionHalts.inc({ action: 'webhook-post' });
    expect(samples(metrics.registry.render(), 'rivulet_subscription_halts_total')).toContain('rivulet_subscription_halts_total{action="webhook-post"} 1');
    expect(samples(metrics.registry.render(), 'rivulet_subscription_halts_total')).toHaveLength(4);
  });

  it('methodLabel keeps the common methods and calls every other one other', () => {
    for (const m of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) expect(methodLabel(m)).toBe(m);
    for (const m of ['PROPFIND', 'get', 'TRACE', '', 'X'.repeat(100)]) expect(methodLabel(m)).toBe('other');
  });
});
