/**
 * The database file opened with its lock held by this process (SqliteStorageOptions.processLock;
 * decision 015): through SQLite's `unix-excl` VFS, named by a file URI.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';

// URI filenames: better-sqlite3 reads SQLITE_USE_URI when it loads SQLite, at the process's first
// connection, so it is set as this module loads (sqlite-storage.ts imports it), before a host opens
// anything (the data folder's lock is a connection too). Only names that begin "file:" read
// differently.
process.env.SQLITE_USE_URI ??= '1';

/**
 * Opens `filename` through SQLite's unix-excl VFS (SqliteStorageOptions.processLock), named by a
 * file URI. Where SQLite cannot open it that way, the file is opened as it is, with shared locking:
 * URI filenames off in this process (a connection opened before this module asked for them), or a
 * platform without that VFS. `vfs` is for tests.
 */
export function openProcessLocked(filename: string, vfs = 'unix-excl'): { db: Database.Database; processLocked: boolean } {
  const uri = `${pathToFileURL(resolve(filename)).href}?vfs=${vfs}`;
  try {
    return { db: new Database(uri), processLocked: true };
  } catch (error) {
    // With URI filenames off the name is a relative path in a folder "file:", which is not there.
    const { code, message } = error as { code?: string; message?: string };
    if (code !== 'SQLITE_CANTOPEN' && !message?.startsWith('no such vfs')) throw error;
    return { db: new Database(filename), processLocked: false };
  }
}
