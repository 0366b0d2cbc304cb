#!/usr/bin/env node
/**
 * bench/append: append throughput and latency of Rivulet against baselines measured in the same
 * run, in both durability modes. See bench/README.md.
 *
 *   npm run bench:append                 # full run (about 3.5 minutes)
 *   npm run bench:append -- --quick      # smoke run (about 30 seconds)
 *   node bench/append/run.mjs --help     # every option (expects a built workspace)
 */
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { runLoad } from './loadgen.mjs';
import { judgeTargets, printSummary, summarise } from './summary.mjs';
import { CLI, machineBusyMs, ownCpuMs, procCpuMs, root, startServer, stopServer, tempFolders, track } from '../lib/processes.mjs';
import { fmtMs, fmtN, machineInfo, writeResult } from '../lib/report.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const BASELINE = join(here, 'baseline-server.mjs');
const RAW = join(here, 'raw-sqlite.mjs');
const PROBE = join(here, 'probe-groups.mjs');
const LAUNCH_DIST = join(here, 'launch-dist.mjs');

const usage = `Usage: node bench/append/run.mjs [options]   (npm run bench:append -- [options])

  --quick              smoke run: 1 round, 0.4 s warm-up, 1.2 s per measurement (about 30 s)
  --rounds N           repetitions of every measurement, order alternated (default 2)
  --warmup S           warm-up seconds per measurement (default 1.5)
  --duration S         measured seconds per measurement (default 5)
  --modes LIST         durability modes, comma separated (default full,relaxed)
  --scenarios LIST     a,b,c (default all)
  --clients N          concurrent clients of scenario b (default 50)
  --streams N          streams of scenario b (default 100)
  --batch N            events per request of scenario c (default 100)
  --batch-clients N    concurrent clients of scenario c (default 1)
  --client raw|http    the load generator's HTTP client (default raw; http = node:http, as before
                       2026-11-30 14:00: it used ~50 µs of CPU per request, see bench/README)
  --only WHAT          rivulet | baseline: run one side of the HTTP comparison
  --variant NAME=PATH  also measure another server build (repeatable, interleaved with the others):
                       PATH is a packages/server dist folder (started by launch-dist.mjs; keep
                       copies inside the repo, e.g. bench/.variants/NAME/dist), or a script run as
                       "node PATH serve --port 0 --data DIR --durability MODE" that prints
                       "listening on http://HOST:PORT"
  --probe              preload probe-groups.mjs into the Rivulet server: group-commit sizes, fsync times
  --profile            run the server children with --cpu-prof (profiles under bench/results/profiles/)
  --out FILE           JSON result file (default bench/results/append-<timestamp>.json)
  --no-write           do not write the JSON result file
  -h, --help           this text`;

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    warmup: { type: 'string' },
    duration: { type: 'string' },
    modes: { type: 'string', default: 'full,relaxed' },
    scenarios: { type: 'string', default: 'a,b,c' },
    clients: { type: 'string', default: '50' },
    streams: { type: 'string', default: '100' },
    batch: { type: 'string', default: '100' },
    'batch-clients': { type: 'string', default: '1' },
    only: { type: 'string' },
    client: { type: 'string', default: 'raw' },
    variant: { type: 'string', multiple: true, default: [] },
    probe: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
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
  warmupMs: Number(flags.warmup ?? (flags.quick ? 0.4 : 1.5)) * 1000,
  durationMs: Number(flags.duration ?? (flags.quick ? 1.2 : 5)) * 1000,
  rawWarmupMs: flags.quick ? 200 : 300,
  rawDurationMs: flags.quick ? 600 : 2000,
  modes: flags.modes.split(',').map((s) => s.trim()),
  scenarios: flags.scenarios.split(',').map((s) => s.trim()),
  bClients: Number(flags.clients),
  bStreams: Number(flags.streams),
  batch: Number(flags.batch),
  cClients: Number(flags['batch-clients']),
  only: flags.only ?? null,
  client: flags.client,
  variants: flags.variant.map((v) => {
    const at = v.indexOf('=');
    if (at <= 0) throw new Error(`--variant expects NAME=PATH, got ${v}`);
    const path = resolve(v.slice(at + 1));
    return statSync(path).isDirectory() ? { name: v.slice(0, at), launcher: LAUNCH_DIST, launcherArgs: ['--dist', path] } : { name: v.slice(0, at), launcher: path, launcherArgs: [] };
  }),
  probe: flags.probe,
  profile: flags.profile,
};
if (cfg.client !== 'raw' && cfg.client !== 'http') throw new Error(`--client must be raw or http, got ${cfg.client}`);
for (const m of cfg.modes) if (m !== 'full' && m !== 'relaxed') throw new Error(`unknown mode ${m}`);
for (const s of cfg.scenarios) if (!['a', 'b', 'c'].includes(s)) throw new Error(`unknown scenario ${s}`);

