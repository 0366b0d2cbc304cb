#!/usr/bin/env node
/**
 * The copy backlog drain of bench/peers (run.mjs `--only copy`) for several builds side by side and
 * nothing else (no NATS): per build and round a fresh server (`--durability full`), a backlog of
 * COUNT events appended in batches of 1000, then a copy subscription from the beginning, timed until
 * its lag is 0. Prints the server's CPU µs per copy per round, and per build the median and the
 * per-round ratios against the first build (rounds alternate the order). For bisecting a change of
 * the CPU per copy between several commits in one run (bench/README "copy drain (copy group)").
 *
 *   node bench/peers/copy-drain-ab.mjs ROUNDS NAME=CLI NAME=CLI ...   (COUNT=200000 by default)
 *
 * GC=1 runs the servers with `--trace-gc-nvp` and adds, per round, what V8's young-generation
 * collections promoted to the old generation during the drain and the GC pauses in all (the
 * drain's CPU per copy depends on them; bench/README "Copy batches of 500").
 *
 * PAD=N gives each event a second text member of N characters (the default events are ~200 bytes
 * stored).
 *
 * NODE_ARGS_<NAME>="--flag ..." runs that build's server with those Node options (V8 heap flags,
 * say), so one build can be set against itself with and without them.
 *
 * SETTLE=S runs `sync` and waits S seconds before each server starts, so that the files the last
 * one wrote are on disk before the next drains (bench/README "The drain's promoted rounds").
 *
 * Each CLI from `node bench/peers/build-commit.mjs COMMIT`, or packages/cli/bin/rivulet.js.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { procCpuMs, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { call } from '../lib/report.mjs';
import { drainBacklog, preloadBacklog } from './copy-backlog.mjs';
import { median } from './verdict.mjs';

const [roundsArg, ...specs] = process.argv.slice(2);
const builds = specs.map((spec) => spec.split('='));
if (!Number(roundsArg) || builds.length === 0 || builds.some((b) => b.length !== 2)) {
  console.error('usage: node bench/peers/copy-drain-ab.mjs ROUNDS NAME=CLI [NAME=CLI ...]');
  process.exit(2);
}
const count = Number(process.env.COUNT ?? 200_000);
const pad = Number(process.env.PAD ?? 0);
const fresh = tempFolders('rivulet-copy-drain-ab-');
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').trim();
const traceGc = process.env.GC === '1';

/** From `--trace-gc-nvp` lines: the bytes promoted and the pause milliseconds, summed. */
function gcTotals(lines) {
  let promoted = 0;
  let pauseMs = 0;
  let scavenges = 0;
  for (const line of lines) {
    if (/ gc=s /.test(line)) scavenges++;
    promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0);
    pauseMs += Number(/ pause=([\d.]+)/.exec(line)?.[1] ?? 0);
  }
  return { promotedMb: promoted / 1e6, pauseMs, scavenges };
}

const settleS = Number(process.env.SETTLE ?? 0);

async function drain(name, cli) {
  if (settleS > 0) {
    execFileSync('sync');
    await new Promise((resolve) => setTimeout(resolve, settleS * 1000));
  }
  const nodeArgs = (process.env[`NODE_ARGS_${name}`] ?? '').split(' ').filter(Boolean);
  const server = await startServer([...nodeArgs, ...(traceGc ? ['--trace-gc-nvp'] : []), cli, 'serve', '--port', '0', '--data', fresh(name), '--durability', 'full'], name);
  let gcLines = [];
  if (traceGc) server.child.stdout.on('data', (chunk) => gcLines.push(...chunk.split('\n').filter((l) => l.includes(' gc='))));
  try {
    await preloadBacklog(server.url, count, pad);
    gcLines = [];
    const cpu0 = procCpuMs(server.child.pid);
    const seconds = await drainBacklog(server.url, name);
    const cpuUs = ((procCpuMs(server.child.pid) - cpu0) * 1000) / count;
    const gc = traceGc ? gcTotals(gcLines) : undefined;
    const { streamMaxOffset } = await call(server.url, 'GET', '/v1/streams/bench/dst?limit=1');
    // The receiving stream: its created event, the subscription's configure event and every copy.
    if (streamMaxOffset < count + 2) throw new Error(`${name}: the receiving stream's head is ${streamMaxOffset}, expected ${count + 2}`);
    return { cpuUs, perSec: count / seconds, gc };
  } finally {
    await stopServer(server);
  }
}

console.log(`copy drain A/B, ${count} events, load ${loadavg()}`);
const results = Object.fromEntries(builds.map(([name]) => [name, []]));
for (let round = 0; round < Number(roundsArg); round++) {
  for (const [name, cli] of round % 2 ? [...builds].reverse() : builds) {
    const r = await drain(name, cli);
    results[name].push(r);
    const gc = r.gc ? `; GC promoted ${r.gc.promotedMb.toFixed(1)} MB, paused ${Math.round(r.gc.pauseMs)} ms, ${r.gc.scavenges} scavenges` : '';
    console.log(`${round + 1} ${name.padEnd(14)} ${r.cpuUs.toFixed(1)} µs CPU/copy ${Math.round(r.perSec)} copies/s${gc}`);
  }
}
const [base] = builds[0];
for (const [name] of builds) {
  const ratios = results[name].map((r, i) => r.cpuUs / results[base][i].cpuUs);
  const rates = results[name].map((r, i) => r.perSec / results[base][i].perSec);
  console.log(
    `${name.padEnd(14)} median ${median(results[name].map((r) => r.cpuUs)).toFixed(2)} µs CPU/copy, ${Math.round(median(results[name].map((r) => r.perSec)))} copies/s; ` +
      `CPU ÷ ${base} per round ${ratios.map((x) => x.toFixed(2)).join(' ')}, median ${median(ratios).toFixed(3)}; ` +
      `copies/s ÷ ${base} per round ${rates.map((x) => x.toFixed(2)).join(' ')}, median ${median(rates).toFixed(3)}`,
  );
}
console.log(`load at the end ${loadavg()}`);
