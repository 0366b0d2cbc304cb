/**
 * `rivulet compact`: gives the disk space of destroyed streams back to the system. SQLite reuses
 * freed pages but never shrinks its file by itself, so a data folder keeps the size of its largest
 * day. With no server running on the folder (its lock is taken, as `rivulet serve` takes it), this
 * finishes the deferred erasure of destroyed lifetimes (hosts/node/purge.ts), folds the WAL into
 * the database, and rewrites the file with VACUUM, which needs free disk space of about the
 * database's size while it runs.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { RivuletError } from '@rivulet/contract';
import { SqliteStorage } from '../../adapters/sqlite/sqlite-storage.js';
import { openSchema } from '../../engine/schema.js';
import { StreamStore } from '../../engine/stream-store.js';
import { DATABASE_FILE as DB_FILE, DataFolderInUse, lockDataFolder } from './data-lock.js';
import { PURGE_CHUNK_ROWS } from './purge.js';
import { backupBeforeUpgrade } from './upgrade.js';

export interface CompactReport {
  /** Bytes of the database and its WAL before and after. */
  bytesBefore: number;
  bytesAfter: number;
  /** Event rows of destroyed lifetimes deleted first (their erasure was still pending). */
  purgedRows: number;
}

export interface CompactOptions {
  /** Told of progress (a line each), for long runs. */
  progress?: (line: string) => void;
}

function bytesOf(dir: string): number {
  let total = 0;
  for (const name of [DB_FILE, `${DB_FILE}-wal`]) {
    const file = join(dir, name);
    if (existsSync(file)) total += statSync(file).size;
  }
  return total;
}

/** The database, opened alone, with its format checked. */
function openStorage(dir: string, progress?: (line: string) => void): SqliteStorage {
  let storage: SqliteStorage | undefined;
  try {
    storage = new SqliteStorage(join(dir, DB_FILE), { durability: 'full', exclusive: true, groupCommit: false });
    // An older format is upgraded first, as `serve` does it (protocol §16.4).
    openSchema(storage, { beforeUpgrade: backupBeforeUpgrade(storage, dir, { error: () => undefined, warn: (line) => progress?.(line) }) });
    return storage;
  } catch (error) {
    storage?.close();
    // Another program holds the database itself (a server without our lock file, a sqlite3 shell).
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY') {
      throw new RivuletError('PRECONDITION_FAILED', `cannot compact while the folder is in use: another process has ${join(dir, DB_FILE)} open`);
    }
    throw error;
  }
}

export function compactDataFolder(dir: string, options: CompactOptions = {}): CompactReport {
  if (!existsSync(join(dir, DB_FILE))) {
    throw new RivuletError('NOT_FOUND', `no Rivulet data in ${dir} (no ${DB_FILE}): nothing to compact`);
  }
  let unlock: () => void;
  try {
    unlock = lockDataFolder(dir);
  } catch (error) {
    if (!(error instanceof DataFolderInUse)) throw error;
    throw new RivuletError('PRECONDITION_FAILED', `cannot compact while the folder is in use: another Rivulet server is using the data folder ${dir}; stop that server first`);
  }
  try {
    const bytesBefore = bytesOf(dir);
    let purgedRows = 0;
    const storage = openStorage(dir, options.progress);
    try {
      const store = new StreamStore(storage);
      purgedRows = store.erasedEventCount();
      if (purgedRows > 0) options.progress?.(`erasing ${purgedRows} event(s) of destroyed streams`);
      while (store.purgeErased(PURGE_CHUNK_ROWS)) {
        // One chunk per transaction, as the running server does it.
      }
      options.progress?.('rewriting the database file');
      storage.db.exec('VACUUM');
      storage.db.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      storage.close();
    }
    return { bytesBefore, bytesAfter: bytesOf(dir), purgedRows };
  } finally {
    unlock();
  }
}
