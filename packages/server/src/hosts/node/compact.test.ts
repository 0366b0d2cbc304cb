/**
 * `rivulet compact` (compactDataFolder): the file shrinks after destroys, pending erasure is
 * finished first, what remains reads exactly as before, and a folder in use or without data is
 * refused with its code and message.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RivuletError } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStorage } from '../../adapters/sqlite/sqlite-storage.js';
import { StreamActor } from '../../engine/actor.js';
import { defaultEngineConfig } from '../../engine/config.js';
import { openSchema } from '../../engine/schema.js';
import { StreamStore } from '../../engine/stream-store.js';
import { systemClock, systemRandom } from '../../ports/clock.js';
import { systemTimer } from '../../ports/timer.js';
import { compactDataFolder } from './compact.js';
import { lockDataFolder } from './data-lock.js';
import { startNodeServer } from './serve.js';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function failure(fn: () => unknown): RivuletError {
  try {
    fn();
  } catch (error) {
    if (error instanceof RivuletError) return error;
    throw error;
  }
  throw new Error('expected a RivuletError');
}

/** Two streams of `events` events each in DIR/rivulet.db; destroys /gone, whose erasure is left pending. */
async function folderWithDestroyedStream(events: number): Promise<void> {
  const storage = new SqliteStorage(join(dir, 'rivulet.db'), { durability: 'relaxed', exclusive: true });
  openSchema(storage);
  // A deferred erasure that nobody runs: the events stay until compact finishes them.
  const store = new StreamStore(storage, { onDeferredErase: () => undefined });
  const deps = { store, clock: systemClock, random: systemRandom, timer: systemTimer, config: defaultEngineConfig };
  const pad = 'x'.repeat(400);
  for (const path of ['/kept', '/gone']) {
    const actor = new StreamActor(null, path, deps);
    for (let done = 0; done < events; done += 500) {
      await actor.append(
        Array.from({ length: 500 }, (_, i) => ({ type: 'app/x', payload: { n: done + i, pad } })),
        'public',
      );
    }
  }
  await new StreamActor(null, '/gone', deps).destroy();
  await storage.flush();
  storage.close();
}

function readAll(path: string): Array<{ offset: number; json: string }> {
  const storage = new SqliteStorage(join(dir, 'rivulet.db'), { durability: 'relaxed' });
  try {
    openSchema(storage);
    const actor = new StreamActor(null, path, { store: new StreamStore(storage), clock: systemClock, random: systemRandom, timer: systemTimer, config: defaultEngineConfig });
    return actor.readRaw({ afterOffset: 0, beforeOffset: Number.MAX_SAFE_INTEGER, limit: 100_000, includeEphemeral: false }).events.map((e) => ({ offset: e.offset, json: e.json }));
  } finally {
    storage.close();
  }
}

describe('compactDataFolder', () => {
  it('finishes pending erasure and gives the space back; the remaining stream reads as before', async () => {
    dir = mkdtempSync(join(tmpdir(), 'rivulet-compact-'));
    await folderWithDestroyedStream(5000);
    const kept = readAll('/kept');
    expect(kept).toHaveLength(5001);
    const progress: string[] = [];
    const report = compactDataFolder(dir, { progress: (line) => progress.push(line) });
    expect(report.purgedRows).toBe(5001);
    // Two streams of about 2.4 MB each; one is left.
    expect(report.bytesAfter).toBeLessThan(report.bytesBefore * 0.7);
    expect(progress).toEqual(['erasing 5001 event(s) of destroyed streams', 'rewriting the database file']);
    expect(readAll('/kept')).toEqual(kept);
    expect(readAll('/gone')).toEqual([]);
    // Nothing left to do: a second run purges nothing and keeps the size.
    const again = compactDataFolder(dir);
    expect(again.purgedRows).toBe(0);
    expect(again.bytesAfter).toBeLessThanOrEqual(report.bytesAfter);
  });

  it('refuses a folder a running server holds, a database another program holds, and a folder without data', { timeout: 20_000 }, async () => {
    dir = mkdtempSync(join(tmpdir(), 'rivulet-compact-'));
    const missing = failure(() => compactDataFolder(dir));
    expect([missing.code, missing.message]).toEqual(['NOT_FOUND', `no Rivulet data in ${dir} (no rivulet.db): nothing to compact`]);
    const server = await startNodeServer({ port: 0, data: dir, logger: { error: () => undefined } });
    await server.close();

    // A server holds the folder's lock (the kernel's lock on rivulet.lock; protocol §16.3).
    const unlockServer = lockDataFolder(dir);
    try {
      const busy = failure(() => compactDataFolder(dir));
      expect(busy.code).toBe('PRECONDITION_FAILED');
      expect(busy.message).toBe(
        `cannot compact while the folder is in use: another Rivulet server is using the data folder ${dir}; stop that server first`,
      );
    } finally {
      unlockServer();
    }

    // Another program with the database itself open and locked (no lock file): refused too, once
    // SQLite's busy timeout (5 s) has passed.
    const other = new SqliteStorage(join(dir, 'rivulet.db'), { exclusive: true });
    other.db.exec('BEGIN IMMEDIATE');
    try {
      const held = failure(() => compactDataFolder(dir));
      expect([held.code, held.message]).toEqual([
        'PRECONDITION_FAILED',
        `cannot compact while the folder is in use: another process has ${join(dir, 'rivulet.db')} open`,
      ]);
    } finally {
      other.db.exec('ROLLBACK');
      other.close();
    }
    // Stopped: now it may.
    expect(compactDataFolder(dir).purgedRows).toBe(0);
  });
});
