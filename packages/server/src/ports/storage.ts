/**
 * The storage port: synchronous SQL, because both better-sqlite3 and the Durable Object SQL API
 * are synchronous, plus an asynchronous durability barrier.
 *
 * Contract (checked by test/storage-conformance.ts against every adapter):
 * - `exec` runs one statement with positional `?` parameters and returns its rows as plain objects;
 *   `execRows` returns them as arrays of values in column order.
 * - `transaction(fn)` is atomic: if `fn` throws, none of its statements take effect and the error
 *   propagates; nested calls are savepoints of the outer one.
 * - A committed transaction is visible to every later `exec` at once; it is durable (per the
 *   adapter's durability promise) once the promise of a later `flush()` resolves. Adapters may
 *   commit several transactions together (group commit), and may make a commit durable later than
 *   it becomes visible (the SQLite adapter syncs off the event loop, decision 010): `flush()`
 *   resolves only when everything written before it is durable, and flushes resolve in the order
 *   they were asked. Callers must therefore answer a client, and show a write to anyone, only after
 *   `flush()`; a raw `exec` may see rows that are not durable yet.
 * - If a group fails to commit, `flush()` rejects and `epoch` increases: every cache derived
 *   from storage must be dropped and reloaded. If a group committed but could not be made durable
 *   (a failed fsync), the adapter may instead refuse every later call (decision 010).
 * - `{durable: false}` marks writes that may be lost on a power loss (they still survive a process
 *   crash): delivery progress, which a restart may redo. A commit holding only such writes need not
 *   wait for the disk; one holding any durable write makes all of them durable.
 */

export type SqlValue = string | number | null | Uint8Array;
export type SqlRow = Record<string, SqlValue>;

export interface TransactionOptions {
  /** Default true: the commit survives a power loss (per the adapter's durability setting). */
  durable?: boolean;
  /**
   * `fn` runs at most one writing statement. One statement undoes itself when it fails, so an
   * adapter that commits transactions in groups may skip what it does to undo a failed one alone
   * (a savepoint). Should `fn` fail after a write all the same (a second write is refused), the
   * adapter undoes the whole group instead, as for a group that fails to commit.
   */
  singleWrite?: boolean;
}

/**
 * What one commit of an adapter that groups transactions took (metrics, protocol §15.2): told once
 * per group that committed, when it is durable (or, for a group that waits for no sync, after its
 * commit), outside the commit's timing.
 */
export interface CommitReport {
  /** Transactions that joined the group (failed ones included: they shared its commit). */
  readonly transactions: number;
  /** From the start of its commit until it was durable: the wait for a sync already running and its own sync included. */
  readonly seconds: number;
  /**
   * The sync of the log that made it durable, or null when it waited for none. One sync may cover
   * several groups: only the report of the first of them carries it, so each sync is told once.
   */
  readonly syncSeconds: number | null;
}

export type CommitObserver = (report: CommitReport) => void;

/**
 * The statements whose `run` answers SQLite's `changes()`: the rows the statement itself changed,
 * not those its triggers changed (engine/event-index.ts keeps a table by triggers). Any other
 * statement answers the difference of `total_changes()` (0 for DDL).
 */
export const OWN_CHANGES_STATEMENT = /^\s*(?:INSERT|UPDATE|DELETE|REPLACE)\b/i;

export interface SqlStorage {
  exec<R extends object = SqlRow>(sql: string, ...params: SqlValue[]): R[];
  /**
   * Like `exec` for a statement that returns rows, but each row is an array of its values in the
   * statement's column order: no object per row, for reads of many rows.
   */
  execRows(sql: string, ...params: SqlValue[]): SqlValue[][];
  /** Runs a statement that returns no rows; answers how many rows it changed (OWN_CHANGES_STATEMENT). */
  run(sql: string, ...params: SqlValue[]): number;
  transaction<T>(fn: () => T, options?: TransactionOptions): T;
  flush(): Promise<void>;
  readonly epoch: number;
  /**
   * Whether the connection can hold TEMP tables, triggers and views, which live and die with it
   * and are never written to the database file (the Node host's SQLite and the in-memory adapter
   * can; the Durable Object SQL API refuses them). The engine keeps its unindexed offsets there
   * when it can (engine/event-index.ts).
   */
  readonly tempObjects?: boolean;
  close(): void;
}
