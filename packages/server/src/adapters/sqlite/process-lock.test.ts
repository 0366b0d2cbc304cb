/**
 * The file lock held by the process (SqliteStorageOptions.processLock, SQLite's unix-excl VFS):
 * another program can neither read nor write the database while the storage is open, the
 * checkpointer's connection in the same process can, and so can a plain connection of this
 * process. Without it (shared locking) another program can open the file.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../../test/helpers/subscriptions.js';
import { sqliteFiles } from '../../../test/helpers/sqlite-files.js';
import type { SqliteStorage } from './sqlite-storage.js';
import { openProcessLocked } from './process-lock.js';

let file: string;
// A folder name that a URI must escape.
const files = sqliteFiles((fresh) => (file = fresh.file), 'rivulet process lock #1 ?% ');

function open(options: ConstructorParameters<typeof SqliteStorage>[1]): SqliteStorage {
  const s = files.storage({ durability: 'relaxed', ...options });
  s.exec('CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body TEXT)');
  s.transaction(() => s.run(`INSERT INTO t (body) VALUES ('first')`));
  return s;
}

/** What another process gets when it runs `sql` on the file: the rows' count or the error. */
function fromAnotherProcess(sql: string, readonly: boolean): string {
  const script = `
    const Database = require('better-sqlite3');
    try {
      const db = new Database(process.argv[1], { readonly: ${readonly}, fileMustExist: true });
      db.pragma('busy_timeout = 100');
      const rows = db.prepare(process.argv[2]).${readonly ? 'all()' : 'run()'};
      console.log('ok ' + JSON.stringify(rows));
    } catch (error) {
      console.log('error ' + error.message);
    }`;
  return execFileSync(process.execPath, ['-e', script, file, sql], { encoding: 'utf8', cwd: __dirname }).trim();
}

describe('a storage with processLock', () => {
  it('keeps every other program out of the file, reading or writing', async () => {
    const s = open({ processLock: true });
    await s.flush();
    expect(s.processLocked).toBe(true);
    expect(fromAnotherProcess('SELECT count(*) AS n FROM t', true)).toBe('error database is locked');
    expect(fromAnotherProcess(`INSERT INTO t (body) VALUES ('intruder')`, false)).toBe('error database is locked');
    expect(s.exec<{ body: string }>('SELECT body FROM t')).toEqual([{ body: 'first' }]);
    // No shared-memory file: the WAL index lives in this process's memory.
    expect(existsSync(`${file}-shm`)).toBe(false);
  });

  it("shares the file with this process's other connections: the checkpointer's, a plain one", async () => {
    const s = open({ processLock: true, backgroundCheckpoints: { intervalMs: 1, restartFrames: 5, catchUpFrames: 100_000 } });
    for (let i = 0; i < 30; i++) {
      s.transaction(() => s.run('INSERT INTO t (body) VALUES (?)', 'x'.repeat(3000)));
      await s.flush();
    }
    await eventually(() => s.checkpointer!.catchUps > 0, 'a checkpoint of the worker and a catch-up');
    expect(s.checkpointer!.failure).toBeNull();
    const plain = new Database(file, { readonly: true });
    try {
      expect(plain.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 31 });
    } finally {
      plain.close();
    }
    await s.closeFully();
    // The last connection folded the WAL into the file, and the lock went with it.
    expect(existsSync(`${file}-wal`)).toBe(false);
    expect(fromAnotherProcess('SELECT count(*) AS n FROM t', true)).toBe('ok [{"n":31}]');
  });
});

describe('a storage with shared locking (no processLock)', () => {
  it('lets another program read the file while it is open', async () => {
    const s = open({});
    await s.flush();
    expect(s.processLocked).toBe(false);
    expect(fromAnotherProcess('SELECT count(*) AS n FROM t', true)).toBe('ok [{"n":1}]');
  });
});

describe('openProcessLocked', () => {
  it('opens the file as it is, with shared locking, on a platform without the VFS', () => {
    const { db, processLocked } = openProcessLocked(file, 'no-such-vfs');
    try {
      expect(processLocked).toBe(false);
      db.exec('CREATE TABLE u (x)');
      expect(fromAnotherProcess('SELECT count(*) AS n FROM u', true)).toBe('ok [{"n":0}]');
    } finally {
      db.close();
    }
  });
});
