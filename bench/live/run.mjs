#!/usr/bin/env node
/**
 * bench/live: live delivery to RPC callbacks. See bench/README.md.
 *
 *   npm run bench:live                  # full run
 *   npm run bench:live -- --quick       # smoke run
 *   node bench/live/run.mjs --help      # every option (expects a built workspace)
 *
 * The run is made of parts, each a function in PARTS below that answers its rows, targets and raw
 * figures; `--only NAME` runs one. Part "callbacks": append → live callback latency with
 * 1 and with 100 connections, opened by a separate client process over RPC (watcher.mjs), and in
 * the same run the SSE tail's latency as the baseline, and the CPU time each side spends per
 * probe. Processor folding throughput is measured by processors.mjs beside it.
 */
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { CLI, procCpuMs, root, startLineChild, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { call, fmtMs, machineInfo, median, table, writeResult } from '../lib/report.mjs';

const here = dirname(fileURLToPath(import.meta.url));

const usage = `Usage: node bench/live/run.mjs [options]   (npm run bench:live -- [options])

  --quick              smoke run: 1 round, 100 probes
  --rounds N           repetitions of every measurement (default 3)
  --probes N           probe events per measurement (default 400; the first 10% warm up)
  --interval MS        time between probe appends (default 10)
  --connections LIST   connection counts to measure (default 1,100)
  --durability MODE    full | relaxed (default full)
  --only PART          run one part (callbacks)
  --profile            CPU profiles of the server and the watcher (bench/results/profiles/)
  --out FILE           JSON result file (default bench/results/live-<timestamp>.json)
  --no-write           do not write the JSON result file
  -h, --help           this text`;

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    probes: { type: 'string' },
    interval: { type: 'string', default: '10' },
    connections: { type: 'string', default: '1,100' },
    durability: { type: 'string', default: 'full' },
    only: { type: 'string' },
    out: { type: 'string' },
    profile: { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (flags.help) {
  console.log(usage);
  process.exit(0);
}
const cfg = {
  rounds: Number(flags.rounds ?? (flags.quick ? 1 : 3)),
  probes: Number(flags.probes ?? (flags.quick ? 100 : 400)),
  intervalMs: Number(flags.interval),
  connections: flags.connections.split(',').map(Number),
  durability: flags.durability,
};
if (cfg.durability !== 'full' && cfg.durability !== 'relaxed') throw new Error(`unknown durability ${cfg.durability}`);

const freshDir = tempFolders('rivulet-bench-live-');
const profileDir = join(root, 'bench', 'results', 'profiles');
/** Node flags of a child: a CPU profile named after it with --profile. */
/** A child of this benchmark: ready at "listening on …", then lines; stdin stays open for commands. */
const startChild = (script, args, label) => startLineChild(script, args, label, { nodeArgs: profileArgs(label), stdin: true });

function profileArgs(label) {
  if (!flags.profile) return [];
  mkdirSync(profileDir, { recursive: true });
  return ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', `live-${label}-${Date.now()}.cpuprofile`];
}

// ------------------------------------------------------------------ shared helpers


// ------------------------------------------------------------------ part: callbacks

const WATCHER = join(here, 'watcher.mjs');
const LIVE_PATH = '/bench/live';

/** One measurement: a fresh server, a watcher process with `n` connections and an SSE tail, paced probes. */
async function measureCallbacks(n, round) {
  const server = await startServer([...profileArgs(`server-${n}`), CLI, 'serve', '--port', '0', '--data', freshDir(`live-${n}-r${round}`), '--durability', cfg.durability], 'rivulet');
  let watcher;
  try {
    await call(server.url, 'POST', `/v1/streams${LIVE_PATH}`, { type: 'bench/setup' });
    // The first 10% of the probes (per reader) warm up and are dropped.
    const warmup = Math.floor(cfg.probes / 10);
    watcher = await startChild(
      WATCHER,
      ['--url', server.url, '--path', LIVE_PATH, '--connections', String(n), '--probes', String(cfg.probes), '--warmup', String(warmup), '--sse'],
      'watcher',
    );
    // Paced (open-loop) appends: one probe every interval, each sent without waiting for the last.
    const sends = [];
    const cpu0 = { server: procCpuMs(server.child.pid), watcher: procCpuMs(watcher.child.pid) };
    const t0 = performance.now();
    for (let i = 0; i < cfg.probes; i++) {
      const due = t0 + i * cfg.intervalMs;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const sentAt = performance.timeOrigin + performance.now();
      sends.push(call(server.url, 'POST', `/v1/streams${LIVE_PATH}`, { type: 'bench/probe', payload: { seq: i, sentAt } }));
    }
    await Promise.all(sends);
    await watcher.waitFor((lines) => lines.includes('DONE'));
    // CPU per probe: steadier than latency on a shared machine, and it shows which side pays.
    const cpu = {
      serverUsPerProbe: ((procCpuMs(server.child.pid) - cpu0.server) * 1000) / cfg.probes,
      watcherUsPerProbe: ((procCpuMs(watcher.child.pid) - cpu0.watcher) * 1000) / cfg.probes,
    };
    watcher.send('REPORT');
    const line = await watcher.waitFor((lines) => lines.find((l) => l.startsWith('RESULT ')));
    const result = JSON.parse(line.slice('RESULT '.length));
    // The watcher exits by itself after its report; a profile is written only on that exit.
    if (flags.profile) await new Promise((r) => (watcher.child.exitCode !== null ? r() : watcher.child.once('exit', r)));
    return { connections: n, round, live: result.live, sse: result.sse, cpu };
  } finally {
    watcher?.child.kill('SIGTERM');
    await stopServer(server);
  }
}

async function partCallbacks() {
  const runs = [];
  for (let round = 0; round < cfg.rounds; round++) {
    const counts = round % 2 === 0 ? cfg.connections : [...cfg.connections].reverse();
    for (const n of counts) {
      const r = await measureCallbacks(n, round);
      runs.push(r);
      console.log(
        `  ${String(n).padStart(3)} connection(s) r${round}: live p50 ${fmtMs(r.live.fromCreatedAt.p50)} p99 ${fmtMs(r.live.fromCreatedAt.p99)} ms` +
          ` (send->callback p50 ${fmtMs(r.live.fromSent.p50)} p99 ${fmtMs(r.live.fromSent.p99)})` +
          `   SSE p50 ${fmtMs(r.sse.fromCreatedAt.p50)} p99 ${fmtMs(r.sse.fromCreatedAt.p99)} ms` +
          `   CPU/probe server ${Math.round(r.cpu.serverUsPerProbe)} µs, watcher ${Math.round(r.cpu.watcherUsPerProbe)} µs`,
      );
    }
  }
  const summary = {};
  for (const n of cfg.connections) {
    const rs = runs.filter((r) => r.connections === n);
    const pick = (f) => median(rs.map(f));
    summary[n] = {
      liveP50: pick((r) => r.live.fromCreatedAt.p50),
      liveP99: pick((r) => r.live.fromCreatedAt.p99),
      liveMax: pick((r) => r.live.fromCreatedAt.max),
      sentP50: pick((r) => r.live.fromSent.p50),
      sentP99: pick((r) => r.live.fromSent.p99),
      sseP50: pick((r) => r.sse.fromCreatedAt.p50),
      sseP99: pick((r) => r.sse.fromCreatedAt.p99),
      samples: rs.reduce((k, r) => k + r.live.fromCreatedAt.count, 0),
      serverUsPerProbe: pick((r) => r.cpu.serverUsPerProbe),
      watcherUsPerProbe: pick((r) => r.cpu.watcherUsPerProbe),
    };
  }
  const header = ['connections', 'callback p50 ms', 'p99 ms', 'max ms', 'send->callback p50/p99 ms', 'SSE tail p50 ms', 'SSE p99 ms', 'samples', 'CPU µs/probe server/watcher'];
  const rows = cfg.connections.map((n) => {
    const s = summary[n];
    return [String(n), fmtMs(s.liveP50), fmtMs(s.liveP99), fmtMs(s.liveMax), `${fmtMs(s.sentP50)}/${fmtMs(s.sentP99)}`, fmtMs(s.sseP50), fmtMs(s.sseP99), String(s.samples), `${Math.round(s.serverUsPerProbe)}/${Math.round(s.watcherUsPerProbe)}`];
  });
  const targets = [];
  const hundred = summary[100];
  if (hundred) {
    targets.push({
      target: 'live callback p99 < 10 ms with 100 connections on loopback',
      value: `p99 ${fmtMs(hundred.liveP99)} ms`,
      pass: hundred.liveP99 < 10,
    });
  }
  return {
    title: 'append -> live callback latency (event createdAt to callback, one clock); baseline: the SSE tail in the same run',
    header,
    rows,
    notes: [
      'medians over rounds of each measurement\'s percentiles; createdAt has millisecond resolution (truncated), so the createdAt columns read up to 1 ms high',
      'send->callback: from the driver writing the append request to the callback, sub-millisecond clock (includes HTTP, commit and fsync)',
      'CPU µs/probe: CPU time of the server and of the watcher process (every connection and the SSE tail) per probe event, from /proc',
    ],
    summary,
    targets,
    runs,
  };
}

// ------------------------------------------------------------------ parts

/** Each part answers {title, header, rows, notes, summary, targets, runs}. */
const PARTS = {
  callbacks: partCallbacks,
};

async function main() {
  const startedAt = new Date();
  const wall0 = performance.now();
  const machine = machineInfo(startedAt);
  console.log(`bench/live on ${machine.nproc} x ${machine.cpuModel}, node ${machine.node}, durability ${cfg.durability}`);
  const names = flags.only ? [flags.only] : Object.keys(PARTS);
  const parts = {};
  for (const name of names) {
    const part = PARTS[name];
    if (!part) throw new Error(`unknown part ${name} (parts: ${Object.keys(PARTS).join(', ')})`);
    console.log(`\n${name}:`);
    parts[name] = await part();
    const p = parts[name];
    console.log(`\n${p.title}\n${table(p.header, p.rows)}`);
    for (const note of p.notes) console.log(`  ${note}`);
    for (const t of p.targets) console.log(`${t.pass ? 'PASS' : 'MISS'}  ${t.target}: ${t.value}`);
  }
  const wallSeconds = (performance.now() - wall0) / 1000;
  console.log(`\n${Math.round(wallSeconds)} s; load average at end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  if (!flags['no-write']) {
    writeResult('live', startedAt, { machine, config: { ...cfg, quick: flags.quick }, parts, wallSeconds }, flags.out);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
