/**
 * Whole-file copies of a data folder's database that are never seen half-written: the copy is
 * made under `FILE.partial`, synced, and renamed to FILE (then the folder is synced), so FILE
 * either does not exist or is complete. Used before an upgrade (upgrade.ts) and by restore.
 */
import { closeSync, fsyncSync, openSync, renameSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';

/** fsync of a file or folder by path. */
export function syncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Runs `write(partial)`, syncs what it wrote and renames it to `file`; on failure no file is left. */
export function writeAtomically(file: string, write: (partial: string) => void): void {
  const partial = `${file}.partial`;
  rmSync(partial, { force: true });
  try {
    write(partial);
    syncPath(partial);
    renameSync(partial, file);
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  }
  syncPath(dirname(file));
}

/**
 * A consistent copy of the open database (SQLite `VACUUM INTO`: a transaction-consistent snapshot
 * through this connection, compacted, with no WAL of its own), atomically at `file`. It runs on
 * the calling thread; for a running server's backups see backup.ts.
 */
export function snapshotInto(db: Database.Database, file: string): void {
  writeAtomically(file, (partial) => {
    db.prepare('VACUUM INTO ?').run(partial);
  });
}
