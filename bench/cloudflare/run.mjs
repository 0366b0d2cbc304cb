#!/usr/bin/env node
/**
 * bench/cloudflare: the Worker host under Miniflare (workerd, SQLite-backed Durable Objects on
 * disk) next to the Node host, in one run, on the same load — reported as a ratio. Absolute
 * numbers of a local emulator say little about Cloudflare; the ratio shows what the Durable Object
 * adapter and the object-per-stream routing cost on one machine. See bench/README.md.
 *
 *   npm run bench:cloudflare                 # full run (about 2 minutes)
 *   npm run bench:cloudflare -- --quick      # smoke run (about 40 seconds)
 *   node bench/cloudflare/run.mjs --help     # every option (expects a built workspace)
 *
 * Scenarios, each measured on a fresh server of each host:
 * - append, one stream: N closed-loop clients appending single events to one stream;
 * - append, one stream per client: the same load spread over N streams (N objects on Cloudflare);
 * - copy 1 -> 1: the same one-stream load with a copy subscription to a receiving stream;
 *   copies committed inside the window count, after waiting for the receiver to catch up.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { execFileSync } from 'node:child_process';
import { Miniflare } from 'miniflare';
import { runLoad } from '../append/loadgen.mjs';
import { CLI, root, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { call, fmtMs, fmtN, machineInfo, median, writeResult } from '../lib/report.mjs';

const usage = `Usage: node bench/cloudflare/run.mjs [options]   (npm run bench:cloudflare -- [options])

  --quick              smoke run: 1 round, 0.5 s warm-up, 2 s per measurement
  --rounds N           repetitions, hosts alternated (default 2)
  --warmup S           warm-up seconds per measurement (default 1)
  --duration S         measured seconds per measurement (default 4)
  --clients N          concurrent clients (default 20)
  --out FILE           JSON result file (default bench/results/cloudflare-<timestamp>.json)
  --no-write           do not write the JSON result file
  -h, --help           this text`;

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    warmup: { type: 'string' },
    duration: { type: 'string' },
    clients: { type: 'string', default: '20' },
    out: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (flags.help) {
  console.log(usage);
  process.exit(0);
}
const cfg = {
  rounds: Number(flags.rounds ?? (flags.quick ? 1 : 2)),
  warmupMs: Number(flags.warmup ?? (flags.quick ? 0.5 : 1)) * 1000,
  durationMs: Number(flags.duration ?? (flags.quick ? 2 : 4)) * 1000,
  clients: Number(flags.clients),
};

const freshDir = tempFolders('rivulet-bench-cloudflare-');
const SOURCE = '/bench/src';
const RECEIVER = '/bench/dst';
const CATCH_UP_MS = 180_000;
const WORKER_BUNDLE = join(root, 'packages/server/dist/worker/index.js');

const streamUrl = (path) => `/v1/streams${path}`;

async function caughtUp(url, source) {
  const deadline = Date.now() + CATCH_UP_MS;
  for (;;) {
    const { runtime } = await call(url, 'GET', `${streamUrl(source)}:state`);
    let lagging = 0;
    for (const s of Object.values(runtime?.subscriptions ?? {})) lagging += s.lag;
    if (lagging === 0) return;
    if (Date.now() > deadline) throw new Error(`the receiver is still ${lagging} events behind after ${CATCH_UP_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function copiesIn(url, path, from, to) {
  let after = 0;
  let inWindow = 0;
  let total = 0;
  for (;;) {
    const page = await call(url, 'GET', `${streamUrl(path)}?afterOffset=${after}&limit=500`);
    for (const event of page.events) {
      if (!event.source?.copiedFrom) continue;
      total++;
      const at = Date.parse(event.createdAt);
      if (at >= from && at < to) inWindow++;
    }
    if (page.events.length < 500) return { inWindow, total };
    after = page.events[page.events.length - 1].offset;
  }
}

/** The two hosts: each answers {url, stop()} on a fresh data folder. */
const HOSTS = {
  node: async (dir) => {
    const server = await startServer([CLI, 'serve', '--port', '0', '--data', dir, '--durability', 'full'], 'node host');
    return { url: server.url, stop: () => stopServer(server) };
  },
  worker: async (dir) => {
    const mf = new Miniflare({
      modules: [{ type: 'ESModule', path: 'worker.js', contents: readFileSync(WORKER_BUNDLE, 'utf8') }],
      compatibilityDate: '2026-04-01',
      host: '127.0.0.1',
      port: 0,
      bindings: { RIVULET_OPEN: 'true' },
      durableObjects: {
        STREAMS: { className: 'StreamObject', useSQLite: true },
        STREAM_INDEX: { className: 'IndexObject', useSQLite: true },
        RPC_HUB: { className: 'HubObject', useSQLite: true },
      },
      durableObjectsPersist: dir,
    });
    const url = (await mf.ready).origin;
    return { url, stop: () => mf.dispose() };
  },
};

