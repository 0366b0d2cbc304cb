#!/usr/bin/env node
/**
 * bench/durable-streams: Durable Streams JSON appends from concurrent clients against Rivulet
 * (`rivulet serve`, durability full: fsync before every answer) and the reference server
 * @durable-streams/server, file-backed and in memory, in the same run (bench/README.md).
 *
 *   npm run bench:durable-streams                  # 2 rounds, 5 s per measurement
 *   node bench/durable-streams/run.mjs --help      # every option
 *   node bench/durable-streams/run.mjs --quick     # smoke run (expects a built workspace)
 *   node bench/durable-streams/run.mjs --variant before=bench/.variants/before/dist
 *       # also an earlier build of packages/server (a copy of its dist), interleaved (A/B)
 *   node bench/durable-streams/run.mjs --only rivulet --profile /tmp/prof
 *       # one server, its CPU profile written to /tmp/prof when it stops
 *   node bench/durable-streams/run.mjs --relaxed --only rivulet --only rivulet-relaxed --only reference-memory
 *       # also Rivulet with --durability relaxed (no fsync before answering): what the fsync costs
 *   node bench/durable-streams/run.mjs --concurrent-creates
 *       # the 50 PUTs sent at once, so every connection carries one (as a client creating its own
 *       # stream does): on Rivulet each such connection is node:http's for the rest of its life
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { CLI, procCpuMs, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { fmtN, machineInfo, writeResult } from '../lib/report.mjs';

const here = dirname(fileURLToPath(import.meta.url));

const usage = `Usage: node bench/durable-streams/run.mjs [options]   (npm run bench:durable-streams -- [options])

Durable Streams JSON appends (one message per request) from concurrent clients against Rivulet
(durability full) and the reference server @durable-streams/server, file-backed and in memory,
rounds interleaved, medians and per-round ratios against the targets of issue 20. Expects a built
workspace (npm run build).

  --rounds N             rounds, servers in alternating order (default 2; 1 with --quick)
  --duration S           measured seconds per server and round (default 5; 1.5 with --quick)
  --warmup S             warm-up seconds before each measurement (default 1.5; 0.5 with --quick)
  --clients N            concurrent clients, one keep-alive connection each (default 50)
  --client KIND          the load generator's HTTP client: undici (a Pool, default) or node
                         (node:http with a keep-alive Agent: about twice undici's CPU per request
                         here, taken from the same two cores the servers run on)
  --streams N            streams the clients append to (default: as many as clients)
  --quick                a smoke run
  --only NAME            run only this server (repeatable): rivulet, reference-file,
                         reference-memory, and the ones the options below add
  --variant NAME=DIST    also an earlier build of packages/server (a copy of its dist), as NAME
  --native               also Rivulet's own appends (POST /v1/streams/...), as rivulet-native
  --relaxed              also Rivulet with --durability relaxed, as rivulet-relaxed
  --concurrent-creates   the stream-creating PUTs sent at once, so every connection carries one
  --profile DIR          a CPU profile of each Rivulet server, written to DIR when it stops
  --probe                each Rivulet server prints its commits and appends per commit
  --out FILE             where to write the result JSON (default bench/results/…)
  -h, --help             this text`;

let parsed;
try {
  parsed = parseArgs({
    options: {
      help: { type: 'boolean', short: 'h' },
      quick: { type: 'boolean' },
      rounds: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      clients: { type: 'string' },
      streams: { type: 'string' },
      out: { type: 'string' },
      only: { type: 'string', multiple: true, default: [] },
      variant: { type: 'string', multiple: true, default: [] },
      profile: { type: 'string' },
      probe: { type: 'boolean' },
      client: { type: 'string', default: 'undici' },
      native: { type: 'boolean' },
      relaxed: { type: 'boolean' },
      'concurrent-creates': { type: 'boolean' },
    },
  });
} catch (error) {
  console.error(`${error.message}\n\n${usage}`);
  process.exit(2);
}
const { values } = parsed;
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const rounds = Number(values.rounds ?? (values.quick ? 1 : 2));
const durationMs = Number(values.duration ?? (values.quick ? 1.5 : 5)) * 1000;
const warmupMs = Number(values.warmup ?? (values.quick ? 0.5 : 1.5)) * 1000;
const clients = Number(values.clients ?? 50);
const streams = Number(values.streams ?? clients);
const folder = tempFolders('rivulet-bench-ds-');

/** Node flags for the Rivulet servers: a CPU profile each, written when it stops (`--profile DIR`). */
const nodeFlags = [
  ...(values.profile ? ['--cpu-prof', '--cpu-prof-dir', values.profile] : []),
  // Commits and appends per commit, printed by the server when it stops (bench/append/probe-groups.mjs).
  ...(values.probe ? ['--import', join(here, '..', 'append', 'probe-groups.mjs')] : []),
];
const launchDist = join(here, '..', 'append', 'launch-dist.mjs');
const ALL_SERVERS = {
  rivulet: () => startServer([...nodeFlags, CLI, 'serve', '--port', '0', '--data', folder('rivulet'), '--durability', 'full'], 'rivulet serve'),
  // An earlier build, e.g. the one before a change: NAME=DIST, DIST a copy of packages/server/dist.
  ...Object.fromEntries(
    values.variant.map((spec) => {
      const at = spec.indexOf('=');
      if (at <= 0) {
        console.error(`--variant expects NAME=DIST, got ${spec} (see --help)`);
        process.exit(2);
      }
      const [name, dist] = [spec.slice(0, at), spec.slice(at + 1)];
      return [name, () => startServer([...nodeFlags, launchDist, '--dist', dist, 'serve', '--data', folder(name), '--durability', 'full'], `rivulet ${name}`)];
    }),
  ),
  // The same load as Rivulet's own appends (POST /v1/streams/…, one event each): the ceiling this
  // server reaches on its fastest entrance (the connection front, hosts/node/front.ts).
  ...(values.native ? { 'rivulet-native': () => startServer([...nodeFlags, CLI, 'serve', '--port', '0', '--data', folder('native'), '--durability', 'full'], 'rivulet serve') } : {}),
  // The same server without the fsync before each answer (`--durability relaxed`): what durability
  // costs in CPU per append, next to the in-memory reference, which has none.
  ...(values.relaxed
    ? {
        'rivulet-relaxed': () => startServer([...nodeFlags, CLI, 'serve', '--port', '0', '--data', folder('relaxed'), '--durability', 'relaxed'], 'rivulet serve'),
        // With --native too: Rivulet's own appends without the fsync.
        ...(values.native
          ? { 'rivulet-native-relaxed': () => startServer([...nodeFlags, CLI, 'serve', '--port', '0', '--data', folder('native-relaxed'), '--durability', 'relaxed'], 'rivulet serve') }
          : {}),
      }
    : {}),
  'reference-file': () => startServer([join(here, 'reference-server.mjs'), 'file', folder('reference')], 'reference server (file)'),
  'reference-memory': () => startServer([join(here, 'reference-server.mjs'), 'memory'], 'reference server (memory)'),
};
for (const name of values.only) {
  if (name in ALL_SERVERS) continue;
  console.error(`--only ${name}: not one of ${Object.keys(ALL_SERVERS).join(', ')} (see --help)`);
  process.exit(2);
}
const SERVERS = values.only.length === 0 ? ALL_SERVERS : Object.fromEntries(values.only.map((name) => [name, ALL_SERVERS[name]]));

