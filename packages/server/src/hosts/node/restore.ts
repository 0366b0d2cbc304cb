/**
 * Checking a backup file and restoring a data folder from it (`rivulet backup`, `rivulet restore`,
 * protocol §16.10). A file is a usable backup when it starts with SQLite's header, passes SQLite's
 * `integrity_check`, and records a storage format this server reads or upgrades. A restore takes
 * the folder's lock (no server may run on it), refuses to replace a database unless forced, and
 * writes the new `rivulet.db` atomically (a `.partial` copy, synced, renamed), after removing the
 * old database's WAL, which would otherwise be replayed onto the restored file.
 */
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { RivuletError } from '@rivulet/contract';
import { OLDEST_UPGRADABLE_FORMAT } from '../../engine/migrations.js';
import { FORMAT_VERSION } from '../../engine/schema.js';
import { DATABASE_FILE, DataFolderInUse, lockDataFolder } from './data-lock.js';
import { writeAtomically } from './snapshot-file.js';

export interface BackupFileReport {
  bytes: number;
  /** The storage format the file records. */
  format: number;
}

const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

function header(file: string): Buffer {
  const fd = openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(SQLITE_HEADER.length);
    const read = readSync(fd, buffer, 0, buffer.length, 0);
    return buffer.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

/** Checks that `file` is a whole Rivulet database this server can open; answers its size and format. */
export function checkBackupFile(file: string): BackupFileReport {
  if (!existsSync(file) || !statSync(file).isFile()) throw new RivuletError('NOT_FOUND', `no backup file ${file}`);
  const bytes = statSync(file).size;
  if (!header(file).equals(SQLITE_HEADER)) throw new RivuletError('INVALID_INPUT', `${file} is not a Rivulet backup: it is not a SQLite database`);
  // Opening a database in WAL mode makes its -wal and -shm files; those this check made, it removes.
  const sideFiles = ['-wal', '-shm'].map((suffix) => `${file}${suffix}`).filter((side) => !existsSync(side));
  let db: Database.Database | undefined;
  let format: number;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    const problems = (db.pragma('integrity_check') as Array<{ integrity_check: string }>).map((r) => r.integrity_check);
    if (problems.join() !== 'ok') {
      throw new RivuletError('INVALID_INPUT', `${file} is damaged: SQLite's integrity check reports ${problems.slice(0, 3).join('; ')}`);
    }
    const hasMeta = db.prepare(`SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'meta'`).get() as { n: number };
    const row = hasMeta.n ? (db.prepare(`SELECT value FROM meta WHERE key = 'format'`).get() as { value: string } | undefined) : undefined;
    if (!row) throw new RivuletError('INVALID_INPUT', `${file} is not a Rivulet backup: it records no storage format`);
    format = Number(row.value);
  } catch (error) {
    if (error instanceof RivuletError) throw error;
    const code = String((error as { code?: unknown }).code ?? '');
    if (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB') {
      throw new RivuletError('INVALID_INPUT', `${file} is damaged: ${error instanceof Error ? error.message : String(error)}`);
    }
    throw new RivuletError('INVALID_INPUT', `${file} is not a usable Rivulet backup: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    db?.close();
    // A read-only connection writes nothing into them: they hold no data.
    for (const side of sideFiles) rmSync(side, { force: true });
  }
  if (!(format >= OLDEST_UPGRADABLE_FORMAT && format <= FORMAT_VERSION)) {
    throw new RivuletError(
      'INVALID_INPUT',
      `${file} holds storage format ${format}; this server reads format ${FORMAT_VERSION} and upgrades only formats ${OLDEST_UPGRADABLE_FORMAT} and later`,
    );
  }
  return { bytes, format };
}

export interface RestoreOptions {
  from: string;
  data: string;
  /** Replace a database the folder already holds. */
  force?: boolean;
}

/** Makes `data` a data folder holding the backup `from`; the server must not be running on it. */
export function restoreDataFolder(options: RestoreOptions): BackupFileReport {
  const from = resolve(options.from);
  const dir = resolve(options.data);
  const report = checkBackupFile(from);
  mkdirSync(dir, { recursive: true });
  let unlock: () => void;
  try {
    unlock = lockDataFolder(dir);
  } catch (error) {
    if (!(error instanceof DataFolderInUse)) throw error;
    throw new RivuletError('PRECONDITION_FAILED', `cannot restore into ${dir}: a Rivulet server is running on it; stop that server first`);
  }
  try {
    const target = join(dir, DATABASE_FILE);
    if (existsSync(target) && !options.force) {
      throw new RivuletError('CONFLICT', `${dir} already holds a database (${DATABASE_FILE}); pass --force to replace it`);
    }
    writeAtomically(target, (partial) => {
      copyFileSync(from, partial);
      // The replaced database's WAL and shared-memory index belong to it, not to the copy.
      for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${target}${suffix}`, { force: true });
    });
    return report;
  } finally {
    unlock();
  }
}
