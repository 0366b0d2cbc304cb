/**
 * The conformance checks of the storage port (ports/storage.ts; architecture.md, Storage): every
 * adapter runs the same tests of the contract written in the port's header. They know nothing about
 * any adapter: a factory hands them a fresh, empty storage, and optionally a way to open the same
 * data again, which enables the durability tests.
 *
 * They know nothing about the test runner either: `defineStorageChecks` takes the runner's
 * describe/it/hooks/expect as an argument, so the same checks run under vitest in Node
 * (storage-conformance.ts) and inside workerd against the Durable Object adapter, where a small
 * collector runs them (test/cloudflare/mini-runner.ts). Nothing here may import Node modules.
 *
 * Integers are checked in INTEGER-declared columns: drivers differ in how they bind a JS number
 * (better-sqlite3 binds every number as REAL, sql.js binds numbers beyond 32 bits as REAL), and
 * column affinity is what makes them integers again. The engine's schema declares its columns.
 *
 * The checks of the SQL surface (exec, types, run, RETURNING, reused statements) are in
 * storage-checks-sql.ts, those of an in-place upgrade with data in storage-checks-upgrade.ts;
 * defineStorageChecks registers them with the others, in one suite per adapter.
 */
import type { ExpectStatic } from 'vitest';
import type { SqlStorage, SqlValue } from '../src/ports/storage.js';
import { defineListingChecks } from './storage-checks-listing.js';
import { Boom, byteChecks, count, defineSqlChecks, names } from './storage-checks-sql.js';
import { defineUpgradeChecks } from './storage-checks-upgrade.js';

export interface StorageUnderTest {
  storage: SqlStorage;
  /**
   * Opens the same data again. The suite closes `storage` (and any handle reopened before) first;
   * an adapter without persistence leaves this out and skips the durability tests.
   */
  reopen?: () => Promise<SqlStorage>;
  /** Closes every handle the factory opened and removes what it created. */
  cleanup(): void | Promise<void>;
}

export type StorageFactory = () => Promise<StorageUnderTest>;

/** What the checks need of a test runner (vitest's functions satisfy it). */
export interface ConformanceApi {
  describe(name: string, fn: () => void): void;
  it(name: string, fn: (ctx: { skip(): void }) => unknown): void;
  beforeEach(fn: () => unknown): void;
  afterEach(fn: () => unknown): void;
  expect: ExpectStatic;
}

/** Resolves on the next macrotask turn: anything that settles first did not wait for I/O or timers. */
const nextTurn = (): Promise<'turn'> => new Promise((resolve) => setTimeout(() => resolve('turn'), 0));

