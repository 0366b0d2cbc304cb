#!/usr/bin/env node
/**
 * bench/subscriptions: the latency of the cross-stream subscription listing (GET /v1/subscriptions)
 * over many source streams. See bench/README.md.
 *
 *   npm run bench:subscriptions                 # 10,000 sources, 100 of them halted
 *   node bench/subscriptions/run.mjs --help     # every option (expects a built workspace)
 *
 * One server child; each source stream gets one copy subscription over HTTP. The healthy ones
 * match no event; the halted ones are configured with a condition that throws and get one event,
 * so each halts at its first attempt (--max-delivery-attempts 1). Once the listing shows every
 * halt, each query is timed from sending the request to the end of the answer.
 */
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { CLI, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { call, fmtMs, fmtN, machineInfo, median, table, writeResult } from '../lib/report.mjs';

const usage = `Usage: node bench/subscriptions/run.mjs [options]   (npm run bench:subscriptions -- [options])

  --sources N        source streams, one subscription each (default 10000)
  --halted N         how many of them are halted (default 100)
  --rounds N         timed requests per query (default 51)
  --target-ms MS     the halted listing's median must stay below this (default 50)
  --out FILE         JSON result file (default bench/results/subscriptions-<timestamp>.json)
  --no-write         do not write the JSON result file
  -h, --help         this text`;

const { values: flags } = parseArgs({
  options: {
    sources: { type: 'string', default: '10000' },
    halted: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '51' },
    'target-ms': { type: 'string', default: '50' },
    out: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (flags.help) {
  console.log(usage);
  process.exit(0);
}
const SOURCES = Number(flags.sources);
const HALTED = Number(flags.halted);
const ROUNDS = Number(flags.rounds);
const TARGET = Number(flags['target-ms']);
const startedAt = new Date();
const folder = tempFolders('rivulet-bench-subs-');

const CONFIGURED = 'events.iterate.com/stream/subscription-configured';
const everyNth = Math.max(1, Math.floor(SOURCES / Math.max(1, HALTED)));
const isHalted = (i) => i % everyNth === 0 && Math.floor(i / everyNth) < HALTED;
const pathOf = (i) => `/bench/src-${String(i).padStart(6, '0')}`;

function events(i) {
  const configured = {
    type: CONFIGURED,
    payload: {
      subscriptionKey: 'copy',
      filter: isHalted(i) ? { jsonataCondition: '$error("bench halt")' } : { eventTypes: ['never'] },
      receiver: { action: 'copy-to-stream', receivingStreamPath: `/bench/recv-${i % 100}`, delivery: { start: 'now', onFailingEvent: 'halt' } },
    },
  };
  return isHalted(i) ? [configured, { type: 'bench/e', payload: { i } }] : [configured];
}

async function inParallel(count, concurrency, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

async function timed(url, path) {
  const t0 = performance.now();
  const response = await fetch(`${url}${path}`);
  const text = await response.text();
  const ms = performance.now() - t0;
  if (!response.ok) throw new Error(`GET ${path} answered ${response.status}: ${text}`);
  return { ms, body: JSON.parse(text) };
}

const dir = folder('data');
const server = await startServer(
  [CLI, 'serve', '--port', '0', '--data', dir, '--durability', 'relaxed', '--max-delivery-attempts', '1', '--retry-base-ms', '10'],
  'rivulet',
);
const url = server.url;
try {
  const setup0 = performance.now();
  await inParallel(SOURCES, 32, (i) => call(url, 'POST', `/v1/streams${pathOf(i)}`, events(i)));
  const setupMs = performance.now() - setup0;
  console.log(`configured ${fmtN(SOURCES)} sources (${fmtN(HALTED)} to halt) in ${fmtMs(setupMs / 1000)} s`);
  for (let waited = 0; ; waited += 100) {
    const page = await call(url, 'GET', '/v1/subscriptions?status=halted&limit=1000');
    if (page.subscriptions.length >= HALTED) break;
    if (waited > 60_000) throw new Error(`only ${page.subscriptions.length} of ${HALTED} halted after 60 s`);
    await new Promise((r) => setTimeout(r, 100));
  }

  const queries = [
    // The floor: the cheapest route, to tell the listing's own cost from the machine's and the HTTP path's.
    { name: 'GET /healthz (floor)', path: '/healthz', expect: undefined },
    { name: 'halted, limit 1000', path: '/v1/subscriptions?status=halted&limit=1000', expect: HALTED },
    { name: 'all statuses, first page of 100', path: '/v1/subscriptions?limit=100', expect: 100 },
    { name: 'healthy, first page of 100', path: '/v1/subscriptions?status=healthy&limit=100', expect: 100 },
    { name: 'halted under one source path', path: `/v1/subscriptions?status=halted&prefix=${pathOf(0)}`, expect: 1 },
  ];
  const results = [];
  for (const q of queries) {
    for (let i = 0; i < 5; i++) await timed(url, q.path);
    const ms = [];
    for (let i = 0; i < ROUNDS; i++) {
      const { ms: one, body } = await timed(url, q.path);
      if (q.expect !== undefined && body.subscriptions.length !== Math.min(q.expect, SOURCES)) throw new Error(`${q.name}: ${body.subscriptions.length} rows, expected ${q.expect}`);
      ms.push(one);
    }
    const sorted = [...ms].sort((a, b) => a - b);
    results.push({ name: q.name, rows: q.expect === undefined ? 0 : Math.min(q.expect, SOURCES), medianMs: median(ms), p90Ms: sorted[Math.floor(0.9 * (sorted.length - 1))], maxMs: sorted[sorted.length - 1] });
  }
  console.log();
  console.log(table(['query', 'rows', 'median ms', 'p90 ms', 'max ms'], results.map((r) => [r.name, fmtN(r.rows), fmtMs(r.medianMs), fmtMs(r.p90Ms), fmtMs(r.maxMs)])));
  const halted = results.find((r) => r.name.startsWith('halted, limit'));
  const verdict = halted.medianMs < TARGET ? 'PASS' : 'MISS';
  const load = (await import('node:os')).default.loadavg()[0];
  console.log(`\n${verdict}: halted listing over ${fmtN(SOURCES)} sources, median ${fmtMs(halted.medianMs)} ms (target < ${TARGET} ms); load average ${load.toFixed(1)}`);
  if (!flags['no-write']) {
    writeResult('subscriptions', startedAt, { machine: machineInfo(startedAt), sources: SOURCES, halted: HALTED, rounds: ROUNDS, setupMs, results, target: { haltedMedianMs: TARGET, verdict } }, flags.out);
  }
} finally {
  await stopServer(server);
}
