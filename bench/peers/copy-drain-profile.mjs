#!/usr/bin/env node
/**
 * A CPU profile of the copy backlog drain alone (bench/peers run.mjs `--only copy`): a server
 * (`--durability full`) preloads COUNT events in batches of 1000 and stops; a second server on the
 * same data folder, started with `node --cpu-prof`, runs the copy subscription from the beginning
 * until its lag is 0 and stops. The profile holds only that server's start and the drain, not the
 * preload. Prints the .cpuprofile's path; summarise it with bench/append/profile-summary.mjs.
 *
 *   node bench/peers/copy-drain-profile.mjs [CLI]   (COUNT=200000 by default; CLI this checkout's)
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, procCpuMs, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { drainBacklog, preloadBacklog } from './copy-backlog.mjs';

const cli = process.argv[2] ?? CLI;
const count = Number(process.env.COUNT ?? 200_000);
const data = tempFolders('rivulet-copy-drain-profile-')('data');
const profiles = mkdtempSync(join(tmpdir(), 'rivulet-copy-drain-cpuprofile-'));

const preload = await startServer([cli, 'serve', '--port', '0', '--data', data, '--durability', 'full'], 'preload');
try {
  await preloadBacklog(preload.url, count);
} finally {
  await stopServer(preload);
}

const server = await startServer(['--cpu-prof', `--cpu-prof-dir=${profiles}`, cli, 'serve', '--port', '0', '--data', data, '--durability', 'full'], 'drain');
let cpuUs;
try {
  const cpu0 = procCpuMs(server.child.pid);
  const seconds = await drainBacklog(server.url, 'drain');
  cpuUs = ((procCpuMs(server.child.pid) - cpu0) * 1000) / count;
  console.error(`drain ${seconds.toFixed(1)} s, ${cpuUs.toFixed(1)} µs CPU/copy (profiled)`);
} finally {
  await stopServer(server);
}
const [file] = readdirSync(profiles).filter((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error(`no .cpuprofile in ${profiles} (did the server exit on SIGTERM?)`);
console.log(join(profiles, file));
