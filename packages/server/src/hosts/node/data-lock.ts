/**
 * One server per data folder: the engine keeps per-stream state in memory, so a second process on
 * the same files would answer from stale caches (protocol §16.3).
 *
 * The lock is a lock the kernel holds for us, not a file that names an owner: `rivulet.lock` is a
 * small SQLite file whose connection takes an exclusive lock and, in SQLite's exclusive locking
 * mode, keeps it until the connection closes. The kernel drops the lock when the holder exits for
 * any reason (kill -9, a crash, a reboot), so nothing stale can outlive its owner, and no pid is
 * trusted (a pid can belong to another process after a restart). SQLite also keeps its own table of
 * the locks held inside one process, so a second server in the same process is refused as well.
 * A holder that is exiting is waited for briefly (the busy timeout) before the folder is called in use.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';

/** The database of a data folder (beside its lock and its webhook secret). */
export const DATABASE_FILE = 'rivulet.db';
/** The lock of a data folder. */
export const LOCK_FILE = 'rivulet.lock';
/** How long a start waits for a server that is still exiting to let go of the folder. */
export const LOCK_WAIT_MS = 2_000;

/** Thrown when another live server holds the folder. */
export class DataFolderInUse extends Error {
  constructor(readonly dir: string) {
    super(`another Rivulet server is using the data folder ${dir} (it holds ${join(dir, LOCK_FILE)}); stop it first or choose another --data folder`);
    this.name = 'DataFolderInUse';
  }
}

/**
 * The connections that hold a lock, kept here until they let go: a connection nothing refers to is
 * closed when the garbage collector finalises it, and closing it lets go of the lock, so a holder
 * that dropped the returned function (or whose only reference a collection could reach) would
 * silently hand its folder to another server.
 */
const held = new Set<Database.Database>();

/** Locks `dir` for this process; the returned function lets go. Throws DataFolderInUse when held. */
export function lockDataFolder(dir: string, waitMs: number = LOCK_WAIT_MS): () => void {
  const db = new Database(join(dir, LOCK_FILE), { timeout: waitMs });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    // BEGIN EXCLUSIVE takes the file's exclusive lock; exclusive locking mode keeps it after COMMIT.
    db.exec('BEGIN EXCLUSIVE; COMMIT');
  } catch (error) {
    db.close();
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY') throw new DataFolderInUse(dir);
    throw error;
  }
  held.add(db);
  return () => {
    if (!held.delete(db)) return;
    db.close();
  };
}
