/**
 * better-sqlite3 adapter of the storage port, with group commit.
 *
 * Every `transaction()` in one event-loop turn joins one SQLite transaction (each after the first
 * inside its own savepoint, so a failing one rolls back alone); the group commits in a
 * `setImmediate` callback. Callers answer only after `flush()`, so an acknowledged write is durable
 * and concurrent writers to many streams share one fsync (decision 001).
 *
 * Durability: `full` survives power loss: a group holding any durable write is on disk before its
 * promise resolves; `relaxed` survives a process crash and may lose the last commits on power loss.
 * The connection runs WAL with synchronous=NORMAL in both modes; in `full` mode a durable group is
 * made durable by an fdatasync of the WAL (what synchronous=FULL does at every commit, which SQLite
 * cannot switch inside a transaction) run on libuv's thread pool by durable-sync.ts, one at a
 * time, each covering every group committed before it started (decision 010). A failed sync stops
 * the storage for good: every later call throws `failure`. Groups of only `{durable: false}`
 * writes (delivery progress) need no sync.
 *
 * The first transaction of a group runs without a savepoint: the SQLite transaction holds nothing
 * else yet, so rolling all of it back undoes exactly that transaction, and the next one of the turn
 * begins a new one. A lone request (one client, sequential) thus runs BEGIN, its statements and
 * COMMIT, like a plain transaction, and pays the savepoint pair only when it shares a group.
 *
 * Background WAL flush: a commit that does not sync the WAL leaves its frames dirty in the page
 * cache, and SQLite's checkpoint (every `wal_autocheckpoint` frames, inside the committing call)
 * begins by syncing the whole WAL, on the event loop: with 4000 frames that was ~16 MB written out
 * in one ~16 ms stall, the p99 of relaxed appends under load. So after such a commit, at most every
 * `backgroundSyncMs`, the WAL is fdatasync'd on libuv's thread pool; the checkpoint then finds
 * little left to write (stalls ~5 ms; docs/architecture.md "Background WAL sync", the figures in
 * docs/performance.md "WAL checkpoints"). Durability is unchanged: this only writes out earlier
 * what SQLite syncs anyway; a failed background sync is ignored, SQLite's own syncs report.
 */
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { RivuletError } from '@rivulet/contract';
import Database from 'better-sqlite3';
import type { CommitObserver, SqlStorage, SqlValue, TransactionOptions } from '../../ports/storage.js';
import { BackgroundCheckpointer } from './checkpointer.js';
import { DurableSync, type PendingGroup } from './durable-sync.js';
import { tuneConnection } from './connection-settings.js';
import { deferred, type Deferred } from './deferred.js';
import type { SqliteStorageOptions } from './storage-options.js';
import { openProcessLocked } from './process-lock.js';
import { WalFile } from './wal-file.js';

export type { Durability, SqliteStorageOptions } from './storage-options.js';

/** A committed group on its way to durable (durable-sync.ts), with what its report needs. */
interface CommittedGroup extends PendingGroup {
  readonly transactions: number;
  /** When its COMMIT began (ms). */
  readonly started: number;
}

export class SqliteStorage implements SqlStorage {
  readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();
  /** Statements answering rows as arrays (better-sqlite3's raw mode), for execRows. */
  private readonly rowStatements = new Map<string, Database.Statement>();
  private readonly groupCommit: boolean;
  private depth = 0;
  /** Inside an unguarded (singleWrite) transaction: its writes so far; -1 outside one. */
  private unguardedWrites = -1;
  private group: Deferred | null = null;
  private groupDurable = false;
  /** Transactions in the open group. */
  private groupSize = 0;
  private readonly onCommit: CommitObserver | undefined;
  private readonly syncWal: boolean;
  private readonly wal: WalFile;
  private readonly durableSync: DurableSync<CommittedGroup>;
  /** The promise of the last group that committed: it settles after every earlier one. */
  private lastCommitted: Promise<void> | null = null;
  /** Set for good by a failed sync of the WAL: every later call is refused with it. */
  private failureError: RivuletError | null = null;
  private readonly now: () => number;
  /** WAL syncs done (observable by tests and diagnostics). */
  walSyncs = 0;
  private readonly backgroundSyncMs: number;
  private closed = false;
  /** A backup's first step is due (see backup()): groups commit at the end of their task. */
  private backupStarting = false;
  private backupRunning = false;
  epoch = 0;
  /** Connection-scoped objects cost the WAL nothing (engine/event-index.ts). */
  readonly tempObjects = true;
  /** Runs the WAL's checkpoints off the event loop, when asked for (options.backgroundCheckpoints). */
  readonly checkpointer: BackgroundCheckpointer | null = null;