if (values.client !== 'undici' && values.client !== 'node') {
  console.error(`--client ${values.client}: not undici or node (see --help)`);
  process.exit(2);
}

/** One request on node:http; answers the status once the body has been read. */
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

/** node:http with a keep-alive Agent of `clients` sockets. */
function nodeSender(url) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  return { request: (method, path, headers, body) => request(agent, url, method, path, headers, body), close: async () => agent.destroy() };
}

/** An undici Pool of `clients` connections, one request at a time on each. */
function undiciSender(url) {
  const pool = new Pool(url, { connections: clients, pipelining: 1 });
  return {
    request: async (method, path, headers, body) => {
      const answer = await pool.request({ method, path, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, body });
      await answer.body.dump();
      return answer.statusCode;
    },
    close: () => pool.close(),
  };
}

/**
 * `clients` loops, each appending one JSON message per request to its stream, for `ms`. `native`:
 * the same message as one Rivulet event through Rivulet's own append (no stream created first).
 */
async function load(url, ms, native) {
  const send = values.client === 'undici' ? undiciSender(url) : nodeSender(url);
  const json = { 'content-type': 'application/json' };
  const paths = Array.from({ length: streams }, (_, i) => `/v1/${native ? 'streams' : 'stream'}/bench/s${i}-${Date.now()}`);
  const bodyOf = native ? (value) => JSON.stringify({ type: 'bench/message', payload: value }) : (value) => JSON.stringify(value);
  // One after another the PUTs take one keep-alive connection; at once, one each.
  const create = async (path) => {
    const status = await send.request('PUT', path, json, '');
    if (status !== 201) throw new Error(`PUT ${path} answered ${status}`);
  };
  if (native) {
    // Rivulet's own appends create their streams.
  } else if (values['concurrent-creates']) await Promise.all(paths.map(create));
  else for (const path of paths) await create(path);
  let done = 0;
  let failed = 0;
  const latencies = [];
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      let n = 0;
      while (performance.now() < end) {
        const started = performance.now();
        const status = await send.request('POST', paths[c % streams], json, bodyOf({ client: c, n: n++, text: 'the quick brown fox' }));
        if (status === 204 || status === 200) {
          done++;
          latencies.push(performance.now() - started);
        } else failed++;
      }
    }),
  );
  await send.close();
  latencies.sort((a, b) => a - b);
  return { perSecond: (done / ms) * 1000, done, failed, p50: latencies[Math.floor(latencies.length * 0.5)] ?? NaN, p99: latencies[Math.floor(latencies.length * 0.99)] ?? NaN };
}

