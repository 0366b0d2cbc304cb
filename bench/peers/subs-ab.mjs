#!/usr/bin/env node
/**
 * The cost of non-matching subscriptions on the append path, in one process, for two builds side
 * by side: the `subs` group's streams (filtered.mjs: 100 streams, each with `--per-stream` copy
 * subscriptions whose `filter.eventTypes` no appended event has, or none) on a fresh SQLite file,
 * then appends with unique idempotency keys from 50 concurrent callers through the engine's
 * service (no HTTP), as in `run.mjs --only subs`. Each round runs base and new, with and without
 * the subscriptions, in alternating order; prints CPU µs per append, the extra CPU the
 * subscriptions add per append (with − without) for each build, and the medians.
 *
 *   node bench/peers/subs-ab.mjs BASE_DIST [NEW_DIST] [--rounds N] [--appends N] [--per-stream N] [--durability full|relaxed]
 *
 * BASE_DIST: packages/server/dist of another build (`node bench/peers/build-commit.mjs COMMIT`
 * prints its CLI; the dist is beside it, ../../server/dist). NEW_DIST defaults to this checkout's.
 * `relaxed` (the default here) leaves the fsync out of the CPU figures, which the subscriptions
 * do not change; `run.mjs --only subs --ab-cli` measures the whole server over HTTP.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { root } from '../lib/processes.mjs';
import { NEVER_TYPE } from './filtered.mjs';
import { median } from './verdict.mjs';

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '5' },
    appends: { type: 'string', default: '30000' },
    'per-stream': { type: 'string', default: '10' },
    durability: { type: 'string', default: 'relaxed' },
  },
});
if (!positionals[0]) {
  console.error('usage: node bench/peers/subs-ab.mjs BASE_DIST [NEW_DIST] [--rounds N] [--appends N] [--per-stream N] [--durability full|relaxed]');
  process.exit(2);
}
const rounds = Number(flags.rounds);
const appends = Number(flags.appends);
const perStream = Number(flags['per-stream']);
const STREAMS = 100;
const CLIENTS = 50;

const load = async (dir) => ({
  SqliteStorage: (await import(`${dir}/adapters/sqlite/sqlite-storage.js`)).SqliteStorage,
  openSchema: (await import(`${dir}/engine/schema.js`)).openSchema,
  composeEngine: (await import(`${dir}/engine/compose.js`)).composeEngine,
  localDirectory: (await import(`${dir}/engine/compose.js`)).localDirectory,
  copyReceiver: (await import(`${dir}/engine/receivers/copy.js`)).copyReceiver,
  defaultEngineConfig: (await import(`${dir}/engine/config.js`)).defaultEngineConfig,
  createServerMetrics: (await import(`${dir}/engine/metrics.js`)).createServerMetrics,
  nodeAlarms: (await import(`${dir}/hosts/node/alarms.js`)).nodeAlarms,
  systemTimer: (await import(`${dir}/ports/timer.js`)).systemTimer,
  systemClock: (await import(`${dir}/ports/clock.js`)).systemClock,
});
const builds = { base: await load(resolve(positionals[0])), new: await load(resolve(positionals[1] ?? join(root, 'packages', 'server', 'dist'))) };

const source = (s) => `/bench/b-${String(s).padStart(3, '0')}`;
const body = (c, k) => ({ type: 'bench/e', idempotencyKey: `c${c}-k${k}`, payload: { client: c, n: k, pad: 'x'.repeat(80) } });

async function once(b, withSubs) {
  const dir = mkdtempSync(join(tmpdir(), 'subs-ab-'));
  const storage = new b.SqliteStorage(join(dir, 'db.sqlite'), { durability: flags.durability, exclusive: true });
  b.openSchema(storage);
  let registry;
  const engine = b.composeEngine({
    storage,
    alarms: b.nodeAlarms,
    timer: b.systemTimer,
    clock: b.systemClock,
    random: { next: Math.random, uuid: () => globalThis.crypto.randomUUID() },
    config: b.defaultEngineConfig,
    metrics: b.createServerMetrics(),
    logger: { error: (m, e) => console.error(m, e) },
    receivers: { 'copy-to-stream': b.copyReceiver(b.localDirectory(() => registry)) },
  });
  registry = engine.registry;
  const { service } = engine;
  for (let s = 0; s < STREAMS; s++) {
    if (!withSubs) await service.append(null, source(s), [{ type: 'bench/created', payload: {} }]);
    for (let k = 0; k < perStream && withSubs; k++) {
      await service.subscribeToEventsFrom(null, `/bench/sink-${s}-${k}`, {
        sourceStreamPath: source(s),
        subscriptionKey: `never-${k}`,
        filter: { eventTypes: [NEVER_TYPE] },
        delivery: { start: 'now' },
      });
    }
  }
  let next = 0;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      for (let k = 0; next++ < appends; k++) await service.append(null, source(Math.floor(Math.random() * STREAMS)), [body(c, k)]);
    }),
  );
  const u = process.cpuUsage(c0);
  const ms = performance.now() - t0;
  engine.registry.close();
  engine.delivery.close();
  await storage.flush();
  storage.close();
  rmSync(dir, { recursive: true, force: true });
  return { cpuUs: (u.user + u.system) / appends, perSec: appends / (ms / 1000) };
}

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').trim();
console.log(`subs-ab: ${STREAMS} streams x ${perStream} non-matching subscriptions, ${appends} appends, durability ${flags.durability}; load ${loadavg()}`);
const runs = [];
const order = ['base', 'new'].flatMap((name) => [
  [name, true],
  [name, false],
]);
for (let r = 0; r < rounds; r++) {
  const extra = {};
  for (const [name, withSubs] of r % 2 ? [...order].reverse() : order) {
    const x = await once(builds[name], withSubs);
    runs.push({ round: r, name, withSubs, ...x });
    extra[name] = (extra[name] ?? 0) + (withSubs ? x.cpuUs : -x.cpuUs);
    console.log(`${r + 1} ${name.padEnd(4)} ${withSubs ? `subs${perStream}` : 'subs0 '} ${x.cpuUs.toFixed(2)} µs CPU/append ${x.perSec.toFixed(0)}/s`);
  }
  runs.push({ round: r, name: 'extra', base: extra.base, new: extra.new });
  console.log(`${r + 1} extra CPU per append with the subscriptions: base ${extra.base.toFixed(2)} µs, new ${extra.new.toFixed(2)} µs`);
}
const med = (name, withSubs) => median(runs.filter((x) => x.name === name && x.withSubs === withSubs).map((x) => x.cpuUs));
const extras = runs.filter((x) => x.name === 'extra');
const mBase = median(extras.map((x) => x.base));
const mNew = median(extras.map((x) => x.new));
console.log(`medians of ${rounds}: base ${med('base', true).toFixed(2)} / ${med('base', false).toFixed(2)} µs (with / without), new ${med('new', true).toFixed(2)} / ${med('new', false).toFixed(2)} µs`);
console.log(`extra CPU per append with the subscriptions (median of rounds): base ${mBase.toFixed(2)} µs, new ${mNew.toFixed(2)} µs, new ÷ base ${(mNew / mBase).toFixed(2)}x`);
console.log(`with the subscriptions, new ÷ base CPU per append: ${(med('new', true) / med('base', true)).toFixed(2)}x; load ${loadavg()}`);
