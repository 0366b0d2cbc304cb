/**
 * Deferred erasure of destroyed lifetimes (StreamStore.erase with onDeferredErase, purgeErased,
 * and the Node host's ErasedPurger): a destroy frees the path at once and hides the old events,
 * the purge deletes them in chunks, a recreated stream is untouched by it, and a purge cut short
 * goes on after a reopen.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStorage } from '../../adapters/sqlite/sqlite-storage.js';
import { StreamActor, type ActorDeps } from '../../engine/actor.js';
import { defaultEngineConfig } from '../../engine/config.js';
import { openSchema } from '../../engine/schema.js';
import { ERASED_PROJECT, StreamStore } from '../../engine/stream-store.js';
import { systemClock, systemRandom } from '../../ports/clock.js';
import { systemTimer } from '../../ports/timer.js';
import { ErasedPurger } from './purge.js';
import { startNodeServer } from './serve.js';

let dir: string | undefined;
const opened: SqliteStorage[] = [];
afterEach(() => {
  for (const s of opened.splice(0)) s.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function open(file: string, onDeferredErase: () => void): { storage: SqliteStorage; store: StreamStore; actor: (path: string) => StreamActor } {
  const storage = new SqliteStorage(file, { durability: 'relaxed' });
  opened.push(storage);
  openSchema(storage);
  const store = new StreamStore(storage, { onDeferredErase });
  const deps: ActorDeps = { store, clock: systemClock, random: systemRandom, timer: systemTimer, config: defaultEngineConfig };
  return { storage, store, actor: (path) => new StreamActor(null, path, deps) };
}

const count = (storage: SqliteStorage, sql: string, ...params: (string | number)[]) => storage.exec<{ n: number }>(sql, ...params)[0]!.n;

async function fill(actor: StreamActor, events: number): Promise<void> {
  for (let done = 0; done < events; done += 500) {
    await actor.append(
      Array.from({ length: Math.min(500, events - done) }, (_, i) => ({ type: 'app/x', payload: { n: done + i } })),
      'public',
    );
  }
}

describe('deferred erasure', () => {
  it('a destroy frees the path at once; the purge deletes the old events in chunks and then its row', async () => {
    dir = mkdtempSync(join(tmpdir(), 'rivulet-purge-'));
    let scheduled = 0;
    const { storage, store, actor } = open(join(dir, 'db'), () => scheduled++);
    const old = actor('/big');
    await fill(old, 1200);
    const oldSid = old.sid!;
    expect(await old.destroy()).toBe(true);
    expect(scheduled).toBe(1);

    // Gone for every reader: the path loads empty, the listing does not show it.
    expect(actor('/big').coreState).toBeNull();
    expect(store.list(null, '/', undefined, 10).map((s) => s.path)).not.toContain('/big');
    // The rows are still there, under a streams row that belongs to no project.
    expect(count(storage, `SELECT count(*) AS n FROM events WHERE sid = ?`, oldSid)).toBe(1201);
    expect(count(storage, `SELECT count(*) AS n FROM streams WHERE sid = ? AND project = ?`, oldSid, ERASED_PROJECT)).toBe(1);

    // A new lifetime on the same path takes another sid and is untouched by the purge.
    const again = actor('/big');
    await again.append([{ type: 'app/y' }], 'public');
    expect(again.sid).not.toBe(oldSid);

    const left: number[] = [];
    while (store.purgeErased(500)) left.push(count(storage, `SELECT count(*) AS n FROM events WHERE sid = ?`, oldSid));
    expect(left).toEqual([701, 201, 0]);
    expect(count(storage, `SELECT count(*) AS n FROM streams WHERE sid = ?`, oldSid)).toBe(0);
    expect(store.purgeErased(500)).toBe(false);
    expect(actor('/big').readRaw({ afterOffset: 0, beforeOffset: 100, limit: 100, includeEphemeral: false }).events.map((e) => e.offset)).toEqual([1, 2]);
  });

  it('the purger runs chunk after chunk on later turns until nothing is left, and a reopen finishes what a stop left', async () => {
    dir = mkdtempSync(join(tmpdir(), 'rivulet-purge-'));
    const file = join(dir, 'db');
    const first = open(file, () => undefined);
    const s = first.actor('/a');
    await fill(s, 900);
    const sid = s.sid!;
    await s.destroy();
    // One chunk, then stopped: the rest stays marked.
    expect(first.store.purgeErased(300)).toBe(true);
    await first.storage.flush();
    first.storage.close();
    opened.length = 0;

    const errors: unknown[] = [];
    const second = open(file, () => undefined);
    expect(count(second.storage, `SELECT count(*) AS n FROM events WHERE sid = ?`, sid)).toBe(601);
    const purger = new ErasedPurger(() => second.store, (_m, e) => errors.push(e), 200);
    purger.schedule();
    purger.schedule(); // already under way: no second loop
    // Nothing happens inside the scheduling turn.
    expect(count(second.storage, `SELECT count(*) AS n FROM events WHERE sid = ?`, sid)).toBe(601);
    for (let i = 0; i < 200 && count(second.storage, `SELECT count(*) AS n FROM streams WHERE sid = ?`, sid) > 0; i++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(count(second.storage, `SELECT count(*) AS n FROM events WHERE sid = ?`, sid)).toBe(0);
    expect(count(second.storage, `SELECT count(*) AS n FROM streams WHERE sid = ?`, sid)).toBe(0);
    expect(errors).toEqual([]);
  });

  it('a stopped purger deletes nothing more', async () => {
    dir = mkdtempSync(join(tmpdir(), 'rivulet-purge-'));
    const { storage, store, actor } = open(join(dir, 'db'), () => undefined);
    const s = actor('/a');
    await fill(s, 100);
    const sid = s.sid!;
    await s.destroy();
    const purger = new ErasedPurger(() => store, () => undefined, 10);
    purger.schedule();
    purger.stop();
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(count(storage, `SELECT count(*) AS n FROM events WHERE sid = ?`, sid)).toBe(101);
  });

  it('the Node host purges what a destroy left, between requests, and the file holds none of it after close', async () => {
    dir = mkdtempSync(join(tmpdir(), 'rivulet-purge-'));
    const server = await startNodeServer({ port: 0, data: dir, logger: { error: () => undefined } });
    try {
      for (let done = 0; done < 5000; done += 1000) {
        const body = JSON.stringify(Array.from({ length: 1000 }, (_, i) => ({ type: 'app/x', payload: { n: done + i } })));
        const res = await fetch(`${server.url}/v1/streams/big`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        expect(res.status).toBe(200);
      }
      const gone = await fetch(`${server.url}/v1/streams/big`, { method: 'DELETE' });
      expect(await gone.json()).toEqual({ destroyed: true });
      // Served at once while the purge runs: the path starts a new lifetime.
      const fresh = await fetch(`${server.url}/v1/streams/big`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"app/y"}' });
      expect(((await fresh.json()) as { events: { offset: number }[] }).events.map((e) => e.offset)).toEqual([2]);
      for (let i = 0; i < 500 && server.erasing; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(server.erasing).toBe(false);
    } finally {
      await server.close();
    }
    const storage = new SqliteStorage(join(dir, 'rivulet.db'), { durability: 'relaxed' });
    opened.push(storage);
    expect(count(storage, `SELECT count(*) AS n FROM streams WHERE project = ?`, ERASED_PROJECT)).toBe(0);
    expect(count(storage, `SELECT count(*) AS n FROM events`)).toBe(2);
  });
});
