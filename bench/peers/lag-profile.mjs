#!/usr/bin/env node
/**
 * A CPU profile of the live copy lag group's load (bench/peers run.mjs `--only lag`) on Rivulet: a
 * fresh server (`--durability full`) under `node --cpu-prof`, RATE events a second for SECONDS
 * seconds into a source copied live into a target read by SSE (peers/live-lag.mjs), stopped.
 * Prints the lag figures, the server's CPU per event and the .cpuprofile's path; summarise it with
 * bench/append/profile-summary.mjs (`--requests N`, N the events, for µs per event).
 *
 *   node bench/peers/lag-profile.mjs [CLI]   (RATE=1000 SECONDS=6)
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { rivuletLiveLag } from './live-lag.mjs';

const cli = process.argv[2] ?? CLI;
const rate = Number(process.env.RATE ?? 1000);
const seconds = Number(process.env.SECONDS ?? 6);
const profiles = mkdtempSync(join(tmpdir(), 'rivulet-lag-cpuprofile-'));
const data = tempFolders('rivulet-lag-profile-')('data');
const server = await startServer(['--cpu-prof', `--cpu-prof-dir=${profiles}`, cli, 'serve', '--port', '0', '--data', data, '--durability', 'full'], 'lag');
const count = rate * seconds;
let figures;
try {
  figures = await rivuletLiveLag(server, { rate, count, warm: rate, timeoutMs: 10_000 });
} finally {
  await stopServer(server);
}
const [file] = readdirSync(profiles).filter((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error(`no .cpuprofile in ${profiles}`);
console.log(`lag p50 ${figures.lagP50ms.toFixed(3)} ms, p99 ${figures.lagP99ms.toFixed(3)} ms, ${figures.cpuUsPerEvent.toFixed(0)} µs CPU/event (profiled)`);
console.log(`${join(profiles, file)}  (--requests ${count})`);
