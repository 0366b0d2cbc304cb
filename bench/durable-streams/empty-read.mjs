#!/usr/bin/env node
/**
 * What the Durable Streams layer's check before every write costs (bench/README.md, bench/peers
 * "appends: where the CPU goes", levers): `service.read` of a stream the caller is up to date with
 * (an empty read after the head), and the actor's `readRaw` alone, over the engine composed as the
 * Node host composes it (SQLite, `relaxed`), in one process; beside them, the object spread that
 * `readRaw` builds its range with (`{ ...q, beforeOffset, ephemeralSinceMs }`) on the same query,
 * alone. Prints CPU ns per call, each round.
 *
 *   node bench/durable-streams/empty-read.mjs [DIST] [--rounds 3] [--calls 500000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: 'string', default: '3' }, calls: { type: 'string', default: '500000' } },
});
const dist = resolve(positionals[0] ?? join(import.meta.dirname, '..', '..', 'packages', 'server', 'dist'));
const load = (path) => import(pathToFileURL(join(dist, path)).href);
const { SqliteStorage } = await load('adapters/sqlite/sqlite-storage.js');
const { openSchema } = await load('engine/schema.js');
const { composeEngine } = await load('engine/compose.js');
const { defaultEngineConfig } = await load('engine/config.js');
const { createServerMetrics } = await load('engine/metrics.js');
const clock = await load('ports/clock.js');
const { systemTimer } = await load('ports/timer.js');
const { nodeAlarms } = await load('hosts/node/alarms.js');

const dir = mkdtempSync(join(tmpdir(), 'rivulet-empty-read-'));
const storage = new SqliteStorage(join(dir, 'rivulet.db'), { durability: 'relaxed', exclusive: true });
try {
  openSchema(storage);
  await storage.flush();
  const logger = { error: (message, error) => console.error(message, error), warn() {}, info() {} };
  const engine = composeEngine({
    storage,
    alarms: nodeAlarms,
    timer: systemTimer,
    clock: clock.systemClock,
    random: clock.systemRandom,
    config: defaultEngineConfig,
    metrics: createServerMetrics(undefined, { version: 'bench' }),
    logger,
    receivers: {},
  });
  const service = engine.service;
  const committed = await service.append(null, '/bench/empty-read', [{ type: 'bench/e', payload: { n: 1 } }]);
  const head = committed[committed.length - 1].offset;
  const calls = Number(values.calls);
  const perCall = (before) => {
    const used = process.cpuUsage(before);
    return (((used.user + used.system) * 1000) / calls).toFixed(0);
  };
  for (let round = 0; round < Number(values.rounds); round++) {
    let before = process.cpuUsage();
    for (let i = 0; i < calls; i++) {
      const page = await service.read(null, '/bench/empty-read', { afterOffset: head, limit: 500, includeEphemeral: false });
      if (page.events.length !== 0) throw new Error('the read was not empty');
    }
    const read = perCall(before);
    const actor = service.actor(null, '/bench/empty-read');
    before = process.cpuUsage();
    for (let i = 0; i < calls; i++) actor.readRaw({ afterOffset: head, limit: 500, includeEphemeral: false });
    const raw = perCall(before);
    let sum = 0;
    before = process.cpuUsage();
    for (let i = 0; i < calls; i++) {
      const q = { afterOffset: head, limit: 500, includeEphemeral: false };
      const range = { ...q, beforeOffset: head + 1, ephemeralSinceMs: undefined };
      sum += range.limit;
    }
    if (sum !== 500 * calls) throw new Error('spread');
    console.log(`round ${round + 1}: service.read ${read} ns, actor.readRaw ${raw} ns per empty read; the range spread alone ${perCall(before)} ns`);
  }
} finally {
  storage.close();
  rmSync(dir, { recursive: true, force: true });
}
