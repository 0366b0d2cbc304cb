#!/usr/bin/env node
/**
 * The receiving half of a copy backlog drain, without a server, for two builds side by side: batches
 * of 1000 copies (as delivery hands them over) through `StreamActor.receiveCopies` on a fresh SQLite
 * file (`durability: full`, one fsync per batch), the builds alternating first and second per round.
 * Prints CPU µs per copy per round and the median of the per-round ratios new ÷ base. The events
 * carry their stored payload text, as a drain without a transform hands them over (since
 * 2026-12-06; before, the copies were serialised and not stored as parts). The source
 * side (reading, filtering, the HTTP of the peers bench) is not in it; `run.mjs --only copy
 * --ab-cli` measures the whole drain.
 *
 *   node bench/peers/copy-receive-ab.mjs BASE_DIST [NEW_DIST] [ROUNDS] [COPIES]
 *
 * BASE_DIST: packages/server/dist of another build (`node bench/peers/build-commit.mjs COMMIT`
 * prints its CLI; the dist is beside it, ../../server/dist). NEW_DIST defaults to this checkout's.
 *
 * Each measurement runs in a child process of its own (this script with `--child DIST COPIES`),
 * after a warm-up of 10,000 copies:
 * with both builds loaded in one process, the build loaded second measured 1.14–1.22x the CPU per
 * copy of the first whichever build it was (2026-12-06, bench/README "A copy's claims without an
 * object per copy").
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { root } from '../lib/processes.mjs';

const child = process.argv[2] === '--child';
const [baseArg, newArg, roundsStr, copiesStr] = child ? [] : process.argv.slice(2);
if (!child && !baseArg) {
  console.error('usage: node bench/peers/copy-receive-ab.mjs BASE_DIST [NEW_DIST] [ROUNDS] [COPIES]');
  process.exit(2);
}
const load = async (dir) => ({
  SqliteStorage: (await import(`${dir}/adapters/sqlite/sqlite-storage.js`)).SqliteStorage,
  StreamStore: (await import(`${dir}/engine/stream-store.js`)).StreamStore,
  StreamActor: (await import(`${dir}/engine/actor.js`)).StreamActor,
  openSchema: (await import(`${dir}/engine/schema.js`)).openSchema,
  defaultEngineConfig: (await import(`${dir}/engine/config.js`)).defaultEngineConfig,
  systemTimer: (await import(`${dir}/ports/timer.js`)).systemTimer,
});
const body = (i) => ({ type: 'bench.item', payload: { n: i, client: 0, pad: 'x'.repeat(80) } });
/** A source event as delivery hands it over without a transform: its stored payload text beside it (so copies are stored as parts). */
const event = (offset) => {
  const shaped = body(offset);
  return { offset, type: 'bench.item', createdAt: '2026-12-02T00:00:01.000Z', shaped, fieldsJson: `,"payload":${JSON.stringify(shaped.payload)}` };
};
async function once(b, copies) {
  const dir = mkdtempSync(join(tmpdir(), 'levers-copyab-'));
  const storage = new b.SqliteStorage(join(dir, 'db.sqlite'), { durability: 'full', exclusive: true });
  b.openSchema(storage);
  let ids = 0;
  const deps = { store: new b.StreamStore(storage), clock: { now: () => Date.now() }, random: { next: Math.random, uuid: () => `00000000-0000-4000-8000-${(++ids).toString(16).padStart(12, '0')}` }, timer: b.systemTimer, config: b.defaultEngineConfig };
  const actor = new b.StreamActor(null, '/bench/dst', deps);
  const stamp = { projectId: null, path: '/bench/src', streamId: '11111111-1111-4111-8111-111111111111', streamCreatedAt: '2026-12-02T00:00:00.000Z', subscriptionKey: 'drain', cursorChangedAtSourceOffset: 2, receivingStreamPath: '/bench/dst' };
  const batches = [];
  for (let first = 1; first <= copies; first += 1000) {
    batches.push({ ...stamp, events: Array.from({ length: Math.min(1000, copies - first + 1) }, (_, i) => event(first + i)) });
  }
  const c0 = process.cpuUsage(); const t0 = performance.now();
  for (const batch of batches) await actor.receiveCopies(batch);
  const u = process.cpuUsage(c0); const ms = performance.now() - t0;
  storage.close(); rmSync(dir, { recursive: true, force: true });
  return { cpuUs: (u.user + u.system) / copies, perSec: copies / (ms / 1000) };
}
if (child) {
  const [, dist, count] = process.argv.slice(2);
  const build = await load(dist);
  await once(build, 10_000); // warm-up: the code compiled as in a running server
  console.log(JSON.stringify(await once(build, Number(count))));
  process.exit(0);
}
const baseDir = resolve(baseArg);
const newDir = resolve(newArg || join(root, 'packages', 'server', 'dist'));
const dirs = { base: baseDir, new: newDir };
const rounds = Number(roundsStr ?? 9);
const copies = Number(copiesStr ?? 100000);
const measure = (name) => JSON.parse(execFileSync(process.execPath, [new URL(import.meta.url).pathname, '--child', dirs[name], String(copies)], { encoding: 'utf8' }));
const res = { base: [], new: [] };
for (let r = 0; r < rounds; r++) {
  for (const name of r % 2 ? ['new', 'base'] : ['base', 'new']) { const x = measure(name); res[name].push(x); console.log(r + 1, name, x.cpuUs.toFixed(2), 'us CPU/copy', x.perSec.toFixed(0), 'copies/s'); }
}
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[(s.length - 1) >> 1]; };
const ratios = res.new.map((x, i) => x.cpuUs / res.base[i].cpuUs);
console.log('median CPU/copy base', med(res.base.map((x) => x.cpuUs)).toFixed(2), 'new', med(res.new.map((x) => x.cpuUs)).toFixed(2), 'median per-round ratio new/base', med(ratios).toFixed(3), 'ratios', ratios.map((x) => x.toFixed(3)).join(' '));
