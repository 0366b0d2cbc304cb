#!/usr/bin/env node
/**
 * The appends group's load (bench/peers run.mjs `--only appends`: 50 closed-loop clients over 100
 * streams, a fresh event per request, a unique idempotency key each) on several Rivulet builds and
 * nothing else: per build and round a fresh server (`--durability full`), a second of warm-up, then
 * SECONDS measured. Prints per round each build's appends per second, its CPU µs per request (from
 * /proc) and the write and read system calls it made per request (/proc/PID/io `syscw`, `syscr`:
 * a WAL frame is two writes, so they count the pages an append commits, which CPU time on a shared
 * machine cannot resolve), then per build the medians and the median of its per-round ratios to
 * the first build. Rounds alternate the order. For A/Bs of a storage change (bench/README "Offsets
 * indexed in batches").
 *
 *   node bench/peers/appends-ab.mjs ROUNDS SECONDS NAME=CLI [NAME=CLI ...]   (NOKEYS=1: no keys; DURABILITY=relaxed: no fsync per commit)
 *
 * A spec NAME=CLI,nokeys runs that build without keys whatever NOKEYS says: a build against
 * itself with and without keys in the same rounds is the keys' cost (run.mjs's target).
 *
 * CLI is a build's bin/rivulet.js (bench/peers/build-commit.mjs prints one for a commit).
 */
import { readFileSync } from 'node:fs';
import { procCpuMs, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { median } from './verdict.mjs';
import { appendLoad } from './load.mjs';

const [roundsText, secondsText, ...specs] = process.argv.slice(2);
const rounds = Number(roundsText);
const seconds = Number(secondsText);
if (!(rounds >= 1) || !(seconds > 0) || specs.length === 0 || specs.some((s) => !s.includes('='))) {
  console.error('usage: node bench/peers/appends-ab.mjs ROUNDS SECONDS NAME=CLI [NAME=CLI ...]   (NOKEYS=1 for appends without keys)');
  process.exit(2);
}
const builds = specs.map((spec) => {
  const at = spec.indexOf('=');
  const [cli, option] = spec.slice(at + 1).split(',');
  return { name: spec.slice(0, at), cli, keys: option === 'nokeys' ? false : !process.env.NOKEYS, rounds: [] };
});
const folder = tempFolders('rivulet-appends-ab-');

/** The process's system call counters (/proc/PID/io). */
function io(pid) {
  const fields = Object.fromEntries(
    readFileSync(`/proc/${pid}/io`, 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(': ')),
  );
  return { writes: Number(fields.syscw), reads: Number(fields.syscr) };
}

const load = (url, durationMs, prefix, keys) => appendLoad({ url, clients: 50, streams: 100, keys, warmupMs: 0, durationMs, pathOf: (i) => `/v1/streams/bench/${prefix}${i}` });

console.log(`appends of 50 clients over 100 streams (${builds.map((b) => `${b.name}: ${b.keys ? 'a unique key each' : 'no keys'}`).join(', ')}); ${rounds} rounds of ${seconds} s`);
for (let round = 1; round <= rounds; round++) {
  for (const build of round % 2 ? builds : [...builds].reverse()) {
    const server = await startServer([build.cli, 'serve', '--port', '0', '--data', folder(build.name), '--durability', process.env.DURABILITY ?? 'full'], build.name);
    try {
      await load(server.url, 1000, 'w', build.keys);
      const pid = server.child.pid;
      const [cpu0, io0] = [procCpuMs(pid), io(pid)];
      const result = await load(server.url, seconds * 1000, 's', build.keys);
      const [cpu1, io1] = [procCpuMs(pid), io(pid)];
      const n = result.totalRequests;
      if (result.errors > 0) throw new Error(`${build.name}: ${result.errors} failed requests, the first: ${result.firstError}`);
      const r = { perSec: result.perSec, cpu: ((cpu1 - cpu0) * 1000) / n, writes: (io1.writes - io0.writes) / n, reads: (io1.reads - io0.reads) / n };
      build.rounds.push(r);
      console.log(`round ${round} ${build.name.padEnd(10)} ${Math.round(r.perSec)}/s, ${r.cpu.toFixed(1)} µs CPU/req, ${r.writes.toFixed(2)} writes and ${r.reads.toFixed(2)} reads/req`);
    } finally {
      await stopServer(server);
    }
  }
}
const first = builds[0];
for (const build of builds) {
  const m = (f) => median(build.rounds.map(f));
  const ratio = (f) => median(build.rounds.map((r, i) => f(r) / f(first.rounds[i])));
  console.log(
    `${build.name.padEnd(10)} ${Math.round(m((r) => r.perSec))}/s, ${m((r) => r.cpu).toFixed(1)} µs CPU/req, ${m((r) => r.writes).toFixed(2)} writes/req` +
      (build === first ? '' : ` | ÷ ${first.name}: per s ${ratio((r) => r.perSec).toFixed(3)}, CPU ${ratio((r) => r.cpu).toFixed(3)}, writes ${ratio((r) => r.writes).toFixed(3)}`),
  );
}