const SCENARIOS = {
  a: { name: 'a', title: '1 client, 1 event/request', clients: 1, batch: 1, path: () => '/v1/streams/bench/a' },
  b: {
    name: 'b',
    title: `${cfg.bClients} clients over ${cfg.bStreams} streams, 1 event/request`,
    clients: cfg.bClients,
    batch: 1,
    path: () => `/v1/streams/bench/b-${String(Math.floor(Math.random() * cfg.bStreams)).padStart(3, '0')}`,
  },
  c: {
    name: 'c',
    title: `${cfg.cClients} client(s), ${cfg.batch} events/request`,
    clients: cfg.cClients,
    batch: cfg.batch,
    path: (client) => `/v1/streams/bench/c-${client}`,
  },
};

// Child processes, temporary folders, CPU accounting and machine facts: bench/lib/processes.mjs.
const freshDir = tempFolders('rivulet-bench-append-');

function runRaw(mode, rows) {
  return new Promise((resolvePromise, reject) => {
    const dir = freshDir(`raw-${mode}-${rows}`);
    const child = track(
      spawn(
        process.execPath,
        [RAW, '--data', dir, '--durability', mode, '--rows', String(rows), '--warmup-ms', String(cfg.rawWarmupMs), '--duration-ms', String(cfg.rawDurationMs)],
        { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
      ),
    );
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (c) => (out += c));
    child.once('exit', (code) => {
      rmSync(dir, { recursive: true, force: true });
      if (code !== 0) return reject(new Error(`raw-sqlite exited with ${code}`));
      resolvePromise(JSON.parse(out.trim().split('\n').pop()));
    });
  });
}

const profileDir = join(root, 'bench', 'results', 'profiles', new Date().toISOString().replace(/[:.]/g, '-'));

async function runHttp(impl, mode, scenario, round) {
  const dir = freshDir(`${impl}-${mode}-${scenario.name}`);
  const nodeFlags = [];
  const variant = cfg.variants.find((v) => v.name === impl);
  if (impl !== 'baseline' && cfg.probe) nodeFlags.push('--import', PROBE);
  if (cfg.profile) {
    mkdirSync(profileDir, { recursive: true });
    nodeFlags.push('--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', `${impl}-${mode}-${scenario.name}-r${round}.cpuprofile`);
  }
  const args =
    impl === 'baseline'
      ? [...nodeFlags, BASELINE, '--port', '0', '--data', dir, '--durability', mode]
      : [...nodeFlags, ...(variant ? [variant.launcher, ...variant.launcherArgs] : [CLI]), 'serve', '--port', '0', '--data', dir, '--durability', mode];
  const server = await startServer(args, impl);
  const cpu0 = procCpuMs(server.child.pid);
  const self0 = process.cpuUsage();
  const machine0 = machineBusyMs();
  const t0 = performance.now();
  const load = await runLoad({
    url: server.url,
    path: scenario.path,
    clients: scenario.clients,
    batch: scenario.batch,
    warmupMs: cfg.warmupMs,
    durationMs: cfg.durationMs,
    client: cfg.client,
  });
  const elapsed = performance.now() - t0;
  const serverCpuMs = procCpuMs(server.child.pid) - cpu0;
  const self = process.cpuUsage(self0);
  const machine1 = machineBusyMs();
  const serverCpu = serverCpuMs / elapsed;
  // CPU that neither the server nor the load generator used during this measurement, in cores.
  const otherCores =
    machine0 && machine1 ? Math.max(0, machine1.busy - machine0.busy - serverCpuMs - (self.user + self.system) / 1000) / elapsed : NaN;
  const stderr = await stopServer(server);
  rmSync(dir, { recursive: true, force: true });
  const probeLine = stderr.split('\n').find((l) => l.startsWith('PROBE '));
  const serverCpuPerRequestMs = serverCpuMs / Math.max(1, load.totalRequests);
  const result = { impl, mode, scenario: scenario.name, round, ...load, serverCpu, serverCpuPerRequestMs, otherCores };
  if (probeLine) result.probe = JSON.parse(probeLine.slice(6));
  const otherStderr = stderr
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('PROBE '))
    .join('\n');
  if (otherStderr) result.serverStderr = otherStderr.slice(0, 2000);
  if (load.errors > 0) console.error(`  ! ${impl} ${mode} ${scenario.name}: ${load.errors} failed requests, first: ${load.firstError}`);
  return result;
}

