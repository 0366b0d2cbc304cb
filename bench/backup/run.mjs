#!/usr/bin/env node
/**
 * bench/backup: append latency while an online backup runs (POST /v1/admin/backup), against the
 * same server, same load and same run without one. See bench/README.md.
 *
 *   npm run build && node bench/backup/run.mjs [--mb 200] [--clients 8] [--rounds 2] [--durability relaxed|full|both]
 *
 * The server is the built CLI in a child process on a fresh data folder, filled to about --mb
 * megabytes with 1 KB events. Each round measures, in turn, a quiet window as long as the last
 * backup took (or 5 s at first), then a window in which the backup is downloaded (to nowhere: the
 * bytes are counted) while the same closed-loop clients append one event per request over 100
 * streams. Only requests that finished inside the window count.
 */
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { CLI, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { call, fmtMs, fmtN, machineInfo, median, table, writeResult } from '../lib/report.mjs';
import { RawConnection } from '../append/raw-http-client.mjs';
import { eventJson } from '../append/loadgen.mjs';

const { values } = parseArgs({
  options: {
    mb: { type: 'string', default: '200' },
    clients: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '2' },
    durability: { type: 'string', default: 'both' },
    'no-write': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write('node bench/backup/run.mjs [--mb 200] [--clients 8] [--rounds 2] [--durability relaxed|full|both] [--no-write]\n');
  process.exit(0);
}
const startedAt = new Date();
const folder = tempFolders('rivulet-bench-backup-');
const modes = values.durability === 'both' ? ['relaxed', 'full'] : [values.durability];
const clients = Number(values.clients);

const percentile = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] : NaN);

/** Closed-loop appends until `stop()`; answers [finishedAt, latency] per request. */
function load(url) {
  const target = new URL(url);
  const done = [];
  let stopping = false;
  const client = async (c) => {
    const conn = new RawConnection(target.hostname, Number(target.port));
    for (let k = 0; !stopping; k++) {
      const t0 = performance.now();
      const { status } = await conn.request('POST', `/v1/streams/bench/b-${String((c * 31 + k) % 100).padStart(3, '0')}`, Buffer.from(eventJson(k, c)));
      if (status !== 200) throw new Error(`append answered ${status}`);
      const t1 = performance.now();
      done.push([t1, t1 - t0]);
    }
    conn.close();
  };
  const running = Promise.all(Array.from({ length: clients }, (_, c) => client(c)));
  return { done, stop: async () => ((stopping = true), await running) };
}

function window(done, from, to) {
  const lat = done.filter(([t]) => t >= from && t < to).map(([, l]) => l).sort((a, b) => a - b);
  return { requests: lat.length, perSec: lat.length / ((to - from) / 1000), p50: percentile(lat, 50), p99: percentile(lat, 99), max: lat.at(-1) ?? NaN };
}

async function backup(url) {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/admin/backup`, { method: 'POST' });
  if (!res.ok) throw new Error(`backup answered ${res.status}: ${await res.text()}`);
  const answered = performance.now();
  let bytes = 0;
  for await (const chunk of res.body) bytes += chunk.length;
  return { bytes, snapshotMs: answered - t0, totalMs: performance.now() - t0 };
}

const results = [];
for (const durability of modes) {
  const server = await startServer([CLI, 'serve', '--port', '0', '--data', folder(`server-${durability}`), '--durability', durability], 'rivulet');
  const pad = 'x'.repeat(900);
  const target = Number(values.mb) * 1024 * 1024;
  for (let written = 0, i = 0; written < target; i++) {
    await call(server.url, 'POST', `/v1/streams/fill/${i % 50}`, Array.from({ length: 1000 }, (_, n) => ({ type: 'fill', payload: { n, pad } })));
    written += 1000 * 1000;
  }
  let lastMs = 5000;
  for (let round = 1; round <= Number(values.rounds); round++) {
    const quiet = load(server.url);
    await new Promise((r) => setTimeout(r, 1000));
    const q0 = performance.now();
    await new Promise((r) => setTimeout(r, lastMs));
    const q1 = performance.now();
    await quiet.stop();
    const busy = load(server.url);
    await new Promise((r) => setTimeout(r, 1000));
    const b0 = performance.now();
    const copy = await backup(server.url);
    const b1 = performance.now();
    await busy.stop();
    lastMs = b1 - b0;
    const row = { durability, round, quiet: window(quiet.done, q0, q1), during: window(busy.done, b0, b1), backup: copy };
    results.push(row);
    process.stdout.write(`${durability} round ${round}: backup ${fmtN(copy.bytes / 1e6)} MB in ${fmtMs(copy.totalMs)} ms (snapshot ${fmtMs(copy.snapshotMs)} ms); ` +
      `p99 quiet ${fmtMs(row.quiet.p99)} ms, during ${fmtMs(row.during.p99)} ms\n`);
  }
  await stopServer(server);
}

const rows = modes.flatMap((durability) => {
  const mine = results.filter((r) => r.durability === durability);
  const m = (f) => median(mine.map(f));
  return [
    [durability, 'no backup', fmtN(m((r) => r.quiet.perSec)), fmtMs(m((r) => r.quiet.p50)), fmtMs(m((r) => r.quiet.p99)), fmtMs(m((r) => r.quiet.max)), '-'],
    [durability, 'during backup', fmtN(m((r) => r.during.perSec)), fmtMs(m((r) => r.during.p50)), fmtMs(m((r) => r.during.p99)), fmtMs(m((r) => r.during.max)),
      `${fmtN(m((r) => r.backup.bytes) / 1e6)} MB in ${fmtMs(m((r) => r.backup.totalMs) / 1000)} s`],
  ];
});
process.stdout.write(`\n${table(['durability', 'window', 'appends/s', 'p50 ms', 'p99 ms', 'max ms', 'backup'], rows, 2)}\n`);
if (!values['no-write']) writeResult('backup', startedAt, { machine: machineInfo(startedAt), clients, mb: Number(values.mb), results }, undefined);
