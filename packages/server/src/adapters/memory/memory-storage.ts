/**
 * In-memory reference adapter of the storage port: SQLite compiled to WebAssembly (sql.js), with
 * no file and no durability. A second, independent implementation behind the same port keeps the
 * port honest (the engine's SQL must not lean on one binding's quirks, as the Durable Object SQL
 * API will not have them) and gives unit tests a fast engine with no native dependency.
 * Transactions commit at once; `flush()` has nothing to wait for.
 */
import initSqlJs from 'sql.js';
import type { Database, SqlJsStatic, Statement } from 'sql.js';
import { OWN_CHANGES_STATEMENT, type SqlStorage, type SqlValue, type TransactionOptions } from '../../ports/storage.js';

let engine: Promise<SqlJsStatic> | undefined;

export class MemoryStorage implements SqlStorage {
  private readonly statements = new Map<string, Statement>();
  private depth = 0;
  private closed = false;
  readonly epoch = 0;

  private constructor(
    private readonly db: Database,
    /** Whether the engine may keep connection-scoped objects here (SqlStorage.tempObjects); false stands in for a Durable Object. */
    readonly tempObjects: boolean,
  ) {}

  static async create(options: { tempObjects?: boolean } = {}): Promise<MemoryStorage> {
    engine ??= initSqlJs();
    return new MemoryStorage(new (await engine).Database(), options.tempObjects ?? true);
  }

  private statement(sql: string): Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  exec<R extends object>(sql: string, ...params: SqlValue[]): R[] {
    const stmt = this.statement(sql);
    try {
      stmt.bind(params);
      const rows: R[] = [];
      while (stmt.step()) rows.push(stmt.getAsObject() as R);
      return rows;
    } finally {
      stmt.reset();
    }
  }

  execRows(sql: string, ...params: SqlValue[]): SqlValue[][] {
    const stmt = this.statement(sql);
    try {
      stmt.bind(params);
      const rows: SqlValue[][] = [];
      while (stmt.step()) rows.push(stmt.get() as SqlValue[]);
      return rows;
    } finally {
      stmt.reset();
    }
  }

  /** Rows changed by this statement alone (sqlite3_changes() keeps the count of the last DML). */
  run(sql: string, ...params: SqlValue[]): number {
    if (OWN_CHANGES_STATEMENT.test(sql)) {
      this.exec(sql, ...params);
      return this.db.getRowsModified();
    }
    const before = this.totalChanges();
    this.exec(sql, ...params);
    return this.totalChanges() - before;
  }

  private totalChanges(): number {
    return this.exec<{ n: number }>('SELECT total_changes() AS n')[0]!.n;
  }

  /** Options are accepted and ignored: nothing here is durable. */
  transaction<T>(fn: () => T, _options?: TransactionOptions): T {
    if (this.closed) throw new Error('storage is closed');
    const name = `tx${this.depth}`;
    this.db.exec(`SAVEPOINT ${name}`);
    this.depth++;
    try {
      const result = fn();
      this.db.exec(`RELEASE ${name}`);
      return result;
    } catch (error) {
      try {
        this.db.exec(`ROLLBACK TO ${name}`);
        this.db.exec(`RELEASE ${name}`);
      } catch {
        // The statement rolled back the whole transaction (INSERT OR ROLLBACK): no savepoint is
        // left to undo, and the original error is what the caller must see.
      }
      throw error;
    } finally {
      this.depth--;
    }
  }

  flush(): Promise<void> {
    return Promise.resolve();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const stmt of this.statements.values()) stmt.free();
    this.db.close();
  }
}