const SCENARIOS = {
  appendOne: {
    title: 'append, one stream',
    path: () => streamUrl(SOURCE),
  },
  appendMany: {
    title: 'append, one stream per client',
    path: (client) => streamUrl(`/bench/s${client}`),
  },
  copy: {
    title: 'copy 1 -> 1 (copies/s)',
    path: () => streamUrl(SOURCE),
    setup: (url) =>
      call(url, 'POST', `${streamUrl(RECEIVER)}:subscribeToEventsFrom`, { sourceStreamPath: SOURCE, subscriptionKey: 'k', delivery: { start: 'now' } }),
  },
};

async function measure(host, name, round) {
  const scenario = SCENARIOS[name];
  const server = await HOSTS[host](freshDir(`${host}-${name}-r${round}`));
  try {
    await call(server.url, 'POST', streamUrl(SOURCE), { type: 'bench/setup' });
    await scenario.setup?.(server.url);
    const started = Date.now();
    const load = await runLoad({ url: server.url, path: scenario.path, clients: cfg.clients, batch: 1, warmupMs: cfg.warmupMs, durationMs: cfg.durationMs });
    const result = { host, name, round, eventsPerSec: load.eventsPerSec, p50ms: load.p50ms, p99ms: load.p99ms, errors: load.errors, firstError: load.firstError };
    if (name === 'copy') {
      const from = started + cfg.warmupMs;
      const t0 = Date.now();
      await caughtUp(server.url, SOURCE);
      const copies = await copiesIn(server.url, RECEIVER, from, from + cfg.durationMs);
      Object.assign(result, { appendEventsPerSec: load.eventsPerSec, eventsPerSec: copies.inWindow / (cfg.durationMs / 1000), copies: copies.total, catchUpMs: Date.now() - t0 });
    }
    return result;
  } finally {
    await server.stop();
  }
}


async function main() {
  execFileSync(process.execPath, [join(root, 'scripts/build-worker.mjs')], { stdio: 'inherit' });
  const startedAt = new Date();
  const machine = {
    ...machineInfo(startedAt),
    miniflare: JSON.parse(readFileSync(join(root, 'node_modules/miniflare/package.json'), 'utf8')).version,
  };
  console.log(`bench/cloudflare on ${machine.nproc} x ${machine.cpuModel}, node ${machine.node}, miniflare ${machine.miniflare}, ${cfg.clients} clients`);
  const runs = [];
  for (let round = 0; round < cfg.rounds; round++) {
    for (const name of Object.keys(SCENARIOS)) {
      // Alternate which host goes first, so drift on a noisy machine hits both alike.
      for (const host of round % 2 === 0 ? ['node', 'worker'] : ['worker', 'node']) {
        const r = await measure(host, name, round);
        runs.push(r);
        console.log(
          `  ${name.padEnd(10)} ${host.padEnd(6)} r${round}: ${fmtN(r.eventsPerSec).padStart(7)} ev/s  p50 ${fmtMs(r.p50ms)} p99 ${fmtMs(r.p99ms)} ms` +
            (r.catchUpMs !== undefined ? `  (source ${fmtN(r.appendEventsPerSec)} ev/s, catch-up ${fmtMs(r.catchUpMs)} ms)` : '') +
            (r.errors ? `  ERRORS ${r.errors}: ${r.firstError}` : ''),
        );
      }
    }
  }
  const summary = {};
  for (const name of Object.keys(SCENARIOS)) {
    const of = (host, key) => median(runs.filter((r) => r.name === name && r.host === host).map((r) => r[key]));
    const node = of('node', 'eventsPerSec');
    const worker = of('worker', 'eventsPerSec');
    summary[name] = {
      title: SCENARIOS[name].title,
      nodeEventsPerSec: node,
      workerEventsPerSec: worker,
      ratio: worker / node,
      nodeP99ms: of('node', 'p99ms'),
      workerP99ms: of('worker', 'p99ms'),
    };
  }
  console.log('\n| scenario | Node host ev/s | Worker host (Miniflare) ev/s | Worker / Node | p99 ms Node / Worker |');
  console.log('|---|---:|---:|---:|---:|');
  for (const s of Object.values(summary)) {
    console.log(`| ${s.title} | ${fmtN(s.nodeEventsPerSec)} | ${fmtN(s.workerEventsPerSec)} | ${s.ratio.toFixed(2)} | ${fmtMs(s.nodeP99ms)} / ${fmtMs(s.workerP99ms)} |`);
  }
  if (!flags['no-write']) {
    writeResult('cloudflare', startedAt, { machine, config: cfg, summary, runs }, flags.out);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
