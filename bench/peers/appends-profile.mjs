#!/usr/bin/env node
/**
 * CPU profiles of the appends group's load (bench/peers run.mjs `--only appends`) on Rivulet, with
 * and without idempotency keys: for each, a fresh server (`--durability full`) under `node
 * --cpu-prof`, 50 closed-loop clients over 100 streams for WARMUP + DURATION seconds, stopped.
 * Prints each .cpuprofile's path and the server's CPU per request; summarise them with
 * bench/append/profile-summary.mjs (`--requests N` for µs per request).
 *
 *   node bench/peers/appends-profile.mjs [CLI]   (DURATION=5 WARMUP=1 CLIENTS=50 STREAMS=100)
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, procCpuMs, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { appendLoad } from './load.mjs';

const cli = process.argv[2] ?? CLI;
const env = (name, fallback) => Number(process.env[name] ?? fallback);
const [durationMs, warmupMs, clients, streams] = [env('DURATION', 5) * 1000, env('WARMUP', 1) * 1000, env('CLIENTS', 50), env('STREAMS', 100)];
const folder = tempFolders('rivulet-appends-profile-');

for (const keys of [true, false]) {
  const label = keys ? 'keys' : 'nokeys';
  const profiles = mkdtempSync(join(tmpdir(), `rivulet-appends-cpuprofile-${label}-`));
  const args = ['--cpu-prof', `--cpu-prof-dir=${profiles}`, cli, 'serve', '--port', '0', '--data', folder(label), '--durability', 'full'];
  const server = await startServer(args, label);
  let result;
  let cpuMs;
  try {
    const cpu0 = procCpuMs(server.child.pid);
    result = await appendLoad({ url: server.url, clients, streams, keys, warmupMs, durationMs, pathOf: (i) => `/v1/streams/bench/s${i}` });
    cpuMs = procCpuMs(server.child.pid) - cpu0;
  } finally {
    await stopServer(server);
  }
  const [file] = readdirSync(profiles).filter((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no .cpuprofile in ${profiles}`);
  console.log(`${label}: ${Math.round(result.perSec)}/s, ${((cpuMs * 1000) / result.totalRequests).toFixed(1)} µs CPU/request over ${result.totalRequests} requests (profiled)`);
  console.log(`  ${join(profiles, file)}  (--requests ${result.totalRequests})`);
}
