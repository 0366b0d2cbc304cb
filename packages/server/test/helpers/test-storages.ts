/**
 * The storage adapters the engine's own tests run on in Node: sql.js in memory (with and without
 * TEMP objects, the second as on a Durable Object) and SQLite on a fresh file (relaxed
 * durability). Each opened storage, and its folder, is closed and removed by the caller's
 * `cleanups` after the test.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStorage } from '../../src/adapters/memory/memory-storage.js';
import { SqliteStorage } from '../../src/adapters/sqlite/sqlite-storage.js';
import type { SqlStorage } from '../../src/ports/storage.js';

export interface TestStorage {
  name: string;
  open: () => Promise<SqlStorage>;
}

/**
 * sql.js in memory; `tempObjects: false` takes TEMP objects away, as a Durable Object's SQL has
 * none (the engine then keeps its unindexed offsets in ordinary tables, engine/event-index.ts).
 */
export function memoryTestStorage(cleanups: Array<() => void>, tempObjects = true): TestStorage {
  return {
    name: tempObjects ? 'MemoryStorage' : 'MemoryStorage without TEMP objects',
    open: async () => {
      const storage = await MemoryStorage.create({ tempObjects });
      cleanups.push(() => storage.close());
      return storage;
    },
  };
}

export function testStorages(cleanups: Array<() => void>, prefix: string): TestStorage[] {
  return [
    memoryTestStorage(cleanups),
    memoryTestStorage(cleanups, false),
    {
      name: 'SqliteStorage',
      open: async () => {
        const dir = mkdtempSync(join(tmpdir(), prefix));
        cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
        const storage = new SqliteStorage(join(dir, 'data.sqlite'), { durability: 'relaxed' });
        cleanups.push(() => storage.close());
        return storage;
      },
    },
  ];
}