export function defineStorageChecks(t: ConformanceApi, name: string, factory: StorageFactory): void {
  const { describe, it, beforeEach, afterEach, expect } = t;
  const { bytes, expectSameBytes } = byteChecks(expect);

  describe(`storage port conformance: ${name}`, () => {
    let under: StorageUnderTest;
    let s: SqlStorage;

    beforeEach(async () => {
      under = await factory();
      s = under.storage;
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, n INTEGER)`);
    });

    afterEach(async () => {
      await under.cleanup();
    });

    /** Closes the current handle and opens the same data again. */
    async function reopen(): Promise<SqlStorage> {
      s.close();
      s = await under.reopen!();
      return s;
    }

    defineSqlChecks(t, () => s);
    defineListingChecks(t, () => s);
    defineUpgradeChecks(t, () => s);

    describe('transaction', () => {
      it('answers the value of fn, and its writes are visible to every later exec at once', () => {
        const result = s.transaction(() => {
          s.run(`INSERT INTO t (name) VALUES (?)`, 'a');
          // Writes are visible inside the transaction too.
          expect(names(s)).toEqual(['a']);
          s.run(`INSERT INTO t (name) VALUES (?)`, 'b');
          return { ok: true };
        });
        expect(result).toEqual({ ok: true });
        expect(names(s)).toEqual(['a', 'b']);
      });

      it('a throwing fn rolls back every one of its statements and rethrows the same error', () => {
        s.run(`INSERT INTO t (name, n) VALUES (?, ?)`, 'before', 1);
        const error = new Boom('fn failed');
        let caught: unknown;
        try {
          s.transaction(() => {
            s.run(`INSERT INTO t (name) VALUES (?)`, 'a');
            s.run(`UPDATE t SET n = 99`);
            s.run(`DELETE FROM t WHERE name = ?`, 'before');
            s.run(`CREATE TABLE made_inside (x)`);
            throw error;
          });
        } catch (e) {
          caught = e;
        }
        expect(caught).toBe(error);
        expect(s.exec(`SELECT name, n FROM t`)).toEqual([{ name: 'before', n: 1 }]);
        expect(s.exec(`SELECT name FROM sqlite_master WHERE name = 'made_inside'`)).toEqual([]);
      });

      it('an SQL error inside fn rolls back the earlier statements and propagates', () => {
        s.run(`INSERT INTO t (name) VALUES (?)`, 'taken');
        expect(() =>
          s.transaction(() => {
            s.run(`INSERT INTO t (name) VALUES (?)`, 'fresh');
            s.run(`INSERT INTO t (name) VALUES (?)`, 'taken');
          }),
        ).toThrow(/UNIQUE/i);
        expect(names(s)).toEqual(['taken']);
      });

      it('a non-Error thrown value propagates as is', () => {
        const thrown = { code: 'not an error' };
        let caught: unknown;
        try {
          s.transaction(() => {
            s.run(`INSERT INTO t (name) VALUES (?)`, 'a');
            throw thrown;
          });
        } catch (e) {
          caught = e;
        }
        expect(caught).toBe(thrown);
        expect(count(s)).toBe(0);
      });

      it('works normally after a rolled-back transaction, many times over', () => {
        for (let i = 0; i < 20; i++) {
          expect(() =>
            s.transaction(() => {
              s.run(`INSERT INTO t (name) VALUES (?)`, `bad${i}`);
              throw new Boom(String(i));
            }),
          ).toThrow(Boom);
          s.transaction(() => s.run(`INSERT INTO t (name) VALUES (?)`, `good${i}`));
        }
        expect(names(s)).toEqual(Array.from({ length: 20 }, (_, i) => `good${i}`));
      });

      it('nested transactions are savepoints: a failed inner one caught by the outer keeps the outer writes', () => {
        s.transaction(() => {
          s.run(`INSERT INTO t (name) VALUES (?)`, 'outer-before');
          const error = new Boom('inner');
          let caught: unknown;
          try {
            s.transaction(() => {
              s.run(`INSERT INTO t (name) VALUES (?)`, 'inner');
              s.run(`UPDATE t SET n = 7 WHERE name = ?`, 'outer-before');
              throw error;
            });
          } catch (e) {
            caught = e;
          }
          expect(caught).toBe(error);
          expect(s.exec(`SELECT name, n FROM t`)).toEqual([{ name: 'outer-before', n: null }]);
          s.run(`INSERT INTO t (name) VALUES (?)`, 'outer-after');
        });
        expect(names(s)).toEqual(['outer-before', 'outer-after']);
      });

      it('a successful inner transaction is undone when its outer one fails', () => {
        expect(() =>
          s.transaction(() => {
            s.run(`INSERT INTO t (name) VALUES (?)`, 'outer');
            const inner = s.transaction(() => {
              s.run(`INSERT INTO t (name) VALUES (?)`, 'inner');
              return 'inner result';
            });
            expect(inner).toBe('inner result');
            throw new Boom('outer');
          }),
        ).toThrow(Boom);
        expect(count(s)).toBe(0);
      });

      it('nests several levels deep, each level rolling back alone', () => {
        s.transaction(() => {
          s.run(`INSERT INTO t (name) VALUES (?)`, 'L1');
          s.transaction(() => {
            s.run(`INSERT INTO t (name) VALUES (?)`, 'L2');
            try {
              s.transaction(() => {
                s.run(`INSERT INTO t (name) VALUES (?)`, 'L3');
                s.transaction(() => s.run(`INSERT INTO t (name) VALUES (?)`, 'L4'));
                throw new Boom('L3');
              });
            } catch (e) {
              if (!(e instanceof Boom)) throw e;
            }
            s.transaction(() => s.run(`INSERT INTO t (name) VALUES (?)`, 'L3b'));
          });
          try {
            s.transaction(() => {
              s.run(`INSERT INTO t (name) VALUES (?)`, 'L2b');
              throw new Boom('L2b');
            });
          } catch (e) {
            if (!(e instanceof Boom)) throw e;
          }
        });
        expect(names(s)).toEqual(['L1', 'L2', 'L3b']);
      });

      it('an inner SQL error caught by the outer transaction leaves the outer usable', () => {
        s.run(`INSERT INTO t (name) VALUES (?)`, 'taken');
        s.transaction(() => {
          s.run(`INSERT INTO t (name) VALUES (?)`, 'a');
          expect(() =>
            s.transaction(() => {
              s.run(`INSERT INTO t (name) VALUES (?)`, 'b');
              s.run(`INSERT INTO t (name) VALUES (?)`, 'taken');
            }),
          ).toThrow(/UNIQUE/i);
          s.run(`INSERT INTO t (name) VALUES (?)`, 'c');
        });
        expect(names(s)).toEqual(['taken', 'a', 'c']);
      });

      it('the epoch does not move while commits succeed', async () => {
        const epoch = s.epoch;
        expect(typeof epoch).toBe('number');
        for (let i = 0; i < 5; i++) s.transaction(() => s.run(`INSERT INTO t (name) VALUES (?)`, `e${i}`));
        await s.flush();
        expect(s.epoch).toBe(epoch);
      });
    });

    describe('flush', () => {
      it('resolves after committed transactions, which stay visible', async () => {
        for (let i = 0; i < 10; i++) s.transaction(() => s.run(`INSERT INTO t (name) VALUES (?)`, `f${i}`));
        await expect(s.flush()).resolves.toBeUndefined();
        expect(count(s)).toBe(10);
        // Writes after a flush are covered by the next one.
        s.transaction(() => s.run(`INSERT INTO t (name) VALUES (?)`, 'later'));
        await s.flush();
        expect(count(s)).toBe(11);
      });

      it('resolves when nothing was written, without waiting for another turn', async () => {
        await expect(Promise.race([s.flush().then(() => 'flushed' as const), nextTurn()])).resolves.toBe('flushed');
        s.transaction(() => s.run(`INSERT INTO t (name) VALUES (?)`, 'x'));
        await s.flush();
        await expect(Promise.race([s.flush().then(() => 'flushed' as const), nextTurn()])).resolves.toBe('flushed');
      });

      it('resolves after a transaction that rolled back', async () => {
        s.transaction(() => s.run(`INSERT INTO t (name) VALUES (?)`, 'kept'));
        expect(() =>
          s.transaction(() => {
            s.run(`INSERT INTO t (name) VALUES (?)`, 'dropped');
            throw new Boom('x');
          }),
        ).toThrow(Boom);
        await expect(s.flush()).resolves.toBeUndefined();
        expect(names(s)).toEqual(['kept']);
      });

      it('concurrent flushes all resolve', async () => {
        const flushes: Promise<void>[] = [];
        for (let i = 0; i < 5; i++) {
          s.transaction(() => s.run(`INSERT INTO t (name) VALUES (?)`, `c${i}`));
          flushes.push(s.flush());
        }
        await expect(Promise.all(flushes)).resolves.toHaveLength(5);
        expect(count(s)).toBe(5);
      });
    });

    describe('close', () => {
      it('refuses transactions after close, and close is idempotent', () => {
        s.close();
        expect(() => s.transaction(() => 1)).toThrow();
        expect(() => s.close()).not.toThrow();
      });
    });

    describe('durability across close and reopen', () => {
      it('committed and flushed data survives; rolled-back data does not', async (ctx) => {
        if (!under.reopen) {
          ctx.skip();
          return;
        }
        s.transaction(() => {
          s.run(`INSERT INTO t (name, n) VALUES (?, ?)`, 'a', Number.MAX_SAFE_INTEGER);
          s.run(`CREATE TABLE blobs (b BLOB)`);
          s.run(`INSERT INTO blobs (b) VALUES (?)`, new Uint8Array([1, 2, 3]));
        });
        expect(() =>
          s.transaction(() => {
            s.run(`INSERT INTO t (name) VALUES (?)`, 'rolled back');
            throw new Boom('x');
          }),
        ).toThrow(Boom);
        s.transaction(() => {
          s.run(`INSERT INTO t (name) VALUES (?)`, 'b');
          try {
            s.transaction(() => {
              s.run(`INSERT INTO t (name) VALUES (?)`, 'inner rolled back');
              throw new Boom('inner');
            });
          } catch (e) {
            if (!(e instanceof Boom)) throw e;
          }
        });
        s.run(`INSERT INTO t (name) VALUES (?)`, 'outside');
        await s.flush();
        const again = await reopen();
        expect(again.exec(`SELECT name, n FROM t ORDER BY id`)).toEqual([
          { name: 'a', n: Number.MAX_SAFE_INTEGER },
          { name: 'b', n: null },
          { name: 'outside', n: null },
        ]);
        expectSameBytes(bytes(again.exec<{ b: SqlValue }>(`SELECT b FROM blobs`)[0]!.b), new Uint8Array([1, 2, 3]));
        // The reopened storage is fully usable.
        again.transaction(() => again.run(`INSERT INTO t (name) VALUES (?)`, 'c'));
        await again.flush();
        const third = await reopen();
        expect(names(third)).toEqual(['a', 'b', 'outside', 'c']);
      });

      it('many small flushed transactions all survive', async (ctx) => {
        if (!under.reopen) {
          ctx.skip();
          return;
        }
        for (let round = 0; round < 5; round++) {
          for (let i = 0; i < 20; i++) s.transaction(() => s.run(`INSERT INTO t (name, n) VALUES (?, ?)`, `r${round}-${i}`, i));
          await s.flush();
        }
        const again = await reopen();
        expect(count(again)).toBe(100);
      });
    });
  });
}
