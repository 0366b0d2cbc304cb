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
 * one after another, to the same handler in a plain capnweb server process, from a caller process
 * started with each round (bare-itx.mjs), as cold as the server.
 * Latency: events appended one at a time afterwards, worker receive time − event createdAt.
 *
 * webhook-post: the same source gets 1 and then 20 webhook subscriptions to a receiver process
 * that answers 204; deliveries/s over the catch-up. Baseline: a bare loop of the same number of
 * POSTs of the same size, one after another, from a process of its own that starts with each round
 * (bare-post.mjs), as cold as the server, to a receiver process of its own started with the
 * server's, as cold as the one the server posts to.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { CLI, cpuModel, gitState, machineBusyMs, procCpuMs, root, startLineChild, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { PAYLOAD, call, fmtN, fmtX, median, preload, writeResult } from '../lib/report.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const WORKER = join(here, 'worker.mjs');
const RECEIVER = join(here, 'webhook-receiver.mjs');
const BARE = join(here, 'bare-post.mjs');
const BARE_ITX = join(here, 'bare-itx.mjs');

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    events: { type: 'string' },
    rounds: { type: 'string' },
    only: { type: 'string' },
    out: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    subscriptions: { type: 'string' },
    variant: { type: 'string', multiple: true, default: [] },
    warmup: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (flags.help) {
  console.log(`Usage: node bench/receivers/run.mjs [--quick] [--events N] [--rounds N] [--only itx|webhook] [--subscriptions 1,20]
                                   [--profile] [--out FILE] [--no-write]
  --subscriptions  which webhook scenarios run (default 1,20)
  --warmup N       webhook rounds first deliver N events to an unmeasured subscription and send N unmeasured
                   bare POSTs, so that both sides are measured warm (default 0: both the server and the bare
                   loop's process are measured from their start)
  --variant NAME=DIR  also measure another build of packages/server (its dist folder, kept inside the
                   repository, e.g. bench/.variants/NAME/dist), interleaved with the current one in every round
  --profile        run the Rivulet server children with --cpu-prof (profiles under bench/results/profiles/;
                   summarise one with node bench/append/profile-summary.mjs FILE)`);
  process.exit(0);
}
const cfg = {
  events: Number(flags.events ?? (flags.quick ? 3000 : 20000)),
  webhookEvents: Number(flags.events ?? (flags.quick ? 500 : 3000)),
  webhookWarmup: Number(flags.warmup ?? 0),
  latencySamples: flags.quick ? 100 : 400,
  rounds: Number(flags.rounds ?? (flags.quick ? 1 : 2)),
  only: flags.only ?? null,
  subscriptions: (flags.subscriptions ?? '1,20').split(',').map(Number),
  profile: flags.profile,
  variants: flags.variant.map((v) => {
    const at = v.indexOf('=');
    if (at <= 0) throw new Error(`--variant expects NAME=DIR, got ${v}`);
    return { name: v.slice(0, at), dist: resolve(v.slice(at + 1)) };
  }),
};
const LAUNCH_DIST = join(here, '..', 'append', 'launch-dist.mjs');
/** The command line of a Rivulet server child: this build (the CLI) or a variant's dist folder. */
function serverArgs(impl, name, data) {
  const variant = cfg.variants.find((v) => v.name === impl);
  const launcher = variant ? [LAUNCH_DIST, '--dist', variant.dist] : [CLI];
  return [...serverFlags(`${impl}-${name}`), ...launcher, 'serve', '--port', '0', '--data', data];
}
const profileDir = join(root, 'bench', 'results', 'profiles', `receivers-${new Date().toISOString().replace(/[:.]/g, '-')}`);
/** Node flags of a Rivulet server child: --cpu-prof with --profile. */
function serverFlags(name) {
  if (!cfg.profile) return [];
  mkdirSync(profileDir, { recursive: true });
  return ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', `${name}.cpuprofile`];
}
const freshDir = tempFolders('rivulet-bench-receivers-');


/** A child of this benchmark: ready at "listening on URL", then lines. */
const startChild = (script, args, label) => startLineChild(script, args, label, { waitTimeoutMs: 120_000 });

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

