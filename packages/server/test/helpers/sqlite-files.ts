/**
 * A fresh SQLite data file per test for the SQLite adapter's own tests (storage*.test.ts): the
 * adapter opened on it, a second read-only connection that sees only what is committed, and a
 * count of the rows of table t. Everything opened is closed (a storage fully: its checkpointer's
 * connection too), and the folder removed, after each test.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach } from 'vitest';
import { SqliteStorage, type SqliteStorageOptions } from '../../src/adapters/sqlite/sqlite-storage.js';

/**
 * Registers the hooks in the calling describe (or file); `onFresh` learns each test's folder and
 * file; `prefix` names the folders.
 */
export function sqliteFiles(onFresh: (fresh: { dir: string; file: string }) => void = () => undefined, prefix = 'rivulet-sqlite-') {
  let dir: string;
  let file: string;
  const open: Array<{ close(): unknown; closeFully?(): Promise<void> }> = [];

  function storage(options: SqliteStorageOptions = {}): SqliteStorage {
    const s = new SqliteStorage(file, options);
    open.push(s);
    return s;
  }

  /** A second connection to the same file: it sees only what is committed. */
  function reader(): Database.Database {
    const db = new Database(file, { readonly: true });
    open.push(db);
    return db;
  }

  const rows = (db: Database.Database): number => (db.prepare(`SELECT count(*) AS n FROM t`).get() as { n: number }).n;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
    file = join(dir, 'data.sqlite');
    onFresh({ dir, file });
  });

  afterEach(async () => {
    for (const handle of open.splice(0).reverse()) await (handle.closeFully ? handle.closeFully() : handle.close());
    rmSync(dir, { recursive: true, force: true });
  });

  return { open, storage, reader, rows };
}
