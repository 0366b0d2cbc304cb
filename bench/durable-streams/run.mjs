#!/usr/bin/env node
/**
 * bench/durable-streams: Durable Streams JSON appends from concurrent clients against Rivulet
 * (`rivulet serve`, durability full: fsync before every answer) and the reference server
 * @durable-streams/server, file-backed and in memory, in the same run (bench/README.md).
 *
 *   npm run bench:durable-streams                  # 2 rounds, 5 s per measurement
 *   node bench/durable-streams/run.mjs --quick     # smoke run (expects a built workspace)
 */
import http from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { CLI, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { fmtN, machineInfo, writeResult } from '../lib/report.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean' },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    clients: { type: 'string' },
    streams: { type: 'string' },
    out: { type: 'string' },
  },
});
const rounds = Number(values.rounds ?? (values.quick ? 1 : 2));
const durationMs = Number(values.duration ?? (values.quick ? 1.5 : 5)) * 1000;
const warmupMs = Number(values.warmup ?? (values.quick ? 0.5 : 1.5)) * 1000;
const clients = Number(values.clients ?? 50);
const streams = Number(values.streams ?? clients);
const folder = tempFolders('rivulet-bench-ds-');

const SERVERS = {
  rivulet: () => startServer([CLI, 'serve', '--port', '0', '--data', folder('rivulet'), '--durability', 'full'], 'rivulet serve'),
  'reference-file': () => startServer([join(here, 'reference-server.mjs'), 'file', folder('reference')], 'reference server (file)'),
  'reference-memory': () => startServer([join(here, 'reference-server.mjs'), 'memory'], 'reference server (memory)'),
};

function request(agent, url, method, path, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(path, url), { method, agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode));
    });
    req.once('error', reject);
    req.end(body);
  });
}

/** `clients` loops, each appending one JSON message per request to its stream, for `ms`. */
async function load(url, ms) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const json = { 'content-type': 'application/json' };
  const paths = Array.from({ length: streams }, (_, i) => `/v1/stream/bench/s${i}-${Date.now()}`);
  for (const path of paths) {
    const status = await request(agent, url, 'PUT', path, json, '');
    if (status !== 201) throw new Error(`PUT ${path} answered ${status}`);
  }
  let done = 0;
  let failed = 0;
  const latencies = [];
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      let n = 0;
      while (performance.now() < end) {
        const started = performance.now();
        const status = await request(agent, url, 'POST', paths[c % streams], json, JSON.stringify({ client: c, n: n++, text: 'the quick brown fox' }));
        if (status === 204 || status === 200) {
          done++;
          latencies.push(performance.now() - started);
        } else failed++;
      }
    }),
  );
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { perSecond: (done / ms) * 1000, failed, p50: latencies[Math.floor(latencies.length * 0.5)] ?? NaN, p99: latencies[Math.floor(latencies.length * 0.99)] ?? NaN };
}

const startedAt = new Date();
const results = Object.fromEntries(Object.keys(SERVERS).map((name) => [name, []]));
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? Object.keys(SERVERS) : Object.keys(SERVERS).reverse();
  for (const name of order) {
    const server = await SERVERS[name]();
    try {
      await load(server.url, warmupMs);
      const measured = await load(server.url, durationMs);
      results[name].push(measured);
      console.log(`round ${round + 1} ${name}: ${fmtN(measured.perSecond)} appends/s, p50 ${measured.p50.toFixed(2)} ms, p99 ${measured.p99.toFixed(2)} ms, ${measured.failed} refused`);
    } finally {
      await stopServer(server);
    }
  }
}
const best = (name) => Math.max(...results[name].map((r) => r.perSecond));
const summary = {
  rivulet: best('rivulet'),
  referenceFile: best('reference-file'),
  referenceMemory: best('reference-memory'),
};
const vsFile = summary.rivulet / summary.referenceFile;
const vsMemory = summary.rivulet / summary.referenceMemory;
console.log(`\nDurable Streams JSON appends, ${clients} clients over ${streams} streams (best of ${rounds}):`);
console.log(`  rivulet (durability full)   ${fmtN(summary.rivulet)}/s`);
console.log(`  reference, file-backed      ${fmtN(summary.referenceFile)}/s   rivulet ${vsFile.toFixed(2)}x (target >= 10x)`);
console.log(`  reference, in memory        ${fmtN(summary.referenceMemory)}/s   rivulet ${vsMemory.toFixed(2)}x (target >= 1.0x)`);
writeResult('durable-streams', startedAt, { machine: machineInfo(startedAt), clients, streams, rounds, durationMs, results, summary, vsFile, vsMemory }, values.out);
