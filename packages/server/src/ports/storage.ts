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
 *   commit several transactions together (group commit); callers must therefore answer a client
 *   only after `flush()`.
 * - If a group fails to commit, `flush()` rejects and `epoch` increases: every cache derived
 *   from storage must be dropped and reloaded.
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
 * What one commit of an adapter that groups transactions took (metrics, protocol §15.2): told after
 * every commit that reached the database, outside the commit's timing.
 */
export interface CommitReport {
  /** Transactions that joined the group (failed ones included: they shared its commit). */
  readonly transactions: number;
  /** The commit, its sync of the log included. */
  readonly seconds: number;
  /** The sync of the log alone, or null when this commit did not wait for one. */
  readonly syncSeconds: number | null;
}

export type CommitObserver = (report: CommitReport) => void;

export interface SqlStorage {
  exec<R extends object = SqlRow>(sql: string, ...params: SqlValue[]): R[];
  /**
   * Like `exec` for a statement that returns rows, but each row is an array of its values in the
   * statement's column order: no object per row, for reads of many rows.
   */
  execRows(sql: string, ...params: SqlValue[]): SqlValue[][];
  /** Runs a statement that returns no rows; answers how many rows it changed. */
  run(sql: string, ...params: SqlValue[]): number;
  transaction<T>(fn: () => T, options?: TransactionOptions): T;
  flush(): Promise<void>;
  readonly epoch: number;
  close(): void;
}