  /** Whether this process holds the file's lock for as long as it has it open (options.processLock). */
  readonly processLocked: boolean = false;

  constructor(filename: string, options: SqliteStorageOptions = {}) {
    const wal = filename !== ':memory:';
    if (wal && options.processLock === true) {
      const opened = openProcessLocked(filename);
      this.db = opened.db;
      this.processLocked = opened.processLocked;
    } else {
      this.db = new Database(filename);
    }
    this.groupCommit = options.groupCommit ?? true;
    this.syncWal = wal && options.durability !== 'relaxed';
    this.backgroundSyncMs = wal ? (options.backgroundSyncMs ?? 10) : 0;
    this.onCommit = options.onCommit;
    this.wal = new WalFile(`${filename}-wal`, options.walSync);
    this.now = options.now ?? (() => performance.now());
    this.durableSync = new DurableSync<CommittedGroup>({
      start: (done) => this.wal.sync(done),
      syncNow: () => void this.wal.syncNow(),
      now: this.now,
      synced: (groups, seconds) => {
        this.walSyncs++;
        if (!this.onCommit) return;
        const at = this.now();
        // One report per group, when it became durable; the sync's own time once, on the first.
        groups.forEach((g, i) => this.report(g.transactions, (at - g.started) / 1000, i === 0 ? seconds : null));
      },
      failed: (error) => this.failed(error),
    });
    const background = options.backgroundCheckpoints;
    if (background && (!wal || options.exclusive === true)) {
      this.db.close();
      throw new Error('storage: background checkpoints need a file database opened without exclusive locking');
    }
    try {
      tuneConnection(this.db, { exclusive: options.exclusive === true, wal });
    } catch (error) {
      // Refused (another program holds the file, say): the caller gets no storage to close.
      this.db.close();
      throw error;
    }
    // The worker's connection opens the file by the same name (through the same VFS).
    if (background) this.checkpointer = new BackgroundCheckpointer(this.db.name, this.db, background === true ? {} : background);
  }

  private statement(sql: string): Database.Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  exec<R extends object>(sql: string, ...params: SqlValue[]): R[] {
    if (this.failureError) throw this.failureError;
    const stmt = this.statement(sql);
    if (stmt.reader) return stmt.all(...params) as R[];
    if (this.unguardedWrites >= 0) this.guardWrite();
    stmt.run(...params);
    if (this.unguardedWrites >= 0) this.unguardedWrites++;
    return [];
  }