async function itxRound(round, impl) {
  const server = await startServer(serverArgs(impl, `itx-r${round}`, freshDir(`${impl}-itx-r${round}`)), impl);
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
    // The caller runs in a process of its own, started now: as cold as the server was.
    const batchesFile = join(freshDir(`${impl}-itx-r${round}-bare`), 'batches.json');
    writeFileSync(batchesFile, JSON.stringify({ head, sizes, events }));
    const caller = await startLineChild(BARE_ITX, [bare.url, batchesFile], 'bare capnweb caller', { stdin: true, waitTimeoutMs: 120_000 });
    caller.send('run');
    const done = await caller.waitFor((lines) => lines.find((l) => l.startsWith('done ')), 300_000);
    const bareSeconds = Number(done.split(' ')[1]);
    await caller.stop();
    await bare.stop();
    return {
      impl,
      round,
      events: delivered,
      batches: batches.length,
      meanBatch: delivered / batches.length,
      eventsPerSec: delivered / seconds,
      bareEventsPerSec: delivered / bareSeconds,
      ratio: delivered / seconds / (delivered / bareSeconds),
      latencyP50ms: percentile(latencies, 50),
      latencyP99ms: percentile(latencies, 99),
    };
  } finally {
    await stopServer(server);
  }
}

async function webhookRound(round, subscriptions, impl) {
  const server = await startServer(serverArgs(impl, `webhook-${subscriptions}-r${round}`, freshDir(`${impl}-webhook-${subscriptions}-r${round}`)), impl);
  // Each side posts to a receiver of its own, both started now: the server's deliveries would
  // otherwise warm the one receiver that the bare loop then posts to (bench/README.md "a receiver
  // each").
  const receiver = await startChild(RECEIVER, [], 'webhook receiver');
  const bareReceiver = await startChild(RECEIVER, [], 'bare loop receiver');
  // The receiver prints "HIT <path> <n> <ms>" per request, except for the baseline's.
  const hitsOf = (prefix) => {
    let counted = 0;
    let seen = 0;
    return (lines) => {
      for (; seen < lines.length; seen++) if (lines[seen].startsWith(prefix)) counted++;
      return counted;
    };
  };
  // Baseline: a bare loop of POSTs of about the same size (one subscription's worth), in a process
  // of its own started with the server, so that both start cold (or both warm, with --warmup).
  const bare = await startLineChild(BARE, [`${bareReceiver.url}/baseline`], 'bare POST loop', { stdin: true });
  const bareLoop = async (count) => {
    const before = bare.lines.length;
    bare.send(`run ${count}`);
    const line = await bare.waitFor((lines) => lines.slice(before).find((l) => l.startsWith('done ')), 300_000);
    const [, seconds, cpuMs] = line.split(' ').map(Number);
    return { seconds, cpuMs };
  };
  try {
    if (cfg.webhookWarmup > 0) {
      // Unmeasured: the server's delivery path, the receiver and this process's HTTP client run
      // once before anything is timed, so that neither side is measured cold (JIT warm-up).
      await preload(server.url, '/bench/warm', cfg.webhookWarmup);
      await call(server.url, 'POST', '/v1/streams/bench/warm', {
        type: 'events.iterate.com/stream/subscription-configured',
        payload: { subscriptionKey: 'warm', receiver: { action: 'webhook-post', url: `${receiver.url}/warm`, delivery: { start: 'beginning', onFailingEvent: 'halt' } } },
      });
      const warmHits = hitsOf('HIT /warm');
      await receiver.waitFor((lines) => warmHits(lines) >= cfg.webhookWarmup, 300_000);
      await bareLoop(cfg.webhookWarmup);
    }
    const head = await preload(server.url, '/bench/hook', cfg.webhookEvents);
    // CPU of the server per delivery (less sensitive to the machine's other load than a rate), and
    // what everything else on the machine used meanwhile (200% = both cores busy with others).
    const serverCpu0 = procCpuMs(server.child.pid);
    const receiverCpu0 = procCpuMs(receiver.child.pid);
    const selfCpu0 = procCpuMs('self');
    const machine0 = machineBusyMs();
    const wall0 = performance.now();
    const t0 = performance.timeOrigin + performance.now();
    for (let i = 0; i < subscriptions; i++) {
      await call(server.url, 'POST', '/v1/streams/bench/hook', {
        type: 'events.iterate.com/stream/subscription-configured',
        payload: { subscriptionKey: `hook-${i}`, receiver: { action: 'webhook-post', url: `${receiver.url}/hook/${i}`, delivery: { start: 'beginning', onFailingEvent: 'halt' } } },
      });
    }
    const want = subscriptions * cfg.webhookEvents;
    const hookHits = hitsOf('HIT /hook/');
    await receiver.waitFor((lines) => hookHits(lines) >= want, 300_000);
    const hits = receiver.lines.filter((l) => l.startsWith('HIT /hook/')).map((l) => Number(l.split(' ')[3]));
    const seconds = (Math.max(...hits) - t0) / 1000;
    const serverCpuMs = procCpuMs(server.child.pid) - serverCpu0;
    const machine1 = machineBusyMs();
    const othersMs = machine0 && machine1 ? machine1.busy - machine0.busy - serverCpuMs - (procCpuMs(receiver.child.pid) - receiverCpu0) - (procCpuMs('self') - selfCpu0) : NaN;
    const othersLoad = othersMs / (performance.now() - wall0);
    const { seconds: bareSeconds, cpuMs: bareCpuMs } = await bareLoop(cfg.webhookEvents);
    void head;
    const deliveriesPerSec = want / seconds;
    const bareRequestsPerSec = cfg.webhookEvents / bareSeconds;
    const serverCpuUsPerDelivery = (serverCpuMs * 1000) / want;
    const bareCpuUsPerRequest = (bareCpuMs * 1000) / cfg.webhookEvents;
    return { impl, round, subscriptions, deliveries: want, deliveriesPerSec, bareRequestsPerSec, ratio: deliveriesPerSec / bareRequestsPerSec, serverCpuUsPerDelivery, bareCpuUsPerRequest, othersLoad };
  } finally {
    await bare.stop();
    await receiver.stop();
    await bareReceiver.stop();
    await stopServer(server);
  }
}


