#!/usr/bin/env node
/**
 * In-process A/B of the Durable Streams append path below HTTP (bench/README.md, durable-streams
 * section): the layer's `answerAppend` (what the Node host's connection front calls, routes.ts)
 * over the engine composed as the Node host composes it, on SQLite with `relaxed` durability (no
 * fsync: the CPU of the code is what is measured, not the disk), with builds of packages/server
 * given as dist folders. Each step issues one append to each of `--streams` streams in one turn,
 * as 50 clients on 50 streams do, so they share a group commit. `--native` also measures Rivulet's
 * own append answerer (`POST /v1/streams/…`, one event each) in every build: the ceiling the layer
 * is compared with. Rounds interleave the builds (the order alternates), each on a fresh database
 * after a warm-up; it prints this process's CPU time per append (median and every round), per
 * round each build's figure over the next build's (list them newest first: a chain of changes) and
 * the first's over the last's, and with `--native` each Durable Streams figure over the native one
 * of the same build.
 *
 *   node bench/durable-streams/layer-ab.mjs NAME=DIST [NAME=DIST …] [--native] [--appends 20000] [--rounds 7] [--streams 50]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    appends: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '7' },
    streams: { type: 'string', default: '50' },
    native: { type: 'boolean' },
  },
});
const N = Number(values.appends);
const ROUNDS = Number(values.rounds);
const STREAMS = Number(values.streams);
if (positionals.length === 0) throw new Error('usage: layer-ab.mjs NAME=DIST [NAME=DIST …] [--native] [--appends N] [--rounds N] [--streams N]');

const builds = [];
for (const arg of positionals) {
  const at = arg.indexOf('=');
  const [name, dir] = [arg.slice(0, at), arg.slice(at + 1)];
  const load = async (path) => import(pathToFileURL(join(resolve(dir), path)).href);
  builds.push({
    name,
    SqliteStorage: (await load('adapters/sqlite/sqlite-storage.js')).SqliteStorage,
    openSchema: (await load('engine/schema.js')).openSchema,
    composeEngine: (await load('engine/compose.js')).composeEngine,
    defaultEngineConfig: (await load('engine/config.js')).defaultEngineConfig,
    createServerMetrics: (await load('engine/metrics.js')).createServerMetrics,
    clock: await load('ports/clock.js'),
    systemTimer: (await load('ports/timer.js')).systemTimer,
    nodeAlarms: (await load('hosts/node/alarms.js')).nodeAlarms,
    durableStreams: (await load('http/durable-streams/routes.js')).durableStreams,
    appendAnswerer: (await load('http/append-route.js')).appendAnswerer,
  });
}

const logger = { error: (message, error) => console.error(message, error), warn: () => {}, info: () => {} };

/** Header fields as the front hands them over: a plain object of lower-case names. */
function reader(fields) {
  return { get: (name) => fields[name] ?? null };
}

async function measure(b, native) {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-ds-layer-ab-'));
  const storage = new b.SqliteStorage(join(dir, 'rivulet.db'), { durability: 'relaxed', exclusive: true });
  try {
    b.openSchema(storage);
    await storage.flush();
    const metrics = b.createServerMetrics(undefined, { version: 'bench' });
    const engine = b.composeEngine({
      storage,
      alarms: b.nodeAlarms,
      timer: b.systemTimer,
      clock: b.clock.systemClock,
      random: b.clock.systemRandom,
      config: b.defaultEngineConfig,
      metrics,
      logger,
      receivers: {},
    });
    const options = { service: engine.service, tokens: null, maxBodyBytes: 1 << 20, longPollTimeoutMs: 1000, logger, metrics, batchWrites: true };
    const answer = native ? b.appendAnswerer(options) : b.durableStreams(options).answerAppend;
    const paths = Array.from({ length: STREAMS }, (_, i) => `/v1/${native ? 'streams' : 'stream'}/bench/s${i}`);
    if (!native) {
      const { handle } = b.durableStreams(options);
      for (const path of paths) {
        const response = await handle(new Request(`http://bench${path}`, { method: 'PUT', headers: { 'content-type': 'application/json' } }), reader({ 'content-type': 'application/json' }), path);
        if (response.status !== 201) throw new Error(`PUT ${path}: ${response.status}`);
      }
    }
    let n = 0;
    const one = async (path, c) => {
      const value = { client: c, n: n++, text: 'the quick brown fox' };
      const bytes = new TextEncoder().encode(JSON.stringify(native ? { type: 'bench/message', payload: value } : value));
      const fields = reader({ 'content-type': 'application/json', 'content-length': String(bytes.length) });
      const answered = await answer(path, fields, () => bytes, performance.now());
      if (answered.status !== (native ? 200 : 204)) throw new Error(`POST ${path}: ${answered.status} ${answered.text}`);
    };
    const step = () => Promise.all(paths.map(one));
    for (let i = 0; i < 2000 / STREAMS; i++) await step();
    const before = process.cpuUsage();
    for (let i = 0; i < N / STREAMS; i++) await step();
    const used = process.cpuUsage(before);
    return (used.user + used.system) / N;
  } finally {
    await storage.flush().catch(() => {});
    storage.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const runs = builds.flatMap((b) => [{ b, native: false, name: b.name }, ...(values.native ? [{ b, native: true, name: `${b.name}-native` }] : [])]);
const results = new Map(runs.map((r) => [r.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const r of round % 2 ? [...runs].reverse() : runs) results.get(r.name).push(await measure(r.b, r.native));
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(`${N} appends per round, ${ROUNDS} rounds, ${STREAMS} streams, one append to each per turn`);
for (const [name, rounds] of results) {
  console.log(`${name.padEnd(16)} CPU µs/append: median ${median(rounds).toFixed(1)}  (${rounds.map((x) => x.toFixed(1)).join(' ')})`);
}
if (values.native) {
  for (const b of builds) {
    const ratios = results.get(b.name).map((x, i) => x / results.get(`${b.name}-native`)[i]);
    console.log(`${b.name} over its native append: median ${median(ratios).toFixed(2)}x  (${ratios.map((x) => x.toFixed(2)).join(' ')})`);
  }
}
// Each build over the one named after it (a chain of changes: NEWEST=… … OLDEST=…), and the first over the last.
const pairs = builds.slice(1).map((b, i) => [builds[i], b]);
if (builds.length > 2) pairs.push([builds[0], builds[builds.length - 1]]);
for (const [a, b] of pairs) {
  const ratios = results.get(a.name).map((x, i) => x / results.get(b.name)[i]);
  console.log(`${a.name} over ${b.name}: median ${median(ratios).toFixed(2)}x  (${ratios.map((x) => x.toFixed(2)).join(' ')})`);
}
console.log(`load average at the end: ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')}`);
