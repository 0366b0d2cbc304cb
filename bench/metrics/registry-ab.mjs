// Own registry (packages/server/dist/engine/metrics.js) against prom-client, in one process, the
// same work on both: the per-append counter increments, a labelled histogram observation, and a
// scrape of the families /metrics renders with a realistic number of series. Run after a build:
// node bench/metrics/registry-ab.mjs
import { performance } from 'node:perf_hooks';
import client from 'prom-client';
import { MetricsRegistry } from '../../packages/server/dist/engine/metrics.js';

const N = 2_000_000;
const ROUNDS = 5;
const ROUTES = ['/v1/streams/{path}', '/v1/streams/{path}:state', '/v1/streams', '/metrics', '/healthz'];
const METHODS = ['GET', 'POST', 'DELETE'];
const STATUSES = ['200', '400', '404', '409'];

function nsPer(fn, n) {
  const t0 = performance.now();
  fn(n);
  return ((performance.now() - t0) * 1e6) / n;
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function ownSetup() {
  const r = new MetricsRegistry();
  const appends = r.counter('rivulet_appends_total', 'a');
  const events = r.counter('rivulet_appended_events_total', 'e');
  const bytes = r.counter('rivulet_appended_bytes_total', 'b');
  const http = r.histogram('rivulet_http_request_duration_seconds', 'h');
  const lag = r.gauge('rivulet_subscription_lag_events', 'l');
  lag.collect = () => Array.from({ length: 100 }, (_, i) => ({ labels: { project: 'p', stream: `/s/${i}`, key: 'k' }, value: i }));
  for (const m of METHODS) for (const route of ROUTES) for (const status of STATUSES) http.observe(0.001, { method: m, route, status });
  return {
    perAppend: (n) => {
      for (let i = 0; i < n; i++) {
        appends.inc();
        events.inc({}, 1);
        bytes.inc({}, 150);
      }
    },
    observe: (n) => {
      for (let i = 0; i < n; i++) http.observe(0.0004, { method: 'POST', route: '/v1/streams/{path}', status: '200' });
    },
    scrape: async () => r.render(),
  };
}

function promSetup() {
  const r = new client.Registry();
  const appends = new client.Counter({ name: 'rivulet_appends_total', help: 'a', registers: [r] });
  const events = new client.Counter({ name: 'rivulet_appended_events_total', help: 'e', registers: [r] });
  const bytes = new client.Counter({ name: 'rivulet_appended_bytes_total', help: 'b', registers: [r] });
  const http = new client.Histogram({
    name: 'rivulet_http_request_duration_seconds',
    help: 'h',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [r],
  });
  new client.Gauge({
    name: 'rivulet_subscription_lag_events',
    help: 'l',
    labelNames: ['project', 'stream', 'key'],
    registers: [r],
    collect() {
      this.reset();
      for (let i = 0; i < 100; i++) this.set({ project: 'p', stream: `/s/${i}`, key: 'k' }, i);
    },
  });
  for (const m of METHODS) for (const route of ROUTES) for (const status of STATUSES) http.observe({ method: m, route, status }, 0.001);
  return {
    perAppend: (n) => {
      for (let i = 0; i < n; i++) {
        appends.inc();
        events.inc(1);
        bytes.inc(150);
      }
    },
    observe: (n) => {
      for (let i = 0; i < n; i++) http.observe({ method: 'POST', route: '/v1/streams/{path}', status: '200' }, 0.0004);
    },
    scrape: () => r.metrics(),
  };
}

async function scrapeUs(scrape, n = 2000) {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await scrape();
  return ((performance.now() - t0) * 1000) / n;
}

const results = { own: { perAppend: [], observe: [], scrapeUs: [] }, prom: { perAppend: [], observe: [], scrapeUs: [] } };
const impls = { own: ownSetup(), prom: promSetup() };
for (let round = 0; round < ROUNDS; round++) {
  for (const name of round % 2 === 0 ? ['own', 'prom'] : ['prom', 'own']) {
    const impl = impls[name];
    results[name].perAppend.push(nsPer(impl.perAppend, N));
    results[name].observe.push(nsPer(impl.observe, N / 4));
    results[name].scrapeUs.push(await scrapeUs(impl.scrape));
  }
}
const defaults = new client.Registry();
client.collectDefaultMetrics({ register: defaults });
const defaultsUs = await scrapeUs(() => defaults.metrics(), 500);
const series = (text) => text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;

const row = (name) => ({
  'three counter increments per append (ns)': median(results[name].perAppend).toFixed(1),
  'labelled histogram observe (ns)': median(results[name].observe).toFixed(1),
  'scrape, 1123 series (µs)': median(results[name].scrapeUs).toFixed(1),
});
console.log(`node ${process.version}, ${ROUNDS} rounds, medians`);
console.table({ own: row('own'), 'prom-client 15.1.3': row('prom') });
console.log(`series: own ${series(await impls.own.scrape())}, prom-client ${series(await impls.prom.scrape())}`);
console.log(`prom-client default collectors alone: ${series(await defaults.metrics())} series, scrape ${defaultsUs.toFixed(1)} µs`);
