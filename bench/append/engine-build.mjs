/**
 * What the in-process append benchmarks (engine-ab.mjs, keys-growth.mjs) share: a build of
 * packages/server loaded from its dist folder, and an engine opened on a fresh database with the
 * Node host's settings (relaxed durability, exclusive locking, group commit) and its actors.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** About the event of run.mjs scenario (a): a ≈100-byte payload, as JSON text. */
export const EVENT_TEXT = JSON.stringify({ type: 'bench/e', payload: { customer: 'c-000123', amount: 4200, currency: 'EUR', note: 'x'.repeat(40) } });

/** EVENT_TEXT with the `n`th unique idempotency key, made as bench/peers/load.mjs makes them (50 callers each counting, "c<caller>-<n>"). */
export const keyedEventText = (n, key = `c${n % 50}-${Math.floor(n / 50)}`) => `${EVENT_TEXT.slice(0, -1)},"idempotencyKey":"${key}"}`;

/** The modules of the build whose dist folder is `dir`. */
export async function loadEngineBuild(dir) {
  const from = async (path) => import(pathToFileURL(join(resolve(dir), path)).href);
  return {
    SqliteStorage: (await from('adapters/sqlite/sqlite-storage.js')).SqliteStorage,
    openSchema: (await from('engine/schema.js')).openSchema,
    StreamStore: (await from('engine/stream-store.js')).StreamStore,
    StreamActor: (await from('engine/actor.js')).StreamActor,
    defaultEngineConfig: (await from('engine/config.js')).defaultEngineConfig,
    checkInput: (await from('core/append-input.js')).checkInput,
  };
}

/**
 * Build `b`'s engine on a fresh database in a temporary folder named by `prefix`, with `streams`
 * actors (/bench/s-0 …); `close()` closes it and removes the folder.
 */
export async function openEngine(b, prefix, streams) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const storage = new b.SqliteStorage(join(dir, 'rivulet.db'), { durability: 'relaxed', exclusive: true });
  const close = () => {
    storage.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    b.openSchema(storage);
    await storage.flush();
  } catch (error) {
    close();
    throw error;
  }
  let ids = 0;
  const deps = {
    store: new b.StreamStore(storage),
    clock: { now: () => Date.now() },
    random: { next: Math.random, uuid: () => `00000000-0000-4000-8000-${(++ids).toString(16).padStart(12, '0')}` },
    config: b.defaultEngineConfig,
  };
  const actors = Array.from({ length: streams }, (_, i) => new b.StreamActor(null, `/bench/s-${i}`, deps));
  return { storage, actors, close };
}
