/**
 * The slice of the Durable Object storage API the adapters use, typed locally so that the adapters
 * (and the Node-side type check) need neither `@cloudflare/workers-types` as globals nor the
 * `cloudflare:*` modules: the Worker host hands `ctx.storage` in, which satisfies these shapes.
 * Names and semantics follow the SQLite-backed Durable Object storage API (developers.cloudflare.com,
 * "SQLite-backed Durable Object Storage").
 */

/** A value as the DO SQL API answers it: blobs come back as ArrayBuffer. */
export type DoSqlValue = ArrayBuffer | string | number | null;

export interface DoSqlCursor {
  toArray(): Record<string, DoSqlValue>[];
  /** The rows as arrays of values in column order. */
  raw(): IterableIterator<DoSqlValue[]>;
}

export interface DoSql {
  /** Runs one statement with `?` bindings; the cursor must be consumed before the next await. */
  exec(query: string, ...bindings: unknown[]): DoSqlCursor;
}

export interface DoStorageApi {
  readonly sql: DoSql;
  /** Runs `fn` in a transaction; nested calls are savepoints; a throw rolls back and propagates. */
  transactionSync<T>(fn: () => T): T;
  /** Resolves once every write so far is durable (at once when nothing is pending). */
  sync(): Promise<void>;
  setAlarm(scheduledTime: number): Promise<void>;
  deleteAlarm(): Promise<void>;
  /** Erases the whole database (SQL tables included); alarms are not touched. */
  deleteAll(): Promise<void>;
}
