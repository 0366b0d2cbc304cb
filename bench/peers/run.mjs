#!/usr/bin/env node
/**
 * bench/peers (issue 19): Rivulet side by side with real peers in ONE run, rounds interleaved,
 * medians over rounds, a ratio and PASS/MISS per target. See bench/README.md.
 *
 *   npm run bench:peers                 # build, then the default run (a few minutes)
 *   node bench/peers/run.mjs --help     # every option (expects a built workspace)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { CLI, procCpuMs, root, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { call, fmtMs, fmtN, fmtX, machineInfo, table, writeResult } from '../lib/report.mjs';
import { appendLoad, catchUpRead, eventBody } from './load.mjs';
import { ensurePrograms, natsSourcingDrain, redisPreload, redisXadd, redisXrange, startNats, startRedis } from './peers.mjs';
import { cost, median, ratio, roundOrder, verdict } from './verdict.mjs';

const usage = `Usage: node bench/peers/run.mjs [options]   (npm run bench:peers -- [options])

  --rounds N           rounds, contenders in alternating order (default 3; medians need >= 3)
  --warmup S           warm-up seconds per HTTP append measurement (default 1)
  --duration S         measured seconds per HTTP append measurement (default 3)
  --redis-requests N   XADDs per Redis measurement with 50 clients (default 150000; x2 with 200)
  --copy-events N      events in the copy backlog drain (default 200000)
  --read-events N      events in the catch-up read stream (default 200000; the issue's is 1000000)
  --only LIST          groups to run: appends,appends200,copy,reads (default all)
  --ab-cli PATH        another build's rivulet CLI (e.g. the commit before a storage change): its
                       appends with keys, copy drain and catch-up read run beside this build's in the same rounds, as ratios
  --no-install         do not apt-get install missing peers (they are skipped)
  --out FILE           JSON result file (default bench/results/peers-<timestamp>.json)
  --no-write           do not write the JSON result file
  -h, --help           this text`;

const { values: flags } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '1' },
    duration: { type: 'string', default: '3' },
    'redis-requests': { type: 'string', default: '150000' },
    'copy-events': { type: 'string', default: '200000' },
    'read-events': { type: 'string', default: '200000' },
    only: { type: 'string' },
    'ab-cli': { type: 'string' },
    'no-install': { type: 'boolean', default: false },
    out: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (flags.help) {
  console.log(usage);
  process.exit(0);
}
const positive = (name) => {
  const n = Number(flags[name]);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${flags[name]}`);
  return n;
};
const cfg = {
  rounds: positive('rounds'),
  warmupMs: Number(flags.warmup) * 1000,
  durationMs: Number(flags.duration) * 1000,
  redisRequests: positive('redis-requests'),
  copyEvents: positive('copy-events'),
  readEvents: positive('read-events'),
  groups: flags.only ? flags.only.split(',') : ['appends', 'appends200', 'copy', 'reads'],
  streams: 100,
  page: 500,
  timeoutMs: 180_000,
};

const fresh = tempFolders('rivulet-bench-peers-');
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').trim();
const BODY = eventBody(0, 0, false).toString();
const TOY = join(root, 'bench', 'peers', 'toy-server.mjs');

const skips = {};
const redisSkip = ensurePrograms(['redis-server', 'redis-benchmark', 'redis-cli'], !flags['no-install']);
const natsSkip = ensurePrograms(['nats-server'], !flags['no-install']);
let natsClientSkip = null;
try {
  await import('nats');
} catch {
  natsClientSkip = 'the nats npm package is missing: run `npm install` at the repository root';
}

/** Starts the server a contender needs, runs `fn(server)`, stops it whatever happens. */
async function withServer(kind, label, fn) {
  const dir = fresh(label);
  let server;
  if (kind === 'rivulet' || kind === 'rivulet-ab') server = await startServer([kind === 'rivulet' ? CLI : flags['ab-cli'], 'serve', '--port', '0', '--data', dir, '--durability', 'full'], label);
  else if (kind === 'toy') server = await startServer([TOY, '--port', '0', '--data', dir], label);
  else if (kind === 'redis') server = await startRedis(dir);
  else server = await startNats(dir);
  try {
    return await fn(server);
  } finally {
    await (server.stop ? server.stop() : stopServer(server));
  }
}

