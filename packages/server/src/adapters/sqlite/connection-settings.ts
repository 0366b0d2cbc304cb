/**
 * The settings the SQLite adapter gives its connection when it opens it (sqlite-storage.ts): the
 * journal mode and how hard SQLite syncs, and the measured choices that make commits cheaper.
 */
import type Database from 'better-sqlite3';

/** The WAL frames after which SQLite checkpoints inside a commit (and after a checkpoint worker failed, checkpointer.ts). */
export const INLINE_CHECKPOINT_FRAMES = 4000;

/**
 * `exclusive`: hold the file's locks for the connection's lifetime, set before WAL is entered so
 * that the WAL index lives in this process's memory (SqliteStorageOptions.exclusive). `wal`: a file
 * database in WAL mode; `:memory:` keeps its own journal.
 */
export function tuneConnection(db: Database.Database, { exclusive, wal }: { exclusive: boolean; wal: boolean }): void {
  if (exclusive) db.pragma('locking_mode = EXCLUSIVE');
  if (wal) db.pragma('journal_mode = WAL');
  // In WAL mode a commit writes the WAL without syncing it; durable groups are synced by
  // durable-sync.ts off the event loop (decision 010).
  db.pragma(`synchronous = ${wal ? 'NORMAL' : 'FULL'}`);
  db.pragma('busy_timeout = 5000');
  // Fewer WAL checkpoints than SQLite's default of every 1000 pages: each one stops the event loop
  // while it copies pages and syncs (docs/performance.md "WAL checkpoints" weighs 4000 against 16000).
  // A storage with background checkpoints turns these off (checkpointer.ts).
  db.pragma(`wal_autocheckpoint = ${INLINE_CHECKPOINT_FRAMES}`);
  db.pragma('foreign_keys = OFF');
  // A savepoint's copies of the pages it changes (the statement journal) stay in memory: in a
  // temporary file they cost two writes per page (docs/performance.md "Savepoint journals in memory").
  db.pragma('temp_store = MEMORY');
}
