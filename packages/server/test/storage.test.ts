/**
 * Runs the storage port conformance suite against every adapter of this package, then checks the
 * durability pragmas only the SQLite adapter promises. Group commit and the failure path of a
 * group are in storage-group-commit.test.ts.
 *
 * The adapter is observed from outside only: its public better-sqlite3 handle (`db`) and a second
 * connection that sees what is really committed.
 */
import { existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../src/adapters/memory/memory-storage.js';
import { SqliteStorage, type SqliteStorageOptions } from '../src/adapters/sqlite/sqlite-storage.js';
import { describeStorageConformance, type StorageUnderTest } from './storage-conformance.js';
import { sqliteFiles } from './helpers/sqlite-files.js';

describeStorageConformance('MemoryStorage (sql.js)', async () => {
  const storage = await MemoryStorage.create();
  return { storage, cleanup: () => storage.close() };
});

function sqliteFactory(options: SqliteStorageOptions): () => Promise<StorageUnderTest> {
  return async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rivulet-storage-'));
    const file = join(dir, 'data.sqlite');
    const opened: SqliteStorage[] = [new SqliteStorage(file, options)];
    return {
      storage: opened[0]!,
      reopen: async () => {
        for (const s of opened) s.close();
        const next = new SqliteStorage(file, options);
        opened.push(next);
        return next;
      },
      cleanup: () => {
        for (const s of opened) s.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  };
}

describeStorageConformance('SqliteStorage durability=full', sqliteFactory({ durability: 'full' }));
describeStorageConformance('SqliteStorage durability=relaxed', sqliteFactory({ durability: 'relaxed' }));
describeStorageConformance('SqliteStorage groupCommit=false', sqliteFactory({ groupCommit: false }));
describeStorageConformance('SqliteStorage exclusive (as the Node host opens it)', sqliteFactory({ exclusive: true }));
describeStorageConformance(
  'SqliteStorage durability=relaxed groupCommit=false',
  sqliteFactory({ durability: 'relaxed', groupCommit: false }),
);

describe('SqliteStorage adapter specifics', () => {
  let dir: string;
  let file: string;
  const { open, storage, reader, rows } = sqliteFiles((fresh) => ({ dir, file } = fresh));

  describe('pragmas', () => {
    it('WAL with synchronous=NORMAL in both modes (full syncs the WAL itself after durable groups)', () => {
      const full = storage();
      expect(full.db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(full.db.pragma('synchronous', { simple: true })).toBe(1);
      full.close();
      const relaxed = storage({ durability: 'relaxed' });
      expect(relaxed.db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(relaxed.db.pragma('synchronous', { simple: true })).toBe(1);
    });

    it('exclusive: WAL with the index in memory (no -shm file); other connections are locked out until it closes', async () => {
      const s = storage({ exclusive: true });
      expect(s.db.pragma('locking_mode', { simple: true })).toBe('exclusive');
      expect(s.db.pragma('journal_mode', { simple: true })).toBe('wal');
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`);
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('a')`));
      await s.flush();
      expect(existsSync(`${file}-shm`)).toBe(false);
      const other = new Database(file, { readonly: true, timeout: 0 });
      open.push(other);
      expect(() => rows(other)).toThrow(/locked/);
      s.close();
      expect(rows(other)).toBe(1);
    });

    it('a connection refused while its pragmas are set is closed, not left to the garbage collector', () => {
      const s = storage({ exclusive: true });
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`);
      s.db.exec('BEGIN IMMEDIATE');
      // File handles of this process on the database's folder.
      const handles = () =>
        readdirSync('/proc/self/fd').filter((fd) => {
          try {
            return readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir);
          } catch {
            return false; // the listing's own handle, gone already
          }
        }).length;
      // The other connection's busy timeout (5 s) is spent first: the holder is exclusive.
      expect(() => new SqliteStorage(file, { exclusive: true })).toThrow(/locked/);
      s.db.exec('ROLLBACK');
      s.close();
      // SQLite closes a refused connection's file only once no connection of the process holds a
      // lock on it; a connection left open would keep it.
      expect(handles()).toBe(0);
    }, 20_000);

    it('full: a group with a durable write syncs the WAL once; a group of only non-durable writes does not', async () => {
      const s = storage();
      s.run(`CREATE TABLE t (v TEXT)`);
      const before = s.walSyncs;
      for (let i = 0; i < 5; i++) s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('d')`));
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('n')`), { durable: false });
      await s.flush();
      expect(s.walSyncs).toBe(before + 1);
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('n')`), { durable: false });
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('n')`), { durable: false });
      await s.flush();
      expect(s.walSyncs).toBe(before + 1);
      expect(s.exec<{ n: number }>(`SELECT count(*) AS n FROM t`)[0]!.n).toBe(8);
    });

    it('relaxed: never syncs the WAL before answering', async () => {
      const s = storage({ durability: 'relaxed' });
      s.run(`CREATE TABLE t (v TEXT)`);
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('d')`));
      await s.flush();
      expect(s.walSyncs).toBe(0);
    });

    describe('background WAL sync', () => {
      const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
      const commitOne = async (s: SqliteStorage, options?: { durable: boolean }) => {
        s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('x')`), options);
        await s.flush();
      };
      /** Commits until `done()` holds, at most 5 s (each background sync takes a thread-pool turn). */
      const commitUntil = async (s: SqliteStorage, done: () => boolean) => {
        const until = Date.now() + 5000;
        while (!done() && Date.now() < until) {
          await commitOne(s);
          await sleep(2);
        }
        return done();
      };
      const walHandles = () =>
        readdirSync('/proc/self/fd').filter((fd) => {
          try {
            // SQLite deletes the WAL when the last connection closes: "...-wal (deleted)" counts too.
            return readlinkSync(`/proc/self/fd/${fd}`).startsWith(`${file}-wal`);
          } catch {
            return false;
          }
        }).length;

      it('relaxed: the first commit starts one; none more within backgroundSyncMs', async () => {
        const s = storage({ durability: 'relaxed', backgroundSyncMs: 60_000 });
        s.run(`CREATE TABLE t (v TEXT)`);
        expect(s.backgroundSyncs).toBe(0);
        for (let i = 0; i < 5; i++) await commitOne(s);
        expect(s.backgroundSyncs).toBe(1);
        expect(s.walSyncs).toBe(0);
      });

      it('relaxed: another one starts once the interval has passed and the last one is done', async () => {
        const s = storage({ durability: 'relaxed', backgroundSyncMs: 1 });
        s.run(`CREATE TABLE t (v TEXT)`);
        expect(await commitUntil(s, () => s.backgroundSyncs >= 3)).toBe(true);
        expect(s.walSyncs).toBe(0);
      });

      it('backgroundSyncMs 0 turns them off', async () => {
        const s = storage({ durability: 'relaxed', backgroundSyncMs: 0 });
        s.run(`CREATE TABLE t (v TEXT)`);
        for (let i = 0; i < 5; i++) await commitOne(s);
        expect(s.backgroundSyncs).toBe(0);
      });

      it('full: a durable group syncs the WAL itself and starts none; a group of only non-durable writes starts one', async () => {
        const s = storage({ backgroundSyncMs: 1 });
        s.run(`CREATE TABLE t (v TEXT)`);
        const before = s.backgroundSyncs;
        for (let i = 0; i < 3; i++) await commitOne(s);
        expect(s.backgroundSyncs).toBe(before);
        await commitOne(s, { durable: false });
        expect(s.backgroundSyncs).toBe(before + 1);
      });

      it('close while one runs: the WAL descriptor is closed when it ends, and the data is intact', async () => {
        const s = storage({ durability: 'relaxed', backgroundSyncMs: 60_000 });
        s.run(`CREATE TABLE t (v TEXT)`);
        await commitOne(s);
        expect(s.backgroundSyncs).toBe(1);
        expect(walHandles()).toBe(2); // SQLite's and the adapter's own
        s.close(); // the callback of the sync that commit started cannot have run yet (no I/O turn since)
        const until = Date.now() + 5000;
        while (walHandles() > 0 && Date.now() < until) await sleep(5);
        expect(walHandles()).toBe(0);
        const other = reader();
        expect(rows(other)).toBe(1);
      });
    });
  });

});