const startedAt = new Date();
const results = Object.fromEntries(Object.keys(SERVERS).map((name) => [name, []]));
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? Object.keys(SERVERS) : Object.keys(SERVERS).reverse();
  for (const name of order) {
    const server = await SERVERS[name]();
    try {
      const native = name.startsWith('rivulet-native');
      await load(server.url, warmupMs, native);
      const cpuBefore = procCpuMs(server.child.pid);
      const clientBefore = process.cpuUsage();
      const measured = await load(server.url, durationMs, native);
      // The load generator shares the two cores: its own CPU per append says how much it takes.
      const clientCpu = process.cpuUsage(clientBefore);
      measured.clientCpuUsPerAppend = (clientCpu.user + clientCpu.system) / measured.done;
      // The server's CPU per append: steadier than appends per second when the disk is shared.
      measured.cpuUsPerAppend = ((procCpuMs(server.child.pid) - cpuBefore) * 1000) / measured.done;
      measured.load = loadAverage();
      results[name].push(measured);
      console.log(
        `round ${round + 1} ${name}: ${fmtN(measured.perSecond)} appends/s, p50 ${measured.p50.toFixed(2)} ms, p99 ${measured.p99.toFixed(2)} ms, ${measured.failed} refused, server CPU ${measured.cpuUsPerAppend.toFixed(0)} µs/append, client ${measured.clientCpuUsPerAppend.toFixed(0)} (load ${measured.load})`,
      );
    } finally {
      const stderr = await stopServer(server);
      const probe = /PROBE (.*)/.exec(stderr);
      if (probe) console.log(`  ${name} group commit: ${probe[1]}`);
    }
  }
}
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted.length % 2 ? sorted[(sorted.length - 1) / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
};
const names = Object.keys(SERVERS);
const summary = Object.fromEntries(
  names.map((name) => [name, { perSecond: median(results[name].map((r) => r.perSecond)), cpuUsPerAppend: median(results[name].map((r) => r.cpuUsPerAppend)) }]),
);
// Ratios of Rivulet to each other server within each round (they ran minutes apart at most),
// then their median: steadier than a ratio of bests when the disk's speed drifts between rounds.
const ratios = Object.fromEntries(
  names
    .filter((name) => name !== 'rivulet' && 'rivulet' in results)
    .map((name) => {
      const perRound = results[name].map((r, i) => results.rivulet[i].perSecond / r.perSecond);
      const cpuPerRound = results[name].map((r, i) => results.rivulet[i].cpuUsPerAppend / r.cpuUsPerAppend);
      return [name, { perRound, median: median(perRound), cpuPerRound, cpuMedian: median(cpuPerRound) }];
    }),
);
const vsFile = ratios['reference-file']?.median;
const vsMemory = ratios['reference-memory']?.median;
const TARGETS = { 'reference-file': ' (target >= 10x)', 'reference-memory': ' (target >= 1.0x)' };
console.log(`\nDurable Streams JSON appends, ${clients} clients over ${streams} streams, medians of ${rounds} rounds, load at the end ${loadAverage()}:`);
for (const name of names) {
  const line = `  ${(name === 'rivulet' ? 'rivulet (durability full)' : name).padEnd(26)} ${fmtN(summary[name].perSecond).padStart(8)}/s  ${summary[name].cpuUsPerAppend.toFixed(0).padStart(5)} µs CPU/append`;
  const r = ratios[name];
  const fmt = (xs) => xs.map((x) => x.toFixed(2)).join(' ');
  console.log(r === undefined ? line : `${line}   rivulet ${r.median.toFixed(2)}x (rounds ${fmt(r.perRound)})${TARGETS[name] ?? ''}, CPU ${r.cpuMedian.toFixed(2)}x (${fmt(r.cpuPerRound)})`);
}
writeResult('durable-streams', startedAt, { machine: machineInfo(startedAt), client: values.client, clients, streams, rounds, durationMs, results, summary, ratios, vsFile, vsMemory }, values.out);

function loadAverage() {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return 'unknown';
  }
}