async function main() {
  const startedAt = new Date();
  const wall0 = performance.now();
  const busy0 = machineBusyMs();
  const ourCpu0 = ownCpuMs();
  const load0 = os.loadavg();
  const machine = { ...machineInfo(startedAt), totalMemGiB: +(os.totalmem() / 2 ** 30).toFixed(1) };
  const estimate =
    (cfg.modes.length * cfg.scenarios.length * ((cfg.only ? 1 : 2) + cfg.variants.length) * cfg.rounds * (cfg.warmupMs + cfg.durationMs + 700) +
      cfg.modes.length * 2 * cfg.rounds * (cfg.rawWarmupMs + cfg.rawDurationMs + 300)) /
    1000;
  console.log(`bench/append on ${machine.nproc} x ${machine.cpuModel}, node ${machine.node}, load average ${load0.map((l) => l.toFixed(2)).join(' ')}`);
  console.log(
    `${cfg.rounds} round(s), ${cfg.warmupMs / 1000} s warm-up + ${cfg.durationMs / 1000} s measured per run, about ${Math.round(estimate)} s in all\n`,
  );

  const runs = [];
  const raw = [];
  let otherCpuMs = 0;
  for (const mode of cfg.modes) {
    for (let round = 0; round < cfg.rounds; round++) {
      // Alternate the order between rounds so drift on a noisy machine hits both sides alike.
      const all = [...(cfg.only ? [cfg.only] : ['baseline', 'rivulet']), ...cfg.variants.map((v) => v.name)];
      const impls = round % 2 === 0 ? all : [...all].reverse();
      for (const name of cfg.scenarios) {
        for (const impl of impls) {
          const r = await runHttp(impl, mode, SCENARIOS[name], round);
          runs.push(r);
          console.log(
            `  ${mode.padEnd(7)} ${name} ${impl.padEnd(Math.max(8, ...cfg.variants.map((v) => v.name.length)))} r${round}: ${fmtN(r.eventsPerSec).padStart(8)} ev/s ${fmtN(r.requestsPerSec).padStart(7)} req/s  p50 ${fmtMs(r.p50ms)} ms  p99 ${fmtMs(r.p99ms)} ms  server cpu ${(r.serverCpu * 100).toFixed(0)}% (${(r.serverCpuPerRequestMs * 1000).toFixed(0)} µs/req)  loadgen cpu ${(r.loadgenCpu * 100).toFixed(0)}%  others ${(r.otherCores * 100).toFixed(0)}%${r.errors ? `  ERRORS ${r.errors}` : ''}`,
          );
          if (r.probe) {
            const p = r.probe;
            console.log(
              `      probe: ${p.commits} commits, event rows/commit mean ${p.eventRowsPerCommit?.mean.toFixed(1)} p50 ${p.eventRowsPerCommit?.p50} max ${p.eventRowsPerCommit?.max}, COMMIT ms p50 ${fmtMs(p.commitMs?.p50)} p99 ${fmtMs(p.commitMs?.p99)}, time in COMMIT ${((p.commitTotalMs / p.uptimeMs) * 100).toFixed(0)}% of uptime` +
                (p.slowCommits ? `, ${p.slowCommits.count} COMMITs > 1 ms took ${p.slowCommits.totalMs.toFixed(0)} ms` : ''),
            );
          }
        }
      }
      for (const rows of [1, cfg.batch]) {
        const r = { mode, round, ...(await runRaw(mode, rows)) };
        raw.push(r);
        console.log(`  ${mode.padEnd(7)} raw SQLite ${String(rows).padStart(3)} row(s)/tx r${round}: ${fmtN(r.rowsPerSec).padStart(8)} rows/s  p50 ${fmtMs(r.p50ms)} ms  p99 ${fmtMs(r.p99ms)} ms`);
      }
    }
  }

  const wallMs = performance.now() - wall0;
  const busy1 = machineBusyMs();
  // Our own CPU: this process (the load generator) and every child it waited for (servers, raw runs).
  const ourCpuMs = ownCpuMs() - ourCpu0;
  if (busy0 && busy1) otherCpuMs = Math.max(0, busy1.busy - busy0.busy - ourCpuMs);
  machine.loadavgAtEnd = os.loadavg();
  machine.otherProcessesCpuShare = busy0 && busy1 ? otherCpuMs / (busy1.busy - busy0.busy + busy1.idle - busy0.idle) : null;

  const summary = summarise(cfg, SCENARIOS, runs, raw);
  const targets = judgeTargets(summary);
  printSummary(summary, targets, cfg);
  console.log(
    `\n${Math.round(wallMs / 1000)} s; other processes used ${machine.otherProcessesCpuShare === null ? '?' : `${(machine.otherProcessesCpuShare * 100).toFixed(0)}%`} of the machine's CPU during the run; load average at end ${machine.loadavgAtEnd.map((l) => l.toFixed(2)).join(' ')}`,
  );

  const errors = runs.reduce((s, r) => s + r.errors, 0);
  if (errors > 0) console.log(`WARNING: ${errors} failed requests (see the JSON for the first error of each run)`);

  if (!flags['no-write']) {
    writeResult('append', startedAt, { machine, config: { ...cfg, quick: flags.quick }, summary, targets, runs, raw, wallSeconds: wallMs / 1000 }, flags.out);
  }
  if (cfg.profile) console.log(`CPU profiles: ${relative(process.cwd(), profileDir)}`);
}

// Children and temporary folders are cleaned up when the process exits (bench/lib/processes.mjs).
main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
