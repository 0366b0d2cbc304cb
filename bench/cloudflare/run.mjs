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
 *   node bench/cloudflare/run.mjs --hosts worker --variant base=/tmp/base/index.js --scenarios appendOne,appendMany
 *                                            # this Worker bundle against another build's, same rounds
 *
 * Scenarios, each measured on a fresh server of each host:
 * - append, one stream: N closed-loop clients appending single events to one stream;
 * - append, one stream per client: the same load spread over N streams (N objects on Cloudflare);
 * - copy 1 -> 1: the same one-stream load with a copy subscription to a receiving stream;
 *   copies committed inside the window count, after waiting for the receiver to catch up.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { execFileSync } from 'node:child_process';
import { Miniflare } from 'miniflare';
import { runLoad } from '../append/loadgen.mjs';
import { CLI, procCpuMs, root, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { call, fmtMs, fmtN, machineInfo, median, writeResult } from '../lib/report.mjs';

const usage = `Usage: node bench/cloudflare/run.mjs [options]   (npm run bench:cloudflare -- [options])

  --quick              smoke run: 1 round, 0.5 s warm-up, 2 s per measurement
  --rounds N           repetitions, hosts alternated (default 2)
  --warmup S           warm-up seconds per measurement (default 1)
  --duration S         measured seconds per measurement (default 4)
  --clients N          concurrent clients (default 20)
  --hosts LIST         hosts to measure, in order, of node,worker and the variants' names
                       (default node,worker); the first is what the others are compared with
  --variant NAME=FILE  also measure another Worker bundle (e.g. an older commit's
                       packages/server/dist/worker/index.js) as host NAME, in the same rounds;
                       repeatable
  --scenarios LIST     of appendOne,appendMany,copy (default all)
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
    hosts: { type: 'string', default: 'node,worker' },
    variant: { type: 'string', multiple: true, default: [] },
    scenarios: { type: 'string' },
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

/** Pids of this process's descendants (the server, or workerd under Miniflare), from /proc. */
function descendants() {
  const parent = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const out = [];
  const walk = (pid) => {
    for (const [child, ppid] of parent) {
      if (ppid !== pid) continue;
      out.push(child);
      walk(child);
    }
  };
  walk(process.pid);
  return out;
}

/** CPU milliseconds used so far by the server processes (the descendants of this process). */
const serverCpuMs = (pids) => pids.reduce((sum, pid) => sum + (procCpuMs(pid) || 0), 0);

/** A Worker bundle run by Miniflare. */
const workerHost = (bundle) => async (dir) => {
  const mf = new Miniflare({
    modules: [{ type: 'ESModule', path: 'worker.js', contents: readFileSync(bundle, 'utf8') }],
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
};

/** The hosts: each answers {url, stop()} on a fresh data folder. */
const HOSTS = {
  node: async (dir) => {
    const server = await startServer([CLI, 'serve', '--port', '0', '--data', dir, '--durability', 'full'], 'node host');
    return { url: server.url, stop: () => stopServer(server) };
  },
  worker: workerHost(WORKER_BUNDLE),
};
for (const spec of flags.variant) {
  const at = spec.indexOf('=');
  if (at <= 0) throw new Error(`--variant ${spec}: expected NAME=FILE`);
  HOSTS[spec.slice(0, at)] = workerHost(spec.slice(at + 1));
}
// Variants not named in --hosts come after them; the first host is what the others are compared with.
const hostNames = [...new Set([...flags.hosts.split(',').filter(Boolean), ...flags.variant.map((v) => v.slice(0, v.indexOf('=')))])];
for (const host of hostNames) if (!HOSTS[host]) throw new Error(`unknown host ${host}`);

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
    const pids = descendants();
    const cpuBefore = serverCpuMs(pids);
    const load = await runLoad({ url: server.url, path: scenario.path, clients: cfg.clients, batch: 1, warmupMs: cfg.warmupMs, durationMs: cfg.durationMs });
    // Server CPU over the whole load (warm-up included) per request it answered.
    const cpuUsPerEvent = ((serverCpuMs(pids) - cpuBefore) * 1000) / load.totalRequests;
    const result = { host, name, round, eventsPerSec: load.eventsPerSec, cpuUsPerEvent, p50ms: load.p50ms, p99ms: load.p99ms, errors: load.errors, firstError: load.firstError };
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
  const scenarioNames = flags.scenarios ? flags.scenarios.split(',') : Object.keys(SCENARIOS);
  for (const name of scenarioNames) if (!SCENARIOS[name]) throw new Error(`unknown scenario ${name}`);
  for (let round = 0; round < cfg.rounds; round++) {
    for (const name of scenarioNames) {
      // Alternate which host goes first, so drift on a noisy machine hits all alike.
      for (const host of round % 2 === 0 ? hostNames : [...hostNames].reverse()) {
        const r = await measure(host, name, round);
        runs.push(r);
        console.log(
          `  ${name.padEnd(10)} ${host.padEnd(6)} r${round}: ${fmtN(r.eventsPerSec).padStart(7)} ev/s  cpu ${fmtN(r.cpuUsPerEvent)} µs/ev  p50 ${fmtMs(r.p50ms)} p99 ${fmtMs(r.p99ms)} ms` +
            (r.catchUpMs !== undefined ? `  (source ${fmtN(r.appendEventsPerSec)} ev/s, catch-up ${fmtMs(r.catchUpMs)} ms)` : '') +
            (r.errors ? `  ERRORS ${r.errors}: ${r.firstError}` : ''),
        );
      }
    }
  }
  const summary = {};
  const first = hostNames[0];
  for (const name of scenarioNames) {
    const of = (host, key) => median(runs.filter((r) => r.name === name && r.host === host).map((r) => r[key]));
    // Per round, each host against the first one measured in that round (the same machine state).
    const paired = (host, key) =>
      median(
        [...Array(cfg.rounds).keys()].map((round) => {
          const at = (h) => runs.find((r) => r.name === name && r.host === h && r.round === round)?.[key];
          return at(host) / at(first);
        }),
      );
    summary[name] = { title: SCENARIOS[name].title, hosts: {} };
    for (const host of hostNames) {
      summary[name].hosts[host] = {
        eventsPerSec: of(host, 'eventsPerSec'),
        cpuUsPerEvent: of(host, 'cpuUsPerEvent'),
        p99ms: of(host, 'p99ms'),
        ratio: paired(host, 'eventsPerSec'),
        cpuRatio: paired(host, 'cpuUsPerEvent'),
      };
    }
  }
  console.log(`\n| scenario | host | ev/s (median) | server CPU µs/event | ev/s / ${first} (paired median) | CPU / ${first} | p99 ms |`);
  console.log('|---|---|---:|---:|---:|---:|---:|');
  for (const s of Object.values(summary)) {
    for (const [host, h] of Object.entries(s.hosts)) {
      console.log(`| ${s.title} | ${host} | ${fmtN(h.eventsPerSec)} | ${fmtN(h.cpuUsPerEvent)} | ${h.ratio.toFixed(3)} | ${h.cpuRatio.toFixed(3)} | ${fmtMs(h.p99ms)} |`);
    }
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