async function main() {
  const startedAt = new Date();
  const wall0 = performance.now();
  const machine = { date: startedAt.toISOString(), nproc: os.availableParallelism?.() ?? os.cpus().length, cpuModel: cpuModel(), node: process.version, git: gitState(), loadAverageAtStart: os.loadavg() };
  console.log(`bench/receivers on ${machine.nproc} x ${machine.cpuModel}, node ${machine.node}`);
  const itx = [];
  const webhook = [];
  const impls = ['rivulet', ...cfg.variants.map((v) => v.name)];
  const pad = Math.max(...impls.map((i) => i.length));
  for (let round = 0; round < cfg.rounds; round++) {
    // Variants take turns first, so that none always runs on the warmer or the cooler machine.
    const order = impls.map((_, i) => impls[(i + round) % impls.length]);
    if (cfg.only !== 'webhook') {
      for (const impl of order) {
        const r = await itxRound(round, impl);
        itx.push(r);
        console.log(`  ${impl.padEnd(pad)} itx-call r${round}: ${fmtN(r.eventsPerSec)} ev/s in ${r.batches} batches (mean ${r.meanBatch.toFixed(0)}); bare capnweb ${fmtN(r.bareEventsPerSec)} ev/s = ${fmtX(r.ratio)}; latency p50 ${r.latencyP50ms} p99 ${r.latencyP99ms} ms`);
      }
    }
    if (cfg.only !== 'itx') {
      for (const subscriptions of cfg.subscriptions) {
        for (const impl of order) {
          const r = await webhookRound(round, subscriptions, impl);
          webhook.push(r);
          console.log(
            `  ${impl.padEnd(pad)} webhook x${subscriptions} r${round}: ${fmtN(r.deliveriesPerSec)} deliveries/s; bare POST loop ${fmtN(r.bareRequestsPerSec)} req/s = ${fmtX(r.ratio)}; server cpu ${fmtN(r.serverCpuUsPerDelivery)} µs/delivery, bare loop ${fmtN(r.bareCpuUsPerRequest)} µs/request; others ${(r.othersLoad * 100).toFixed(0)}%`,
          );
        }
      }
    }
  }
  // Ratios are taken per round (Rivulet and its baseline measured minutes apart at most), then
  // summarised: median and range over the rounds.
  const ratios = (rs) => ({ ratio: median(rs.map((r) => r.ratio)), ratioMin: Math.min(...rs.map((r) => r.ratio)), ratioMax: Math.max(...rs.map((r) => r.ratio)) });
  const summary = {};
  const targets = [];
  for (const impl of impls) {
    const s = {};
    const its = itx.filter((r) => r.impl === impl);
    if (its.length) {
      s.itx = {
        eventsPerSec: median(its.map((r) => r.eventsPerSec)),
        bareEventsPerSec: median(its.map((r) => r.bareEventsPerSec)),
        ...ratios(its),
        latencyP50ms: median(its.map((r) => r.latencyP50ms)),
        latencyP99ms: median(its.map((r) => r.latencyP99ms)),
      };
      if (impl === 'rivulet') targets.push({ target: 'itx-call >= 0.5x bare capnweb calls with the same batches', value: fmtX(s.itx.ratio), pass: s.itx.ratio >= 0.5 });
    }
    for (const subscriptions of cfg.subscriptions) {
      const rs = webhook.filter((r) => r.subscriptions === subscriptions && r.impl === impl);
      if (!rs.length) continue;
      const w = {
        deliveriesPerSec: median(rs.map((r) => r.deliveriesPerSec)),
        bareRequestsPerSec: median(rs.map((r) => r.bareRequestsPerSec)),
        bareCpuUsPerRequest: median(rs.map((r) => r.bareCpuUsPerRequest)),
        ...ratios(rs),
        serverCpuUsPerDelivery: median(rs.map((r) => r.serverCpuUsPerDelivery)),
      };
      s[`webhook${subscriptions}`] = w;
      if (subscriptions === 1 && impl === 'rivulet') targets.push({ target: 'webhook (1 subscription) >= 0.6x the bare POST loop', value: fmtX(w.ratio), pass: w.ratio >= 0.6 });
    }
    if (impl === 'rivulet') Object.assign(summary, s);
    else (summary.variants ??= {})[impl] = s;
  }
  const range = (x) => `median ${fmtX(x.ratio)}, range ${fmtX(x.ratioMin)}–${fmtX(x.ratioMax)}`;
  console.log(`\nmedians over ${cfg.rounds} round(s); ratios are per round:`);
  for (const impl of impls) {
    const s = impl === 'rivulet' ? summary : summary.variants[impl];
    if (s.itx) console.log(`${impl.padEnd(pad)} itx-call: ${fmtN(s.itx.eventsPerSec)} ev/s vs bare capnweb ${fmtN(s.itx.bareEventsPerSec)} ev/s; ratio ${range(s.itx)}; latency p50 ${s.itx.latencyP50ms} ms p99 ${s.itx.latencyP99ms} ms`);
    for (const n of cfg.subscriptions) {
      const w = s[`webhook${n}`];
      if (w) console.log(`${impl.padEnd(pad)} webhook x${n}: ${fmtN(w.deliveriesPerSec)} deliveries/s vs bare POST loop ${fmtN(w.bareRequestsPerSec)} req/s; ratio ${range(w)}; server cpu ${fmtN(w.serverCpuUsPerDelivery)} µs/delivery, bare loop ${fmtN(w.bareCpuUsPerRequest)} µs/request`);
    }
  }
  console.log('');
  for (const t of targets) console.log(`${t.pass ? 'PASS' : 'MISS'}  ${t.target}: ${t.value}`);
  const wallSeconds = (performance.now() - wall0) / 1000;
  machine.loadAverageAtEnd = os.loadavg();
  const load = (l) => l.map((x) => x.toFixed(2)).join(' ');
  console.log(`\n${Math.round(wallSeconds)} s; load average ${load(machine.loadAverageAtStart)} at start, ${load(machine.loadAverageAtEnd)} at end`);
  if (cfg.profile) console.log(`CPU profiles: ${relative(process.cwd(), profileDir)}`);
  if (!flags['no-write']) {
    writeResult('receivers', startedAt, { machine, config: { ...cfg, quick: flags.quick }, summary, targets, itx, webhook, wallSeconds }, flags.out);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
