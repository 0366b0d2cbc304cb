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
import { performance } from 'node:perf_hooks';
import { CLI, procCpuMs, root, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { parseOptions, positiveInteger } from '../lib/options.mjs';
import { call, fmtMs, fmtN, machineInfo, table, writeResult } from '../lib/report.mjs';
import { prepareStreams } from './filtered.mjs';
import { createNatsSources, createRivuletSubscriptions, rssMb, settleAndIdle } from './idle.mjs';
import { natsLiveLag, rivuletLiveLag } from './live-lag.mjs';
import { appendLoad, eventBody } from './load.mjs';
import { catchUpRead, randomAfters, randomPagesRead, seededRandom } from './read-client.mjs';
import { ensurePrograms, natsSourcingDrain, redisPreload, redisXadd, redisXrange, startNats, startRedis } from './peers.mjs';
import { targetLines } from './targets.mjs';
import { wrkPagesRead } from './wrk-read.mjs';
import { median, roundOrder } from './verdict.mjs';

const usage = `Usage: node bench/peers/run.mjs [options]   (npm run bench:peers -- [options])

  --rounds N           rounds, contenders in alternating order (default 3; medians need >= 3)
  --warmup S           warm-up seconds per HTTP append measurement (default 1)
  --duration S         measured seconds per HTTP append measurement (default 3)
  --redis-requests N   XADDs per Redis measurement with 50 clients (default 150000; x2 with 200)
  --copy-events N      events in the copy backlog drain (default 200000)
  --read-events N      events in the catch-up read stream (default 200000; the issue's is 1000000)
  --wrk-seconds S      seconds of random pages read by wrk in the reads group (default 3)
  --lag-rate N         events per second into the source in the live lag group (default 1000)
  --lag-seconds S      seconds of publishing in the live lag group, the first one not measured (default 6)
  --idle-streams N     streams with one copy subscription each in the idle group (default 10000)
  --idle-seconds S     seconds of idle CPU measured in the idle group (default 30)
  --idle-wait S        seconds the idle group waits after creating the streams (default 120)
  --nats-idle-streams N  NATS stream pairs (a stream and one sourcing it) in the idle group (default 10000)
  --nats-idle-budget S   at most this long creating them; fewer are measured and said (default 120)
  --only LIST          groups to run: appends,appends200,copy,lag,reads,subs,idle (default all)
  --ab-cli PATH        another build's rivulet CLI (e.g. the commit before a storage change): its
                       appends with keys (50 and 200 clients), copy drain, live copy lag, catch-up read, both subs loads and
                       (in the idle group) memory and idle CPU run beside this build's in the same rounds, as ratios
  --no-install         do not apt-get install missing peers (they are skipped)
  --out FILE           JSON result file (default bench/results/peers-<timestamp>.json)
  --no-write           do not write the JSON result file
  -h, --help           this text`;

const { values: flags } = parseOptions(
  {
    options: {
      rounds: { type: 'string', default: '3' },
      warmup: { type: 'string', default: '1' },
      duration: { type: 'string', default: '3' },
      'redis-requests': { type: 'string', default: '150000' },
      'copy-events': { type: 'string', default: '200000' },
      'read-events': { type: 'string', default: '200000' },
      'wrk-seconds': { type: 'string', default: '3' },
      'lag-rate': { type: 'string', default: '1000' },
      'lag-seconds': { type: 'string', default: '6' },
      'idle-streams': { type: 'string', default: '10000' },
      'idle-seconds': { type: 'string', default: '30' },
      'idle-wait': { type: 'string', default: '120' },
      'nats-idle-streams': { type: 'string', default: '10000' },
      'nats-idle-budget': { type: 'string', default: '120' },
      only: { type: 'string' },
      'ab-cli': { type: 'string' },
      'no-install': { type: 'boolean', default: false },
      out: { type: 'string' },
      'no-write': { type: 'boolean', default: false },
    },
  },
  usage,
);
const positive = (name) => positiveInteger(flags, name);
const cfg = {
  rounds: positive('rounds'),
  warmupMs: Number(flags.warmup) * 1000,
  durationMs: Number(flags.duration) * 1000,
  redisRequests: positive('redis-requests'),
  copyEvents: positive('copy-events'),
  readEvents: positive('read-events'),
  wrkSeconds: positive('wrk-seconds'),
  lagRate: positive('lag-rate'),
  lagSeconds: positive('lag-seconds'),
  idleStreams: positive('idle-streams'),
  idleMs: positive('idle-seconds') * 1000,
  idleWaitMs: positive('idle-wait') * 1000,
  natsIdleStreams: positive('nats-idle-streams'),
  natsIdleBudgetMs: positive('nats-idle-budget') * 1000,
  groups: flags.only ? flags.only.split(',') : ['appends', 'appends200', 'copy', 'lag', 'reads', 'subs', 'idle'],
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
const wrkSkip = ensurePrograms(['wrk'], !flags['no-install']);
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

/**
 * An HTTP append measurement of Rivulet or the toy: 100 streams, a fresh event per request;
 * `setup(server)` runs before the load (and before its CPU is counted).
 */
function httpAppends(kind, clients, keys, setup) {
  const pathOf = kind.startsWith('rivulet') ? (i) => `/v1/streams/bench/b-${String(i).padStart(3, '0')}` : (i) => `/b-${i}`;
  return (label) =>
    withServer(kind, label, async (server) => {
      await setup?.(server);
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

/** Rivulet's catch-up read: one reader through the whole stream in pages of 500, one pass on a fresh server. */
const rivuletRead = (kind) => (label) =>
  withServer(kind, label, async (server) => {
    await preloadRivulet(server.url, '/bench/read', cfg.readEvents);
    const cpu0 = procCpuMs(server.child.pid);
    const r = await catchUpRead({ url: server.url, path: '/v1/streams/bench/read', firstOffset: 1, lastOffset: cfg.readEvents + 1, page: cfg.page });
    const cpuUsPerEvent = ((procCpuMs(server.child.pid) - cpu0) * 1000) / r.events;
    return { eventsPerSec: r.events / r.seconds, cpuUsPerEvent, readerCpuUsPerEvent: (r.readerCpuMs * 1000) / r.events };
  });

/** A random seed of the round a label names ("…-r2"), so that every build of a round reads the same pages. */
const roundSeed = (label) => Number(/-r(\d+)$/.exec(label)[1]) + 1;

// At least 2000 pages: redis-benchmark counts its time in whole milliseconds, and a few hundred
// pages take only a few of them. rivulet-read-pages reads as many.
const readPages = () => Math.max(Math.ceil(cfg.readEvents / cfg.page), 2000);

/**
 * Rivulet read in redis-xrange's shape: one reader, readPages() full pages of 500, each after a
 * random offset of the stream, no unmeasured pass first (Redis gets none: both servers have just
 * been written). bench/README "catch-up reads (reads group)".
 */
const rivuletReadPages = (kind) => (label) =>
  withServer(kind, label, async (server) => {
    await preloadRivulet(server.url, '/bench/read', cfg.readEvents);
    const afters = randomAfters({ firstOffset: 1, lastOffset: cfg.readEvents + 1, page: cfg.page, pages: readPages(), random: seededRandom(roundSeed(label)) });
    const cpu0 = procCpuMs(server.child.pid);
    const r = await randomPagesRead({ url: server.url, path: '/v1/streams/bench/read', afters, page: cfg.page });
    const cpuUsPerEvent = ((procCpuMs(server.child.pid) - cpu0) * 1000) / r.events;
    return { eventsPerSec: r.events / r.seconds, cpuUsPerEvent, readerCpuUsPerEvent: (r.readerCpuMs * 1000) / r.events };
  });

/**
 * The same random full pages read by wrk, a C client like redis-benchmark (wrk-read.mjs), for
 * `--wrk-seconds`: the server's work without the Node reader's CPU on the same two cores.
 */
const rivuletReadWrk = (kind) => (label) =>
  withServer(kind, label, async (server) => {
    await preloadRivulet(server.url, '/bench/read', cfg.readEvents);
    const cpu0 = procCpuMs(server.child.pid);
    const r = await wrkPagesRead({ url: server.url, path: '/v1/streams/bench/read', firstOffset: 1, lastOffset: cfg.readEvents + 1, page: cfg.page, seconds: cfg.wrkSeconds, seed: roundSeed(label) });
    return { eventsPerSec: r.eventsPerSec, cpuUsPerEvent: ((procCpuMs(server.child.pid) - cpu0) * 1000) / (r.pages * cfg.page) };
  });

const redisRead = (label) =>
  withServer('redis', label, async (redis) => {
    await redisPreload(redis, cfg.readEvents, BODY);
    return redisXrange(redis, { count: cfg.readEvents, page: cfg.page, pages: readPages(), timeoutMs: cfg.timeoutMs });
  });

/** The live copy lag: the same rate and count for both, the first second not measured. */
const lagLoad = () => ({ rate: cfg.lagRate, count: cfg.lagRate * cfg.lagSeconds, warm: cfg.lagRate, timeoutMs: 30_000 });
const rivuletLag = (kind) => (label) => withServer(kind, label, (server) => rivuletLiveLag(server, lagLoad()));
const natsLag = (label) => withServer('nats', label, (nats) => natsLiveLag(nats, lagLoad()));

/** The subs group: the appends load with keys, with `perStream` non-matching subscriptions per stream. */
const filteredAppends = (perStream, kind = 'rivulet') => httpAppends(kind, 50, true, (server) => prepareStreams(server.url, { streams: cfg.streams, perStream }));

/**
 * Rivulet idle: two servers of this build with the same flags side by side, one empty and one
 * given `streams` source streams with a copy subscription each; after the same wait (`--idle-wait`:
 * long enough for quiet actors to leave memory, registry.ts, and for V8 to collect them) and a
 * settled RSS, both are measured over the same idle window. Answers the loaded one's figures, the
 * empty one's, and the difference of this round.
 */
const rivuletIdle = (streams, kind = 'rivulet') => (label) =>
  withServer(kind, `${label}-empty`, (empty) =>
    withServer(kind, label, async (server) => {
      await createRivuletSubscriptions(server.url, streams);
      const createdRssMb = rssMb(server.child.pid) - rssMb(empty.child.pid);
      await new Promise((r) => setTimeout(r, cfg.idleWaitMs));
      const [loaded, bare] = await Promise.all([settleAndIdle(server.child.pid, { idleMs: cfg.idleMs }), settleAndIdle(empty.child.pid, { idleMs: cfg.idleMs })]);
      return { streams, ...loaded, emptyRssMb: bare.rssMb, emptyIdleCpuPct: bare.idleCpuPct, aboveEmptyMb: loaded.rssMb - bare.rssMb, createdAboveEmptyMb: createdRssMb };
    }),
  );

/** NATS idle: as many stream pairs as it creates within the budget; its RSS before them is its empty figure. */
const natsIdle = (label) =>
  withServer('nats', label, async (nats) => {
    const { rssMb: emptyRssMb } = await settleAndIdle(nats.pid, { idleMs: 1000 });
    const made = await createNatsSources(nats, cfg.natsIdleStreams, cfg.natsIdleBudgetMs);
    const r = await settleAndIdle(nats.pid, { idleMs: cfg.idleMs });
    if (made.stopped) console.log(`  nats-idle: ${made.made} of ${cfg.natsIdleStreams} pairs, stopped by ${made.stopped}`);
    return { streams: made.made, createSeconds: made.createSeconds, emptyRssMb, ...r };
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
    ...(flags['ab-cli'] ? [['rivulet-ab-keys-200', httpAppends('rivulet-ab', 200, true), null]] : []),
  ],
  copy: [
    ['rivulet-copy', rivuletCopy('rivulet'), null],
    ['nats-sourcing', natsCopy, natsOff],
    ...(flags['ab-cli'] ? [['rivulet-ab-copy', rivuletCopy('rivulet-ab'), null]] : []),
  ],
  lag: [
    ['rivulet-lag', rivuletLag('rivulet'), null],
    ['nats-lag', natsLag, natsOff],
    ...(flags['ab-cli'] ? [['rivulet-ab-lag', rivuletLag('rivulet-ab'), null]] : []),
  ],
  reads: [
    ['rivulet-read-pages', rivuletReadPages('rivulet'), null],
    ['redis-xrange', redisRead, redisOff],
    ['rivulet-read-wrk', rivuletReadWrk('rivulet'), wrkSkip],
    ['rivulet-read', rivuletRead('rivulet'), null],
    ...(flags['ab-cli']
      ? [
          ['rivulet-ab-read-wrk', rivuletReadWrk('rivulet-ab'), wrkSkip],
          ['rivulet-ab-read-pages', rivuletReadPages('rivulet-ab'), null],
          ['rivulet-ab-read', rivuletRead('rivulet-ab'), null],
        ]
      : []),
  ],
  subs: [
    ['rivulet-subs10', filteredAppends(10), null],
    ['rivulet-subs0', filteredAppends(0), null],
    ...(flags['ab-cli'] ? [['rivulet-ab-subs10', filteredAppends(10, 'rivulet-ab'), null], ['rivulet-ab-subs0', filteredAppends(0, 'rivulet-ab'), null]] : []),
  ],
  idle: [
    ['rivulet-idle', rivuletIdle(cfg.idleStreams), null],
    ...(flags['ab-cli'] ? [['rivulet-ab-idle', rivuletIdle(cfg.idleStreams, 'rivulet-ab'), null]] : []),
    // Once, in the first round: creating the streams takes NATS minutes (bench/README).
    ['nats-idle', natsIdle, natsOff, { once: true }],
  ],
};

function describe(name, r) {
  if (r.lagP99ms !== undefined) return `lag p50 ${fmtMs(r.lagP50ms)} p99 ${fmtMs(r.lagP99ms)} max ${fmtMs(r.lagMaxms)} ms at ${fmtN(r.perSec)}/s, ${r.cpuUsPerEvent.toFixed(1)} µs CPU/event`;
  if (r.aboveEmptyMb !== undefined) {
    return `${fmtN(r.streams)} streams: RSS ${r.rssMb.toFixed(1)} MB, ${r.aboveEmptyMb.toFixed(1)} MB above the empty server (${r.createdAboveEmptyMb.toFixed(1)} right after creating them), idle CPU ${r.idleCpuPct.toFixed(2)} % (empty ${r.emptyIdleCpuPct.toFixed(2)} %)${r.settledInTime ? '' : ', RSS not settled'}`;
  }
  if (r.idleCpuPct !== undefined) return `${fmtN(r.streams)} stream pairs (${r.createSeconds.toFixed(0)} s to create): RSS ${r.rssMb.toFixed(1)} MB (${r.emptyRssMb.toFixed(1)} empty), idle CPU ${r.idleCpuPct.toFixed(2)} %`;
  if (r.p99ms !== undefined) return `${fmtN(r.perSec)}/s p50 ${fmtMs(r.p50ms)} p99 ${fmtMs(r.p99ms)} ms, ${fmtN(r.cpuUsPerReq)} µs CPU/req`;
  if (r.cpuUsPerCopy !== undefined) return `${fmtN(r.perSec)} copies/s (${fmtMs(r.seconds)} s), ${r.cpuUsPerCopy.toFixed(1)} µs CPU/copy`;
  const reader = r.readerCpuUsPerEvent === undefined ? '' : ` (reader ${r.readerCpuUsPerEvent.toFixed(2)})`;
  return `${fmtN(r.eventsPerSec)} events/s, ${r.cpuUsPerEvent.toFixed(2)} µs CPU/event${reader}`;
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
    for (const [name, run, , options] of roundOrder(names, round)) {
      if (options?.once && round > 0) continue;
      const r = await run(`${name}-r${round}`);
      runs.push({ name, round, ...r });
      console.log(`  ${name.padEnd(18)} ${describe(name, r)}`);
    }
  }

  const med = (name, field) => median(runs.filter((r) => r.name === name).map((r) => r[field]));
  const summary = {};
  for (const name of new Set(runs.map((r) => r.name))) {
    const rs = runs.filter((r) => r.name === name);
    summary[name] = Object.fromEntries(Object.keys(rs[0]).filter((k) => typeof rs[0][k] === 'number' && k !== 'round').map((k) => [k, med(name, k)]));
  }
  const rate = (s) => s.perSec ?? s.eventsPerSec;
  const rows = Object.entries(summary)
    .filter(([, s]) => rate(s) !== undefined)
    .map(([name, s]) => [
      name,
      fmtN(rate(s)),
      fmtMs(s.p99ms ?? s.lagP99ms),
      fmtMs(s.cpuUsPerReq ?? s.cpuUsPerCopy ?? s.cpuUsPerEvent),
    ]);
  if (rows.length) console.log(`\n${table(['contender', 'per s', 'p99 ms (lag: copy lag)', 'CPU µs each'], rows)}`);
  const idleRows = Object.entries(summary)
    .filter(([, s]) => s.idleCpuPct !== undefined)
    .map(([name, s]) => [name, fmtN(s.streams), s.rssMb.toFixed(1), s.emptyRssMb.toFixed(1), s.idleCpuPct.toFixed(2), fmtMs(s.emptyIdleCpuPct)]);
  if (idleRows.length) console.log(`\n${table(['contender', 'streams', 'RSS MB', 'empty RSS MB', 'idle CPU %', 'empty idle CPU %'], idleRows)}`);

  const s = (name, field) => summary[name]?.[field] ?? NaN;
  const targets = targetLines(s, { abCli: Boolean(flags['ab-cli']), groups: cfg.groups });
  console.log('');
  for (const [target, value, v] of targets) console.log(`${v.padEnd(4)}  ${target}: ${value}`);
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
