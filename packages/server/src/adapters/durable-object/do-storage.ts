/**
 * Durable Object SQL adapter of the storage port (ports/storage.ts), over `ctx.storage.sql`.
 *
 * - `exec` consumes the cursor at once (the API gives no snapshot across an await) and answers
 *   plain row objects (`execRows`: arrays, from the cursor's `raw()`); blobs come back from the DO API as ArrayBuffer and leave here as
 *   Uint8Array, the port's blob type.
 * - `run` answers the rows changed by its statement: the cursor's `rowsWritten` also counts index
 *   rows, so the count comes from SQLite's `changes()` for INSERT/UPDATE/DELETE/REPLACE and from
 *   the difference of `total_changes()` for anything else (0 for DDL).
 * - `transaction` is `ctx.storage.transactionSync`: the DO SQL API refuses BEGIN, COMMIT and
 *   SAVEPOINT statements; nested `transactionSync` calls are savepoints of the outer one (a failing
 *   inner call rolls back alone), which is the port's contract.
 * - Group commit is the platform's own: every write a Durable Object makes without an intervening
 *   await joins one implicit atomic commit, and the output gate holds the object's outgoing
 *   messages until it is durable. `flush()` is `ctx.storage.sync()`, which resolves once every
 *   write so far is durable (at once when nothing is pending). `{durable: false}` changes nothing
 *   here: every write of a Durable Object is replicated before it is confirmed.
 * - A failed write resets the Durable Object (the platform discards its in-memory state), so
 *   `epoch` only moves if `sync()` itself rejects.
 */
import { OWN_CHANGES_STATEMENT, type SqlStorage, type SqlValue, type TransactionOptions } from '../../ports/storage.js';
import type { DoSqlValue, DoStorageApi } from './do-api.js';

function bindValue(value: SqlValue): unknown {
  if (value instanceof Uint8Array) {
    // Only the view's own bytes, as an ArrayBuffer of exactly that length.
    return value.byteOffset === 0 && value.byteLength === value.buffer.byteLength
      ? value.buffer
      : value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength);
  }
  return value;
}

function readValue(value: DoSqlValue): SqlValue {
  return value instanceof ArrayBuffer ? new Uint8Array(value) : value;
}

export class DurableObjectStorage implements SqlStorage {
  private closed = false;
  epoch = 0;

  constructor(private readonly storage: DoStorageApi) {}

  exec<R extends object>(sql: string, ...params: SqlValue[]): R[] {
    const rows = this.storage.sql.exec(sql, ...params.map(bindValue)).toArray();
    const out: R[] = new Array<R>(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      const plain: Record<string, SqlValue> = {};
      for (const key of Object.keys(row)) plain[key] = readValue(row[key]!);
      out[i] = plain as R;
    }
    return out;
  }

  execRows(sql: string, ...params: SqlValue[]): SqlValue[][] {
    const out: SqlValue[][] = [];
    for (const row of this.storage.sql.exec(sql, ...params.map(bindValue)).raw()) out.push(row.map(readValue));
    return out;
  }

  run(sql: string, ...params: SqlValue[]): number {
    const sqlApi = this.storage.sql;
    if (OWN_CHANGES_STATEMENT.test(sql)) {
      sqlApi.exec(sql, ...params.map(bindValue)).toArray();
      return Number(sqlApi.exec('SELECT changes() AS n').toArray()[0]!.n);
    }
    const before = Number(sqlApi.exec('SELECT total_changes() AS n').toArray()[0]!.n);
    sqlApi.exec(sql, ...params.map(bindValue)).toArray();
    return Number(sqlApi.exec('SELECT total_changes() AS n').toArray()[0]!.n) - before;
  }

  transaction<T>(fn: () => T, _options?: TransactionOptions): T {
    if (this.closed) throw new Error('storage is closed');
    return this.storage.transactionSync(fn);
  }

  async flush(): Promise<void> {
    try {
      await this.storage.sync();
    } catch (error) {
      this.epoch++;
      throw error;
    }
  }

  /** A Durable Object's storage cannot be closed; this handle refuses transactions afterwards. */
  close(): void {
    this.closed = true;
  }
}