/** An HTTP append measurement of Rivulet or the toy: 100 streams, a fresh event per request. */
function httpAppends(kind, clients, keys) {
  const pathOf = kind.startsWith('rivulet') ? (i) => `/v1/streams/bench/b-${String(i).padStart(3, '0')}` : (i) => `/b-${i}`;
  return (label) =>
    withServer(kind, label, async (server) => {
      const cpu0 = procCpuMs(server.child.pid);
      const r = await appendLoad({ url: server.url, clients, streams: cfg.streams, keys, warmupMs: cfg.warmupMs, durationMs: cfg.durationMs, pathOf });
      if (r.errors) throw new Error(`${label}: ${r.errors} failed requests, first: ${r.firstError}`);
      return { ...r, cpuUsPerReq: ((procCpuMs(server.child.pid) - cpu0) * 1000) / r.totalRequests };
    });
}

const redisAppends = (clients) => (label) =>
  withServer('redis', label, async (redis) => redisXadd(redis, { clients, requests: cfg.redisRequests * (clients > 50 ? 2 : 1), body: BODY, timeoutMs: cfg.timeoutMs }));

/** Rivulet's copy drain: a backlog of events, then a copy subscription from the beginning. */
const rivuletCopy = (kind) => (label) =>
  withServer(kind, label, async (server) => {
    await preloadRivulet(server.url, '/bench/src', cfg.copyEvents);
    const cpu0 = procCpuMs(server.child.pid);
    const t0 = performance.now();
    await call(server.url, 'POST', '/v1/streams/bench/dst:subscribeToEventsFrom', {
      sourceStreamPath: '/bench/src',
      subscriptionKey: 'drain',
      delivery: { start: 'beginning' },
    });
    const deadline = t0 + cfg.timeoutMs;
    for (;;) {
      const { runtime } = await call(server.url, 'GET', '/v1/streams/bench/src:state');
      const sub = Object.values(runtime?.subscriptions ?? {})[0];
      if (sub && sub.lag === 0) break;
      if (performance.now() > deadline) throw new Error(`${label}: copies still ${sub?.lag} behind after ${cfg.timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const seconds = (performance.now() - t0) / 1000;
    // The receiving stream holds its created event, the subscription's events and every copy.
    const { events } = await call(server.url, 'GET', `/v1/streams/bench/dst?afterOffset=0&limit=500`);
    const head = (await call(server.url, 'GET', '/v1/streams/bench/dst?limit=1')).streamMaxOffset;
    const copies = head - events.filter((e) => !e.source).length;
    if (copies < cfg.copyEvents + 1) throw new Error(`${label}: ${copies} copies, expected ${cfg.copyEvents + 1}`);
    return { perSec: copies / seconds, seconds, cpuUsPerCopy: ((procCpuMs(server.child.pid) - cpu0) * 1000) / copies };
  });

const natsCopy = (label) =>
  withServer('nats', label, (nats) => natsSourcingDrain(nats, { count: cfg.copyEvents + 1, body: BODY, timeoutMs: cfg.timeoutMs }));

/** Rivulet's catch-up read: one reader through the whole stream in pages of 500. */
const rivuletRead = (kind) => (label) =>
  withServer(kind, label, async (server) => {
    await preloadRivulet(server.url, '/bench/read', cfg.readEvents);
    const cpu0 = procCpuMs(server.child.pid);
    const r = await catchUpRead({ url: server.url, path: '/v1/streams/bench/read', firstOffset: 1, lastOffset: cfg.readEvents + 1, page: cfg.page });
    return { eventsPerSec: r.events / r.seconds, cpuUsPerEvent: ((procCpuMs(server.child.pid) - cpu0) * 1000) / r.events };
  });

const redisRead = (label) =>
  withServer('redis', label, async (redis) => {
    await redisPreload(redis, cfg.readEvents, BODY);
    // At least 2000 pages: redis-benchmark counts its time in whole milliseconds, and a few hundred
    // pages take only a few of them.
    const pages = Math.max(Math.ceil(cfg.readEvents / cfg.page), 2000);
    return redisXrange(redis, { count: cfg.readEvents, page: cfg.page, pages, timeoutMs: cfg.timeoutMs });
  });

/** Appends `count` ~150-byte events to `path` in requests of 1000. */
async function preloadRivulet(url, path, count) {
  for (let done = 0; done < count; ) {
    const n = Math.min(1000, count - done);
    const body = `[${Array.from({ length: n }, (_, i) => eventBody(0, done + i, false).toString()).join(',')}]`;
    const response = await fetch(`${url}/v1/streams${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    if (!response.ok) throw new Error(`preload answered ${response.status}: ${await response.text()}`);
    await response.arrayBuffer();
    done += n;
  }
}

const redisOff = redisSkip;
const natsOff = natsSkip ?? natsClientSkip;
/** group → contenders [name, run, skip reason or null]. */
const GROUPS = {
  appends: [
    ['rivulet-keys', httpAppends('rivulet', 50, true), null],
    ['toy-keys', httpAppends('toy', 50, true), null],
    ['rivulet-nokeys', httpAppends('rivulet', 50, false), null],
    ['toy-nokeys', httpAppends('toy', 50, false), null],
    ['redis-xadd', redisAppends(50), redisOff],
    ...(flags['ab-cli'] ? [['rivulet-ab-keys', httpAppends('rivulet-ab', 50, true), null]] : []),
  ],
  appends200: [
    ['rivulet-keys-200', httpAppends('rivulet', 200, true), null],
    ['redis-xadd-200', redisAppends(200), redisOff],
  ],
  copy: [
    ['rivulet-copy', rivuletCopy('rivulet'), null],
    ['nats-sourcing', natsCopy, natsOff],
    ...(flags['ab-cli'] ? [['rivulet-ab-copy', rivuletCopy('rivulet-ab'), null]] : []),
  ],
  reads: [
    ['rivulet-read', rivuletRead('rivulet'), null],
    ['redis-xrange', redisRead, redisOff],
    ...(flags['ab-cli'] ? [['rivulet-ab-read', rivuletRead('rivulet-ab'), null]] : []),
  ],
};

function describe(name, r) {
  if (r.p99ms !== undefined) return `${fmtN(r.perSec)}/s p50 ${fmtMs(r.p50ms)} p99 ${fmtMs(r.p99ms)} ms, ${fmtN(r.cpuUsPerReq)} µs CPU/req`;
  if (r.cpuUsPerCopy !== undefined) return `${fmtN(r.perSec)} copies/s (${fmtMs(r.seconds)} s), ${r.cpuUsPerCopy.toFixed(1)} µs CPU/copy`;
  return `${fmtN(r.eventsPerSec)} events/s, ${r.cpuUsPerEvent.toFixed(2)} µs CPU/event`;
}

async function main() {
  const startedAt = new Date();
  const wall0 = performance.now();
  const machine = machineInfo(startedAt);
  const loadStart = loadavg();
  console.log(`bench/peers on ${machine.nproc} x ${machine.cpuModel}, node ${machine.node}; load ${loadStart}`);
  console.log('the machine is shared: other processes may use its cores during the run (see the load lines)');
  for (const [group, contenders] of Object.entries(GROUPS)) {
    if (!cfg.groups.includes(group)) continue;
    for (const [name, , skip] of contenders) if (skip) skips[name] = skip;
  }
  for (const [name, why] of Object.entries(skips)) console.log(`SKIP  ${name}: ${why}`);

  const runs = [];
  const names = Object.entries(GROUPS)
    .filter(([group]) => cfg.groups.includes(group))
    .flatMap(([, contenders]) => contenders.filter(([, , skip]) => !skip));
  for (let round = 0; round < cfg.rounds; round++) {
    console.log(`round ${round + 1}/${cfg.rounds} (load ${loadavg()})`);
    for (const [name, run] of roundOrder(names, round)) {
      const r = await run(`${name}-r${round}`);
      runs.push({ name, round, ...r });
      console.log(`  ${name.padEnd(17)} ${describe(name, r)}`);
    }
  }

  const med = (name, field) => median(runs.filter((r) => r.name === name).map((r) => r[field]));
  const summary = {};
  for (const name of new Set(runs.map((r) => r.name))) {
    const rs = runs.filter((r) => r.name === name);
    summary[name] = Object.fromEntries(Object.keys(rs[0]).filter((k) => typeof rs[0][k] === 'number' && k !== 'round').map((k) => [k, med(name, k)]));
  }
  const rows = Object.entries(summary).map(([name, s]) => [
    name,
    fmtN(s.perSec ?? s.eventsPerSec),
    s.p99ms === undefined ? '-' : fmtMs(s.p99ms),
    fmtMs(s.cpuUsPerReq ?? s.cpuUsPerCopy ?? s.cpuUsPerEvent),
  ]);
  console.log(`\n${table(['contender', 'per s', 'p99 ms', 'CPU µs each'], rows)}`);

  const s = (name, field) => summary[name]?.[field] ?? NaN;
  const pct = (n) => (Number.isFinite(n) ? `${(n * 100).toFixed(1)} %` : '-');
  const keysVsToy = ratio(s('rivulet-keys', 'perSec'), s('toy-keys', 'perSec'));
  const targets = [
    ['appends 50 clients/100 streams/unique keys >= 1.0x the group-commit toy', fmtX(keysVsToy), verdict(keysVsToy, '>=', 1)],
    ['  ... and p99 < 15 ms', `${fmtMs(s('rivulet-keys', 'p99ms'))} ms`, verdict(s('rivulet-keys', 'p99ms'), '<', 15)],
    ['  ... Redis XADD appendfsync always (goal, reported)', fmtX(ratio(s('rivulet-keys', 'perSec'), s('redis-xadd', 'perSec'))), 'INFO'],
    ...(flags['ab-cli']
      ? [
          ['  ... this build ÷ --ab-cli build, appends with keys', fmtX(ratio(s('rivulet-keys', 'perSec'), s('rivulet-ab-keys', 'perSec'))), 'INFO'],
          ['  ... CPU per append, this build ÷ --ab-cli build', fmtX(ratio(s('rivulet-keys', 'cpuUsPerReq'), s('rivulet-ab-keys', 'cpuUsPerReq'))), 'INFO'],
        ]
      : []),
    ['idempotency keys cost <= 10 % of throughput (Rivulet)', pct(cost(s('rivulet-keys', 'perSec'), s('rivulet-nokeys', 'perSec'))), verdict(cost(s('rivulet-keys', 'perSec'), s('rivulet-nokeys', 'perSec')), '<=', 0.1)],
    ['  ... the toy, for comparison', pct(cost(s('toy-keys', 'perSec'), s('toy-nokeys', 'perSec'))), 'INFO'],
    ['200 clients: p99 < 25 ms', `${fmtMs(s('rivulet-keys-200', 'p99ms'))} ms, ${fmtX(ratio(s('rivulet-keys-200', 'perSec'), s('redis-xadd-200', 'perSec')))} Redis`, verdict(s('rivulet-keys-200', 'p99ms'), '<', 25)],
    ['copy backlog drain >= 0.5x NATS JetStream sourcing', fmtX(ratio(s('rivulet-copy', 'perSec'), s('nats-sourcing', 'perSec'))), verdict(ratio(s('rivulet-copy', 'perSec'), s('nats-sourcing', 'perSec')), '>=', 0.5)],
    ['catch-up reads, pages of 500 >= 1.0x Redis XRANGE', fmtX(ratio(s('rivulet-read', 'eventsPerSec'), s('redis-xrange', 'eventsPerSec'))), verdict(ratio(s('rivulet-read', 'eventsPerSec'), s('redis-xrange', 'eventsPerSec')), '>=', 1)],
    ...(flags['ab-cli']
      ? [
          ['  ... this build ÷ --ab-cli build: copies/s, CPU per copy', `${fmtX(ratio(s('rivulet-copy', 'perSec'), s('rivulet-ab-copy', 'perSec')))}, ${fmtX(ratio(s('rivulet-copy', 'cpuUsPerCopy'), s('rivulet-ab-copy', 'cpuUsPerCopy')))}`, 'INFO'],
          ['  ... this build ÷ --ab-cli build: events read/s, CPU per event', `${fmtX(ratio(s('rivulet-read', 'eventsPerSec'), s('rivulet-ab-read', 'eventsPerSec')))}, ${fmtX(ratio(s('rivulet-read', 'cpuUsPerEvent'), s('rivulet-ab-read', 'cpuUsPerEvent')))}`, 'INFO'],
        ]
      : []),
  ];
  console.log('');
  for (const [target, value, v] of targets) console.log(`${v.padEnd(4)}  ${target}: ${value}`);
  console.log('NOT MEASURED  live copy lag p99 vs NATS; ten non-matching subscriptions < 5 %; memory and idle CPU (issue 19 §2, §4)');
  if (cfg.rounds < 3) console.log(`only ${cfg.rounds} round(s): the issue's targets need medians of >= 3; no verdict here is final`);
  const loadEnd = loadavg();
  const wallSeconds = (performance.now() - wall0) / 1000;
  console.log(`\nmedians of ${cfg.rounds} rounds; ${Math.round(wallSeconds)} s; load at start ${loadStart}, at end ${loadEnd}`);
  if (!flags['no-write']) {
    writeResult('peers', startedAt, { machine, loadStart, loadEnd, config: cfg, skips, summary, targets, runs, wallSeconds }, flags.out);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
