/** The SQLite adapter's options (sqlite-storage.ts). */
import type { CommitObserver } from '../../ports/storage.js';
import type { CheckpointerOptions } from './checkpointer.js';
import type { WalSyncFunctions } from './wal-file.js';

export type Durability = 'full' | 'relaxed';

export interface SqliteStorageOptions {
  durability?: Durability;
  /** Group concurrent transactions into one commit (default true). */
  groupCommit?: boolean;
  /**
   * Hold the file's locks for the connection's lifetime (`locking_mode=EXCLUSIVE`, set before WAL
   * is entered, so the WAL index lives in this process's memory): no lock calls and no
   * shared-memory index per transaction (shared locking makes six `fcntl` calls on `-shm` per
   * write transaction, about 16 µs per commit of 8 appends here: docs/performance.md "File locks
   * held for the process's lifetime"). Only for a sole connection (`rivulet compact` on a
   * stopped server's folder): no other connection can open the file meanwhile, even in this
   * process, so not with `backgroundCheckpoints` (the Node host takes `processLock` for both).
   * Default false. Durability is unchanged: the WAL on disk is the same, and a crashed owner's
   * locks go with it.
   */
  exclusive?: boolean;
  /**
   * Open the file through SQLite's `unix-excl` VFS (decision 015): this process takes the file's
   * lock at its first access and holds it until its last connection to the file closes, so no other
   * process can open the file ("database is locked") and no lock call is made per transaction,
   * while other connections of this process (the checkpointer's) share the file and its WAL index,
   * kept in this process's memory. The file is named by a URI, which SQLite reads only where URI
   * filenames are on: process-lock.ts turns them on for the process as this adapter loads
   * (`SQLITE_USE_URI`, which better-sqlite3 reads when it loads SQLite, at the process's first
   * connection). Where a connection opened before that, or the variable says "0", they stay off
   * and the file is opened with shared locking instead (`SqliteStorage.processLocked` says which).
   * Ignored for `:memory:`. Default false.
   */
  processLock?: boolean;
  /**
   * Least time between two background syncs of the WAL after commits that do not sync it (see the
   * header); 0 turns them off. Default 10 ms. Ignored for `:memory:`.
   */
  backgroundSyncMs?: number;
  /**
   * Checkpoint the WAL on a worker thread's connection instead of inside the committing call
   * (checkpointer.ts; docs/architecture.md "Checkpoints in the background"): `true` or the
   * checkpointer's options. Needs a file database opened without `exclusive` (a second connection
   * must open the file; `processLock` lets it). Default false.
   */
  backgroundCheckpoints?: boolean | CheckpointerOptions;
  /** Told the size and duration of every commit (ports/storage.ts); a throw is ignored. */
  onCommit?: CommitObserver;
  /** How the WAL is synced (default node:fs); tests inject slow and failing syncs. */
  walSync?: WalSyncFunctions;
  /** Milliseconds, monotonic, for the commit reports (default performance.now). */
  now?: () => number;
}
