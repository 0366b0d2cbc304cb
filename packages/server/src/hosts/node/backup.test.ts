/**
 * Online backups of the SQLite adapter and the Node host's Backups (backup.ts, protocol §15.5):
 * a backup gets through while a writer opens a transaction in every event-loop turn (a step that
 * meets an open transaction copies nothing), holds everything committed before it began, leaves no
 * file in the data folder, runs one at a time, and a crashed one's leftovers go at the next start.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { RivuletError } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStorage } from '../../adapters/sqlite/sqlite-storage.js';
import { Backups, removeBackupLeftovers } from './backup.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function folder(): { dir: string; storage: SqliteStorage } {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-backup-unit-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const storage = new SqliteStorage(join(dir, 'rivulet.db'), { durability: 'relaxed', exclusive: true });
  cleanups.push(() => storage.close());
  storage.transaction(() => {
    storage.run('CREATE TABLE t (n INTEGER, pad TEXT)');
    storage.run('CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
    storage.run(`INSERT INTO meta VALUES ('format', '3')`);
    // About 2 MB: several steps of 64 pages.
    for (let n = 0; n < 2000; n++) storage.run('INSERT INTO t VALUES (?, ?)', n, 'x'.repeat(1000));
  });
  return { dir, storage };
}

async function bytesOf(body: ReadableStream<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe('online backup', () => {
  it('gets through while a transaction opens in every turn, and holds what was committed before it began', async () => {
    const { dir, storage } = folder();
    await storage.flush();
    let stop = false;
    let written = 0;
    const write = () => {
      if (stop) return;
      storage.transaction(() => storage.run('INSERT INTO t VALUES (?, ?)', -1, 'w'));
      written++;
      setImmediate(write);
    };
    write();
    const backups = new Backups(storage, dir, 3, { pagesPerStep: 64 });
    const snapshot = await backups.snapshot();
    const during = written;
    stop = true;
    const file = join(dir, 'copy.db');
    const bytes = await bytesOf(snapshot.body);
    expect(bytes.length).toBe(snapshot.bytes);
    writeFileSync(file, bytes);
    const copy = new Database(file, { readonly: true });
    try {
      expect(copy.pragma('integrity_check')).toEqual([{ integrity_check: 'ok' }]);
      expect(copy.prepare('SELECT count(*) AS n FROM t WHERE n >= 0').get()).toEqual({ n: 2000 });
      expect(copy.pragma('journal_mode')).toEqual([{ journal_mode: 'delete' }]);
    } finally {
      copy.close();
    }
    // The writer kept going in the meantime (more turns than steps).
    expect(during).toBeGreaterThan(10);
    // Nothing of the snapshot stays in the data folder.
    expect(readdirSync(dir).filter((name) => name.includes('backup'))).toEqual([]);
  });

  it('runs one at a time: a second one while the first runs is CONFLICT', async () => {
    const { dir, storage } = folder();
    const backups = new Backups(storage, dir, 3);
    const first = backups.snapshot();
    const second = backups.snapshot();
    await expect(second).rejects.toThrow(new RivuletError('CONFLICT', 'a backup is already running on this server; wait for it to finish'));
    await bytesOf((await first).body);
    // After it, another may run.
    await bytesOf((await backups.snapshot()).body);
  });

  it('a closed storage fails the backup as UNAVAILABLE with nothing left behind', async () => {
    const { dir, storage } = folder();
    storage.close();
    await expect(new Backups(storage, dir, 3).snapshot()).rejects.toThrow(new RivuletError('UNAVAILABLE', 'the backup failed: storage is closed'));
    expect(readdirSync(dir).filter((name) => name.includes('backup'))).toEqual([]);
  });

  it('removes leftovers of a crashed backup, and nothing else', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rivulet-backup-left-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    for (const name of ['rivulet.db', 'rivulet.db.123-1.backup-tmp', 'rivulet.db.before-upgrade-v2', 'other.backup-tmp']) writeFileSync(join(dir, name), '');
    removeBackupLeftovers(dir);
    expect(readdirSync(dir).sort()).toEqual(['other.backup-tmp', 'rivulet.db', 'rivulet.db.before-upgrade-v2']);
  });
});
