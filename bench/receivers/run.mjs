#!/usr/bin/env node
/**
 * bench/receivers: itx-call and webhook-post delivery against bare baselines in the same run.
 * See bench/README.md.
 *
 *   npm run bench:receivers                 # full run
 *   npm run bench:receivers -- --quick      # smoke run
 *
 * itx-call: a source holding N events gets an itx-call subscription from the beginning; a worker
 * process (the SDK's serveWorker) records each batch. Throughput = N / (last batch received −
 * configure acknowledged). Baseline: the same batches (same sizes) sent with bare capnweb calls,
 * one after another, from this process to the same handler in a plain capnweb server process.
 * Latency: events appended one at a time afterwards, worker receive time − event createdAt.
 *
 * webhook-post: the same source gets 1 and then 20 webhook subscriptions to a receiver process
 * that answers 204; deliveries/s over the catch-up. Baseline: a bare loop of the same number of
 * POSTs of the same size from this process to the same receiver, one after another.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { CLI, cpuModel, gitState, root, startServer, stopServer, tempFolders, track } from '../lib/processes.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const WORKER = join(here, 'worker.mjs');
const RECEIVER = join(here, 'webhook-receiver.mjs');

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    events: { type: 'string' },
    rounds: { type: 'string' },
    only: { type: 'string' },
    out: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (flags.help) {
  console.log(`Usage: node bench/receivers/run.mjs [--quick] [--events N] [--rounds N] [--only itx|webhook] [--out FILE] [--no-write]`);
  process.exit(0);
}
const cfg = {
  events: Number(flags.events ?? (flags.quick ? 3000 : 20000)),
  webhookEvents: Number(flags.events ?? (flags.quick ? 500 : 3000)),
  latencySamples: flags.quick ? 100 : 400,
  rounds: Number(flags.rounds ?? (flags.quick ? 1 : 2)),
  only: flags.only ?? null,
};
const freshDir = tempFolders('rivulet-bench-receivers-');

async function call(url, method, path, body) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text);
}

const PAYLOAD = { user: 'u-00042', text: 'the quick brown fox jumps over the lazy dog 0123456789', n: 0 };

async function preload(url, path, count) {
  for (let done = 0; done < count; ) {
    const n = Math.min(1000, count - done);
    await call(url, 'POST', `/v1/streams${path}`, Array.from({ length: n }, (_, i) => ({ type: 'bench/e', payload: { ...PAYLOAD, n: done + i } })));
    done += n;
  }
  return (await call(url, 'GET', `/v1/streams${path}?limit=1`)).streamMaxOffset;
}

/** A child that prints "listening on URL" then lines; `lines` collects everything after. */
function startChild(script, args, label) {
  return new Promise((resolvePromise, reject) => {
    const child = track(spawn(process.execPath, [script, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] }));
    const lines = [];
    const waiters = new Set();
    let buffer = '';
    let url;
    let err = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (c) => (err += c));
    child.stdout.on('data', (chunk) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf('\n')) !== -1) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (!url) {
          const m = /listening on (\S+)/.exec(line);
          if (m) {
            url = m[1];
            resolvePromise({ child, url, lines, waitFor, stop: () => stopServer({ child, stderr: () => err }) });
          }
          continue;
        }
        lines.push(line);
        for (const w of waiters) w();
      }
    });
    child.once('exit', (code) => {
      if (!url) reject(new Error(`${label} exited (${code}) before listening\n${err}`));
    });
    function waitFor(predicate, timeoutMs = 120_000) {
      return new Promise((res, rej) => {
        const check = () => {
          if (predicate(lines)) {
            waiters.delete(check);
            clearTimeout(timer);
            res();
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          rej(new Error(`${label}: condition not met in ${timeoutMs} ms\n${err}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    }
  });
}

const batchesOf = (lines) =>
  lines
    .filter((l) => l.startsWith('BATCH '))
    .map((l) => {
      const [, n, last, at, oldest] = l.split(' ').map(Number);
      return { n, last, at, oldest };
    });

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

async function itxRound(round) {
  const server = await startServer([CLI, 'serve', '--port', '0', '--data', freshDir(`itx-r${round}`)], 'rivulet');
  try {
    const head = await preload(server.url, '/bench/itx', cfg.events);
    const worker = await startChild(WORKER, ['--url', server.url, '--name', 'bench'], 'worker');
    const t0 = performance.timeOrigin + performance.now();
    await call(server.url, 'POST', '/v1/streams/bench/itx', {
      type: 'events.iterate.com/stream/subscription-configured',
      payload: {
        subscriptionKey: 'itx',
        receiver: { action: 'itx-call', expression: ['workers', ['get', 'bench'], 'processEventBatch'], delivery: { start: 'beginning', onFailingEvent: 'halt' } },
      },
    });
    await worker.waitFor((lines) => batchesOf(lines).some((b) => b.last >= head));
    const batches = batchesOf(worker.lines);
    const delivered = batches.reduce((n, b) => n + b.n, 0);
    const seconds = (batches.at(-1).at - t0) / 1000;
    // Latency: events appended one at a time once the subscription caught up.
    const before = worker.lines.length;
    for (let i = 0; i < cfg.latencySamples; i++) {
      const [event] = (await call(server.url, 'POST', '/v1/streams/bench/itx', { type: 'bench/live', payload: { ...PAYLOAD, n: i } })).events;
      await worker.waitFor((lines) => batchesOf(lines.slice(before)).some((b) => b.last >= event.offset), 10_000);
    }
    const live = batchesOf(worker.lines.slice(before));
    const latencies = live.map((b) => b.at - b.oldest).sort((a, b) => a - b);
    await worker.stop();
    // Baseline: the same batch sizes, bare capnweb calls to the same handler in a plain server.
    const sizes = batches.map((b) => b.n);
    const events = [];
    for (let after = 0; events.length < delivered; ) {
      const page = await call(server.url, 'GET', `/v1/streams/bench/itx?afterOffset=${after}&limit=500`);
      if (page.events.length === 0) break;
      events.push(...page.events);
      after = page.events.at(-1).offset;
    }
    const bare = await startChild(WORKER, ['--bare'], 'bare worker');
    const { newWebSocketRpcSession } = await import(pathToFileURL(join(root, 'node_modules', 'capnweb', 'dist', 'index.js')).href);
    const { WebSocket } = await import(pathToFileURL(join(root, 'node_modules', 'ws', 'wrapper.mjs')).href);
    globalThis.WebSocket ??= WebSocket;
    const ws = new WebSocket(bare.url);
    await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
    const stub = newWebSocketRpcSession(ws);
    const b0 = performance.now();
    let at = 0;
    for (const n of sizes) {
      const slice = events.slice(at, at + n);
      at += n;
      await stub.processEventBatch({ projectId: null, path: '/bench/itx', streamId: 's', streamCreatedAt: '', subscriptionKey: 'itx', cursorChangedAtSourceOffset: 1, deliveryId: 'd', attempt: 1, streamMaxOffset: head, events: slice });
    }
    const bareSeconds = (performance.now() - b0) / 1000;
    stub[Symbol.dispose]();
    ws.close();
    await bare.stop();
    return {
      round,
      events: delivered,
      batches: batches.length,
      meanBatch: delivered / batches.length,
      eventsPerSec: delivered / seconds,
      bareEventsPerSec: delivered / bareSeconds,
      latencyP50ms: percentile(latencies, 50),
      latencyP99ms: percentile(latencies, 99),
    };
  } finally {
    await stopServer(server);
  }
}

async function webhookRound(round, subscriptions) {
  const server = await startServer([CLI, 'serve', '--port', '0', '--data', freshDir(`webhook-${subscriptions}-r${round}`)], 'rivulet');
  const receiver = await startChild(RECEIVER, [], 'webhook receiver');
  try {
    const head = await preload(server.url, '/bench/hook', cfg.webhookEvents);
    const t0 = performance.timeOrigin + performance.now();
    for (let i = 0; i < subscriptions; i++) {
      await call(server.url, 'POST', '/v1/streams/bench/hook', {
        type: 'events.iterate.com/stream/subscription-configured',
        payload: { subscriptionKey: `hook-${i}`, receiver: { action: 'webhook-post', url: `${receiver.url}/hook/${i}`, delivery: { start: 'beginning', onFailingEvent: 'halt' } } },
      });
    }
    // The receiver prints "HIT <subscription> <offset> <ms>" per request.
    const want = subscriptions * cfg.webhookEvents;
    await receiver.waitFor((lines) => lines.filter((l) => l.startsWith('HIT ')).length >= want, 300_000);
    const hits = receiver.lines.filter((l) => l.startsWith('HIT ')).map((l) => Number(l.split(' ')[3]));
    const seconds = (Math.max(...hits) - t0) / 1000;
    // Baseline: a bare loop of the same number of POSTs (one subscription's worth) of the same size.
    const body = JSON.stringify({ projectId: null, path: '/bench/hook', streamId: 's', event: { type: 'bench/e', payload: PAYLOAD } });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const target = new URL(`${receiver.url}/baseline`);
    const b0 = performance.now();
    for (let i = 0; i < cfg.webhookEvents; i++) {
      await new Promise((res, rej) => {
        const req = http.request({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (r) => {
          r.resume();
          r.once('end', res);
        });
        req.once('error', rej);
        req.end(body);
      });
    }
    const bareSeconds = (performance.now() - b0) / 1000;
    agent.destroy();
    void head;
    return { round, subscriptions, deliveries: want, deliveriesPerSec: want / seconds, bareRequestsPerSec: cfg.webhookEvents / bareSeconds };
  } finally {
    await receiver.stop();
    await stopServer(server);
  }
}

const median = (values) => {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  return v.length ? v[Math.floor((v.length - 1) / 2)] : NaN;
};
const fmtN = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');
const fmtX = (n) => (Number.isFinite(n) ? `${n.toFixed(2)}x` : '-');

async function main() {
  const startedAt = new Date();
  const wall0 = performance.now();
  const machine = { date: startedAt.toISOString(), nproc: os.availableParallelism?.() ?? os.cpus().length, cpuModel: cpuModel(), node: process.version, git: gitState() };
  console.log(`bench/receivers on ${machine.nproc} x ${machine.cpuModel}, node ${machine.node}`);
  const itx = [];
  const webhook = [];
  for (let round = 0; round < cfg.rounds; round++) {
    if (cfg.only !== 'webhook') {
      const r = await itxRound(round);
      itx.push(r);
      console.log(`  itx-call r${round}: ${fmtN(r.eventsPerSec)} ev/s in ${r.batches} batches (mean ${r.meanBatch.toFixed(0)}); bare capnweb ${fmtN(r.bareEventsPerSec)} ev/s; latency p50 ${r.latencyP50ms} p99 ${r.latencyP99ms} ms`);
    }
    if (cfg.only !== 'itx') {
      for (const subscriptions of [1, 20]) {
        const r = await webhookRound(round, subscriptions);
        webhook.push(r);
        console.log(`  webhook x${subscriptions} r${round}: ${fmtN(r.deliveriesPerSec)} deliveries/s; bare POST loop ${fmtN(r.bareRequestsPerSec)} req/s`);
      }
    }
  }
  const summary = {};
  const targets = [];
  if (itx.length) {
    const eps = median(itx.map((r) => r.eventsPerSec));
    const bare = median(itx.map((r) => r.bareEventsPerSec));
    summary.itx = { eventsPerSec: eps, bareEventsPerSec: bare, ratio: eps / bare, latencyP50ms: median(itx.map((r) => r.latencyP50ms)), latencyP99ms: median(itx.map((r) => r.latencyP99ms)) };
    targets.push({ target: 'itx-call >= 0.5x bare capnweb calls with the same batches', value: fmtX(eps / bare), pass: eps / bare >= 0.5 });
  }
  for (const subscriptions of [1, 20]) {
    const rs = webhook.filter((r) => r.subscriptions === subscriptions);
    if (!rs.length) continue;
    const dps = median(rs.map((r) => r.deliveriesPerSec));
    const bare = median(rs.map((r) => r.bareRequestsPerSec));
    summary[`webhook${subscriptions}`] = { deliveriesPerSec: dps, bareRequestsPerSec: bare, ratio: dps / bare };
    if (subscriptions === 1) targets.push({ target: 'webhook (1 subscription) >= 0.6x the bare POST loop', value: fmtX(dps / bare), pass: dps / bare >= 0.6 });
  }
  console.log('');
  if (summary.itx) console.log(`itx-call: ${fmtN(summary.itx.eventsPerSec)} ev/s vs bare capnweb ${fmtN(summary.itx.bareEventsPerSec)} ev/s = ${fmtX(summary.itx.ratio)}; latency p50 ${summary.itx.latencyP50ms} ms p99 ${summary.itx.latencyP99ms} ms`);
  for (const s of [1, 20]) {
    const w = summary[`webhook${s}`];
    if (w) console.log(`webhook x${s}: ${fmtN(w.deliveriesPerSec)} deliveries/s vs bare POST loop ${fmtN(w.bareRequestsPerSec)} req/s = ${fmtX(w.ratio)}`);
  }
  console.log('');
  for (const t of targets) console.log(`${t.pass ? 'PASS' : 'MISS'}  ${t.target}: ${t.value}`);
  const wallSeconds = (performance.now() - wall0) / 1000;
  console.log(`\n${Math.round(wallSeconds)} s`);
  if (!flags['no-write']) {
    const out = flags.out ?? join(root, 'bench', 'results', `receivers-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify({ bench: 'receivers', machine, config: { ...cfg, quick: flags.quick }, summary, targets, itx, webhook, wallSeconds }, null, 2)}\n`);
    console.log(`results: ${relative(process.cwd(), out)}`);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