  execRows(sql: string, ...params: SqlValue[]): SqlValue[][] {
    if (this.failureError) throw this.failureError;
    let stmt = this.rowStatements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      if (!stmt.reader) throw new Error('storage: execRows is for statements that return rows');
      stmt.raw(true);
      this.rowStatements.set(sql, stmt);
    }
    return stmt.all(...params) as SqlValue[][];
  }

  run(sql: string, ...params: SqlValue[]): number {
    if (this.failureError) throw this.failureError;
    if (this.unguardedWrites >= 0) this.guardWrite();
    const changes = this.statement(sql).run(...params).changes;
    if (this.unguardedWrites >= 0) this.unguardedWrites++;
    return changes;
  }

  transaction<T>(fn: () => T, options?: TransactionOptions): T {
    if (this.closed) throw new Error('storage is closed');
    if (this.failureError) throw this.failureError;
    if (this.depth === 0) {
      if (!this.group) this.openGroup();
      this.groupSize++;
    }
    // Alone in the SQLite transaction (see the header): no savepoint needed.
    const alone = this.depth === 0 && !this.db.inTransaction;
    if (alone) this.statement('BEGIN').run();
    // One writing statement undoes itself: a member of a group that runs only one needs no
    // savepoint either (TransactionOptions.singleWrite); run() refuses a second write.
    const unguarded = !alone && this.depth === 0 && options?.singleWrite === true;
    if (unguarded) this.unguardedWrites = 0;
    if (options?.durable !== false) this.groupDurable = true;
    this.depth++;
    if (!alone && !unguarded) this.statement('SAVEPOINT tx').run();
    let failed = false;
    try {
      const result = fn();
      if (!alone && !unguarded) this.statement('RELEASE tx').run();
      return result;
    } catch (error) {
      failed = true;
      if (alone) {
        // Everything in the SQLite transaction is this one's: undo it all; the group lives on.
        if (this.db.inTransaction) this.statement('ROLLBACK').run();
      } else if (unguarded && this.db.inTransaction && this.unguardedWrites === 0) {
        // Its only write failed and undid itself: nothing of it is left; the group lives on.
      } else if (this.db.inTransaction && !unguarded) {
        this.statement('ROLLBACK TO tx').run();
        this.statement('RELEASE tx').run();
      } else {
        // The statement rolled back the whole SQLite transaction (INSERT OR ROLLBACK, some I/O
        // errors), or an unguarded transaction failed after a write it cannot undo alone: the
        // group fails as a whole.
        if (this.db.inTransaction) this.statement('ROLLBACK').run();
        this.failGroup(error);
      }
      throw error;
    } finally {
      this.depth--;
      if (unguarded) this.unguardedWrites = -1;
      if (this.depth === 0 && !this.groupCommit) {
        const error = this.commitGroup();
        // Without group commit the caller must learn of a failed commit here, not from flush().
        if (error !== undefined && !failed) throw error;
      }
    }
  }

  /** Counts the writes of an unguarded transaction; refuses a second one. */
  private guardWrite(): void {
    if (this.unguardedWrites > 0) throw new Error('storage: a transaction declared singleWrite ran a second writing statement');
  }

  private failGroup(error: unknown): void {
    const group = this.group;
    this.group = null;
    this.groupDurable = false;
    this.groupSize = 0;
    this.epoch++;
    group?.reject(error);
  }

  private openGroup(): void {
    this.group = deferred();
    if (!this.groupCommit) return;
    if (this.backupStarting) queueMicrotask(() => this.commitGroup());
    else setImmediate(() => this.commitGroup());
  }

  /**
   * Copies the whole database into `file` with SQLite's online backup API (better-sqlite3's
   * `db.backup`), `pagesPerStep` pages per step, one step per event-loop turn, while transactions
   * go on through this connection (their changes reach the copy too, so it is the database as of
   * its last step). Answers the copy's size in pages. One backup at a time.
   *
   * A step that finds a write transaction open copies nothing (SQLITE_BUSY), and steps run in the
   * check phase, behind the commit of a group opened in the same turn. So before each step a commit
   * is queued ahead of it (the progress callback runs just before the next step is queued): the
   * group the poll phase opened commits first and the step finds none open. Before the first step,
   * which better-sqlite3 queues itself (and which, finding a transaction open, it would take for
   * the end), groups commit at the end of the task that opened them instead.
   *
   * SQLite syncs the copy at every step (its rollback journal), on the event loop. A copy started
   * in WAL mode skips those syncs but makes them all at once when it closes: a longer stall in
   * bench/backup (docs/operations.md "Backups and restore"). The copy is answered only once
   * everything it holds is durable here (decision 010).
   */
  async backup(file: string, pagesPerStep: number): Promise<number> {
    if (this.closed) throw new Error('storage is closed');
    if (this.failureError) throw this.failureError;
    if (this.backupRunning) throw new Error('storage: a backup is already running');
    this.backupRunning = true;
    this.backupStarting = true;
    // A group open now would still commit in the check phase: commit it now.
    if (this.depth === 0) this.commitGroup();
    try {
      let pages = 0;
      const result = await this.db.backup(file, {
        progress: ({ totalPages }) => {
          this.backupStarting = false;
          pages = totalPages;
          setImmediate(() => this.commitGroup());
          return pagesPerStep;
        },
      });
      pages = Math.max(pages, result.totalPages);
      if (pages === 0 || !existsSync(file)) throw new Error('the backup copied nothing');
      // The copy may hold groups whose sync is still running: it is answered once they are durable.
      await this.flush();
      return pages;
    } finally {
      this.backupStarting = false;
      this.backupRunning = false;
    }
  }

  /**
   * Commits the open group and hands it to the durable sync (durable-sync.ts), which settles its
   * promise; answers the error when the commit failed (the group is then rolled back).
   */
  private commitGroup(): unknown {
    const group = this.group;
    if (!group) return undefined;
    this.group = null;
    const durable = this.groupDurable && this.syncWal;
    this.groupDurable = false;
    const transactions = this.groupSize;
    this.groupSize = 0;
    // The group's only transaction may have failed and rolled back: nothing to commit then, but
    // its flush still waits for the groups before it.
    if (!this.db.inTransaction) return this.committed(group, false, transactions, 0);
    const started = this.onCommit || durable ? this.now() : 0;
    try {
      this.statement('COMMIT').run();
    } catch (error) {
      try {
        if (this.db.inTransaction) this.statement('ROLLBACK').run();
      } catch {
        // The failed commit may already have rolled back; nothing more to undo.
      }
      this.epoch++;
      group.reject(error);
      return error;
    }
    this.checkpointer?.committed();
    if (!durable) {
      if (this.backgroundSyncMs > 0 && !this.durableSync.pending) this.wal.syncInBackground(this.now(), this.backgroundSyncMs);
      if (this.onCommit) this.report(transactions, (this.now() - started) / 1000, null);
    }
    return this.committed(group, durable, transactions, started);
  }

  /** Hands a committed group to the durable sync; without group commit, syncs it at once. */
  private committed(group: Deferred, durable: boolean, transactions: number, started: number): unknown {
    this.lastCommitted = group.promise;
    this.durableSync.committed({ durable, transactions, started, resolve: group.resolve, reject: group.reject });
    if (this.groupCommit) return undefined;
    // Without group commit the caller learns of a failed sync from transaction() itself.
    this.durableSync.drainNow();
    return this.failureError ?? undefined;
  }

  /** The first failed sync of the WAL (durable-sync.ts): the storage refuses all work from now on. */
  private failed(error: Error): RivuletError {
    const detail = (error as NodeJS.ErrnoException).code ?? error.message;
    const message = `storage failed: the write-ahead log could not be synced to disk (${detail}); nothing more is read or written until the server restarts`;
    this.failureError = new RivuletError('UNAVAILABLE', message, undefined, { cause: error });
    // A group of this turn has not committed yet: it never will.
    try {
      if (this.group && this.db.inTransaction) this.statement('ROLLBACK').run();
    } catch {
      // Nothing more can be undone; the storage is refused from now on anyway.
    }
    this.failGroup(this.failureError);
    return this.failureError;
  }

  /** The failed sync of the WAL that stopped this storage (decision 010); null while it works. */
  get failure(): RivuletError | null {
    return this.failureError;
  }

  private report(transactions: number, seconds: number, syncSeconds: number | null): void {
    try {
      this.onCommit!({ transactions, seconds, syncSeconds });
    } catch {
      // An observer's fault must not fail a commit that succeeded.
    }
  }

  /** Background syncs started (observable by tests and diagnostics). */
  get backgroundSyncs(): number {
    return this.wal.backgroundSyncs;
  }

  /** Settles once everything written so far is durable: the open group, and every committed one still waiting for its sync. */
  flush(): Promise<void> {
    if (this.failureError) return Promise.reject(this.failureError);
    if (this.group) return this.group.promise;
    return this.durableSync.pending && this.lastCommitted ? this.lastCommitted : Promise.resolve();
  }

  /** Commits the open group and syncs every committed one on this thread, so all their promises settle; then closes. */
  close(): void {
    if (this.closed) return;
    this.commitGroup();
    this.durableSync.drainNow();
    this.closed = true;
    // A background sync may still use the descriptor; it is closed when that sync ends.
    this.wal.close();
    this.db.close();
    // Closed after this connection, the worker's is the last one: it folds the WAL into the file.
    this.checkpointer?.close();
  }

  /** `close()`, settling once the checkpoint worker's connection is closed too (at once without one). */
  closeFully(): Promise<void> {
    this.close();
    return this.checkpointer?.closed ?? Promise.resolve();
  }
}
