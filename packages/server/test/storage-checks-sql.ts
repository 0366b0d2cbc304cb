/**
 * The conformance checks of the storage port's SQL surface (ports/storage.ts): exec and execRows,
 * values of every type round-tripping, run's change counts, RETURNING, and statements used again.
 * storage-checks.ts registers them inside each adapter's suite, on the storage its factory handed
 * over, and shares the helpers below. Like those checks, they know neither the adapter nor the
 * test runner, so nothing here may import Node modules.
 */
import type { ExpectStatic } from 'vitest';
import type { SqlRow, SqlStorage, SqlValue } from '../src/ports/storage.js';
import type { ConformanceApi } from './storage-checks.js';
import { RUNS_OF } from '../src/engine/key-runs.js';

export class Boom extends Error {
  override readonly name = 'Boom';
}

export const count = (s: SqlStorage, table = 't'): number => s.exec<{ n: number }>(`SELECT count(*) AS n FROM ${table}`)[0]!.n;

export const names = (s: SqlStorage): string[] => s.exec<{ name: string }>(`SELECT name FROM t ORDER BY id`).map((r) => r.name);

/** Checks of blobs read back, with the runner's expect. */
export function byteChecks(expect: ExpectStatic) {
  /** The bytes of a blob read back, checked to be a Uint8Array (a Node Buffer is one). */
  const bytes = (v: SqlValue | undefined): Uint8Array => {
    expect(v).toBeInstanceOf(Uint8Array);
    return v as Uint8Array;
  };

  function expectSameBytes(actual: Uint8Array, expected: Uint8Array): void {
    expect(actual.length).toBe(expected.length);
    const first = expected.findIndex((b, i) => actual[i] !== b);
    expect(first, `first differing byte`).toBe(-1);
  }

  return { bytes, expectSameBytes };
}

/** Registers the SQL checks in the calling suite; `current()` is the storage of the running check. */
export function defineSqlChecks(t: ConformanceApi, current: () => SqlStorage): void {
  const { describe, it, beforeEach, expect } = t;
  const { bytes, expectSameBytes } = byteChecks(expect);
  let s: SqlStorage;

  beforeEach(() => {
    s = current();
  });

  describe('exec', () => {
    it('binds positional parameters and answers plain row objects keyed by column name', () => {
      s.run(`INSERT INTO t (name, n) VALUES (?, ?), (?, ?), (?, ?)`, 'a', 1, 'b', 2, 'c', 3);
      const rows = s.exec<{ name: string; n: number }>(`SELECT name, n FROM t WHERE n >= ? ORDER BY n`, 2);
      expect(rows).toEqual([
        { name: 'b', n: 2 },
        { name: 'c', n: 3 },
      ]);
      for (const row of rows) {
        expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
        expect(Object.keys(row)).toEqual(['name', 'n']);
      }
      expect(JSON.parse(JSON.stringify(rows))).toEqual(rows);
    });

    it('answers column aliases and expressions, an empty array for no rows and for statements without rows', () => {
      expect(s.exec(`SELECT 1 + 1 AS two, 'x' || ? AS s`, 'y')).toEqual([{ two: 2, s: 'xy' }]);
      expect(s.exec(`SELECT * FROM t WHERE name = ?`, 'absent')).toEqual([]);
      expect(s.exec(`INSERT INTO t (name) VALUES (?)`, 'a')).toEqual([]);
      expect(s.exec(`UPDATE t SET n = ? WHERE name = ?`, 5, 'a')).toEqual([]);
      expect(s.exec<SqlRow>(`SELECT name, n FROM t`)).toEqual([{ name: 'a', n: 5 }]);
    });

    it('binds many parameters in order', () => {
      const values = Array.from({ length: 99 }, (_, i) => i * 3);
      const sql = `SELECT ${values.map((_, i) => `? AS c${i}`).join(', ')}`;
      const row = s.exec<Record<string, number>>(sql, ...values)[0]!;
      expect(Object.values(row)).toEqual(values);
    });

    it('execRows answers the same rows as arrays of values in column order', () => {
      s.run(`INSERT INTO t (name, n) VALUES (?, ?), (?, ?), (?, ?)`, 'a', 1, 'b', 2, 'c', 3);
      const sql = `SELECT n, name, n * 2 AS twice FROM t WHERE n >= ? ORDER BY n`;
      expect(s.execRows(sql, 2)).toEqual([
        [2, 'b', 4],
        [3, 'c', 6],
      ]);
      expect(s.execRows(sql, 2)).toEqual(s.exec<SqlRow>(sql, 2).map((row) => Object.values(row)));
      expect(s.execRows(sql, 9)).toEqual([]);
      for (const row of s.execRows(sql, 1)) expect(Array.isArray(row)).toBe(true);
      expect(() => s.execRows(`SELECT * FROM no_such_table`)).toThrow();
      // The same statement again, after a failure of another one.
      expect(s.execRows(sql, 3)).toEqual([[3, 'c', 6]]);
    });

    it('group_concat over an ordered, limited subquery joins its rows in that order (EventRows.rangeJoined)', () => {
      // As the events table: a rowid table with a unique (group, offset) index, rows of several
      // groups interleaved and each group's offsets inserted out of order, so that neither rowid
      // nor insertion order is offset order.
      s.run(`CREATE TABLE e (g INTEGER NOT NULL, o INTEGER NOT NULL, k INTEGER NOT NULL, x TEXT NOT NULL)`);
      s.run(`CREATE UNIQUE INDEX e_by_o ON e (g, o)`);
      for (let i = 0; i < 300; i++) {
        const o = ((i * 7919) % 300) + 1;
        for (const g of [1, 2]) s.run(`INSERT INTO e (g, o, k, x) VALUES (?, ?, ?, ?)`, g, o, o % 3, `{"o":${o},"g":${g},"t":"ü✓${'x'.repeat(o % 7)}"}`);
      }
      const inner = (extra: string) => `SELECT o, x FROM e WHERE g = ? AND o > ? AND o < ?${extra} ORDER BY o LIMIT ?`;
      for (const [extra, args] of [
        ['', [2, 10, 1000, 120]],
        [' AND k = 0', [1, 0, 1000, 50]],
        [' AND k <> 1', [2, 250, 290, 500]],
        ['', [1, 300, 1000, 10]],
      ] as const) {
        const rows = s.execRows(inner(extra), ...args);
        const [joined] = s.execRows(`SELECT count(*), min(o), max(o), group_concat(x, ',') FROM (${inner(extra)})`, ...args);
        const offsets = rows.map((r) => r[0] as number);
        expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
        expect(joined).toEqual([rows.length, offsets[0] ?? null, offsets.at(-1) ?? null, rows.length === 0 ? null : rows.map((r) => r[1]).join(',')]);
      }
    });

    it('what the runs of idempotency keys use (storage format 10): a recursive CTE seeking run after run, row values in IN, ALTER TABLE … RENAME TO', () => {
      s.run(`CREATE TABLE event_keys (sid INTEGER NOT NULL, run INTEGER NOT NULL, idem TEXT NOT NULL, ofs INTEGER NOT NULL, PRIMARY KEY (sid, run, idem)) WITHOUT ROWID`);
      for (const [sid, run, n] of [
        [1, 15, 3],
        [1, 16, 2],
        [1, 33, 1],
        [2, 16, 4],
      ] as const) {
        for (let i = 0; i < n; i++) s.run(`INSERT INTO event_keys (sid, run, idem, ofs) VALUES (?, ?, ?, ?)`, sid, run, `k${i}`, i);
      }
      expect(s.execRows(RUNS_OF, 1, 1)).toEqual([[33], [16], [15]]);
      expect(s.execRows(RUNS_OF, 3, 3)).toEqual([]);
      expect(s.run(`DELETE FROM event_keys WHERE sid = ? AND (run, idem) IN (SELECT run, idem FROM event_keys WHERE sid = ? LIMIT ?)`, 1, 1, 4)).toBe(4);
      expect(s.execRows(`SELECT sid, count(*) FROM event_keys GROUP BY sid ORDER BY sid`)).toEqual([
        [1, 2],
        [2, 4],
      ]);
      s.run(`ALTER TABLE event_keys RENAME TO event_keys_before`);
      expect(count(s, 'event_keys_before')).toBe(6);
      expect(() => s.exec(`SELECT 1 FROM event_keys`)).toThrow();
    });

    it('execRows round-trips every value type: integers, floats, text, blobs as Uint8Array, null', () => {
      s.run(`CREATE TABLE w (i INTEGER, r REAL, x TEXT, b BLOB, z)`);
      const blob = new Uint8Array([0, 1, 254, 255]);
      s.run(`INSERT INTO w VALUES (?, ?, ?, ?, ?)`, Number.MAX_SAFE_INTEGER, -1.25, 'ünïcode ✓', blob, null);
      const [row] = s.execRows(`SELECT i, r, x, b, z FROM w`);
      expect(row!.slice(0, 3)).toEqual([Number.MAX_SAFE_INTEGER, -1.25, 'ünïcode ✓']);
      expect(row![3]).toBeInstanceOf(Uint8Array);
      expect(Array.from(row![3] as Uint8Array)).toEqual([0, 1, 254, 255]);
      expect(row![4]).toBeNull();
    });

    it('throws on invalid SQL and on constraint violations, and keeps working afterwards', () => {
      expect(() => s.exec(`SELEC nonsense`)).toThrow();
      s.run(`INSERT INTO t (name) VALUES (?)`, 'a');
      expect(() => s.run(`INSERT INTO t (name) VALUES (?)`, 'a')).toThrow();
      expect(() => s.exec(`SELECT * FROM no_such_table`)).toThrow();
      expect(names(s)).toEqual(['a']);
    });
  });

  describe('types round-trip', () => {
    beforeEach(() => {
      s.run(`CREATE TABLE v (k INTEGER PRIMARY KEY, i INTEGER, r REAL, x TEXT, b BLOB, u)`);
    });

    const integers = [
      0,
      1,
      -1,
      2 ** 31 - 1,
      2 ** 31,
      -(2 ** 31) - 1,
      2 ** 32 + 5,
      1_700_000_000_123,
      Number.MAX_SAFE_INTEGER,
      Number.MIN_SAFE_INTEGER,
    ];

    it('integers up to ±Number.MAX_SAFE_INTEGER, exactly, and as SQL integers in INTEGER columns', () => {
      integers.forEach((value, k) => s.run(`INSERT INTO v (k, i, u) VALUES (?, ?, ?)`, k, value, value));
      const rows = s.exec<{ k: number; i: number; u: number; ti: string }>(`SELECT k, i, u, typeof(i) AS ti FROM v ORDER BY k`);
      expect(rows.map((r) => r.i)).toEqual(integers);
      expect(rows.map((r) => r.u)).toEqual(integers);
      for (const r of rows) {
        expect(typeof r.i).toBe('number');
        expect(r.ti).toBe('integer');
      }
      // Comparisons and arithmetic on stored integers are exact.
      expect(s.exec(`SELECT k FROM v WHERE i = ?`, Number.MAX_SAFE_INTEGER)).toEqual([{ k: integers.indexOf(Number.MAX_SAFE_INTEGER) }]);
      expect(s.exec(`SELECT i - 1 AS d FROM v WHERE i = ?`, Number.MAX_SAFE_INTEGER)).toEqual([{ d: Number.MAX_SAFE_INTEGER - 1 }]);
      expect(s.exec(`SELECT max(i) AS m, min(i) AS lo FROM v`)).toEqual([{ m: Number.MAX_SAFE_INTEGER, lo: Number.MIN_SAFE_INTEGER }]);
      expect(s.exec(`SELECT ? AS a, ? AS b`, Number.MAX_SAFE_INTEGER, -42)).toEqual([{ a: Number.MAX_SAFE_INTEGER, b: -42 }]);
    });

    it('integers computed by SQL come back as numbers', () => {
      s.run(`INSERT INTO v (k, i) VALUES (1, 10), (2, 20)`);
      expect(s.exec(`SELECT count(*) AS n, sum(i) AS total, 9007199254740991 AS big FROM v`)).toEqual([
        { n: 2, total: 30, big: Number.MAX_SAFE_INTEGER },
      ]);
    });

    it('floats', () => {
      const floats = [0.5, -1.25, Math.PI, 1e-300, -1.7976931348623157e308, 123456.789, 2 ** 60 + 0.5];
      floats.forEach((value, k) => s.run(`INSERT INTO v (k, r, u) VALUES (?, ?, ?)`, k, value, value));
      const rows = s.exec<{ r: number; u: number }>(`SELECT r, u FROM v ORDER BY k`);
      expect(rows.map((r) => r.r)).toEqual(floats);
      expect(rows.map((r) => r.u)).toEqual(floats);
      expect(s.exec(`SELECT ? * 2 AS d`, 0.25)).toEqual([{ d: 0.5 }]);
    });

    it('text: empty, unicode (astral included), control characters, long', () => {
      const texts = ['', 'plain', 'héllo wörld', '日本語', '𝄞 music 😀 emoji 👩‍👩‍👧', 'tab\tnew\nline "quoted" \\', 'a\u0000b', 'x'.repeat(100_000)];
      texts.forEach((value, k) => s.run(`INSERT INTO v (k, x, u) VALUES (?, ?, ?)`, k, value, value));
      const rows = s.exec<{ x: string; u: string; tx: string }>(`SELECT x, u, typeof(x) AS tx FROM v ORDER BY k`);
      expect(rows.map((r) => r.x)).toEqual(texts);
      expect(rows.map((r) => r.u)).toEqual(texts);
      for (const r of rows) expect(r.tx).toBe('text');
      expect(s.exec(`SELECT k FROM v WHERE x = ?`, '𝄞 music 😀 emoji 👩‍👩‍👧')).toEqual([{ k: 4 }]);
      // SQLite measures text in characters (code points).
      expect(s.exec(`SELECT length(?) AS n`, '😀é')).toEqual([{ n: 2 }]);
    });

    it('NULL, bound and stored', () => {
      s.run(`INSERT INTO v (k, i, r, x, b, u) VALUES (?, ?, ?, ?, ?, ?)`, 1, null, null, null, null, null);
      expect(s.exec(`SELECT i, r, x, b, u FROM v`)).toEqual([{ i: null, r: null, x: null, b: null, u: null }]);
      expect(s.exec(`SELECT ? AS v, ? IS NULL AS absent`, null, null)).toEqual([{ v: null, absent: 1 }]);
      expect(s.exec(`SELECT k FROM v WHERE x IS ?`, null)).toEqual([{ k: 1 }]);
    });

    it('Uint8Array blobs: empty, every byte value, large', () => {
      const all = new Uint8Array(256).map((_, i) => i);
      const large = new Uint8Array(200_000).map((_, i) => (i * 31) & 0xff);
      const blobs = [new Uint8Array(0), new Uint8Array([0]), all, large];
      blobs.forEach((value, k) => s.run(`INSERT INTO v (k, b, u) VALUES (?, ?, ?)`, k, value, value));
      const rows = s.exec<{ b: SqlValue; u: SqlValue; tb: string; n: number }>(
        `SELECT b, u, typeof(b) AS tb, length(b) AS n FROM v ORDER BY k`,
      );
      rows.forEach((r, k) => {
        expectSameBytes(bytes(r.b), blobs[k]!);
        expectSameBytes(bytes(r.u), blobs[k]!);
        expect(r.tb).toBe('blob');
        expect(r.n).toBe(blobs[k]!.length);
      });
      // A blob parameter compares as a blob.
      expect(s.exec(`SELECT k FROM v WHERE b = ?`, all)).toEqual([{ k: 2 }]);
      // A blob read back can be bound again.
      const again = rows[3]!.b as Uint8Array;
      expect(s.exec(`SELECT k FROM v WHERE b = ?`, again)).toEqual([{ k: 3 }]);
    });

    it('a view into a larger buffer binds only its own bytes', () => {
      const buffer = new Uint8Array([9, 9, 1, 2, 3, 9, 9]);
      s.run(`INSERT INTO v (k, b) VALUES (1, ?)`, buffer.subarray(2, 5));
      expectSameBytes(bytes(s.exec<{ b: SqlValue }>(`SELECT b FROM v`)[0]!.b), new Uint8Array([1, 2, 3]));
    });
  });

  describe('run', () => {
    it('answers the number of rows changed', () => {
      expect(s.run(`INSERT INTO t (name, n) VALUES (?, ?)`, 'a', 1)).toBe(1);
      expect(s.run(`INSERT INTO t (name, n) VALUES (?, ?), (?, ?), (?, ?)`, 'b', 1, 'c', 2, 'd', 2)).toBe(3);
      expect(s.run(`UPDATE t SET n = n + 10 WHERE n = ?`, 1)).toBe(2);
      expect(s.run(`UPDATE t SET n = 0 WHERE name = ?`, 'absent')).toBe(0);
      expect(s.run(`INSERT OR IGNORE INTO t (name) VALUES (?)`, 'a')).toBe(0);
      expect(s.run(`DELETE FROM t WHERE n >= ?`, 2)).toBe(4);
      expect(s.run(`DELETE FROM t`)).toBe(0);
    });

    it('counts inside transactions like outside', () => {
      s.transaction(() => {
        expect(s.run(`INSERT INTO t (name) VALUES (?), (?)`, 'a', 'b')).toBe(2);
        expect(s.run(`UPDATE t SET n = 1`)).toBe(2);
      });
      expect(s.run(`DELETE FROM t WHERE name = ?`, 'a')).toBe(1);
    });
  });

  describe('RETURNING', () => {
    it('exec answers the rows of INSERT/UPDATE/DELETE … RETURNING', () => {
      const inserted = s.exec<{ id: number; name: string }>(
        `INSERT INTO t (name, n) VALUES (?, ?), (?, ?) RETURNING id, name`,
        'a',
        1,
        'b',
        2,
      );
      expect(inserted.map((r) => r.name)).toEqual(['a', 'b']);
      expect(inserted[1]!.id).toBeGreaterThan(inserted[0]!.id);
      expect(s.exec(`UPDATE t SET n = n * 10 WHERE name = ? RETURNING n`, 'b')).toEqual([{ n: 20 }]);
      expect(s.exec(`DELETE FROM t WHERE name = ? RETURNING name`, 'a')).toEqual([{ name: 'a' }]);
      expect(names(s)).toEqual(['b']);
    });

    it('works inside a transaction, and a rollback undoes it', () => {
      const id = s.transaction(() => s.exec<{ id: number }>(`INSERT INTO t (name) VALUES (?) RETURNING id`, 'kept')[0]!.id);
      expect(s.exec(`SELECT name FROM t WHERE id = ?`, id)).toEqual([{ name: 'kept' }]);
      expect(() =>
        s.transaction(() => {
          s.exec(`INSERT INTO t (name) VALUES (?) RETURNING id`, 'dropped');
          throw new Boom('no');
        }),
      ).toThrow(Boom);
      expect(names(s)).toEqual(['kept']);
    });
  });

  describe('statements are reusable', () => {
    it('the same statement text runs many times with different parameters', () => {
      for (let i = 0; i < 50; i++) s.run(`INSERT INTO t (name, n) VALUES (?, ?)`, `n${i}`, i);
      for (let i = 0; i < 50; i++) {
        expect(s.exec(`SELECT name FROM t WHERE n = ?`, i)).toEqual([{ name: `n${i}` }]);
      }
      expect(count(s)).toBe(50);
    });

    it('a statement that failed runs again, and a half-read statement does not leak into the next call', () => {
      s.run(`INSERT INTO t (name) VALUES (?)`, 'a');
      expect(() => s.run(`INSERT INTO t (name) VALUES (?)`, 'a')).toThrow();
      expect(s.run(`INSERT INTO t (name) VALUES (?)`, 'b')).toBe(1);
      // Same SELECT text, nested in time: each call answers its own complete result.
      const outer = s.exec<{ name: string }>(`SELECT name FROM t WHERE name >= ? ORDER BY name`, 'a');
      const inner = s.exec<{ name: string }>(`SELECT name FROM t WHERE name >= ? ORDER BY name`, 'b');
      expect(outer.map((r) => r.name)).toEqual(['a', 'b']);
      expect(inner.map((r) => r.name)).toEqual(['b']);
    });

    it('parameters of one call do not stick to the next', () => {
      expect(s.exec(`SELECT ? AS a, ? AS b`, 1, 'x')).toEqual([{ a: 1, b: 'x' }]);
      expect(s.exec(`SELECT ? AS a, ? AS b`, null, 2)).toEqual([{ a: null, b: 2 }]);
    });

    it('the same text is usable inside and outside transactions', () => {
      const insert = `INSERT INTO t (name) VALUES (?)`;
      s.run(insert, 'out1');
      s.transaction(() => s.run(insert, 'in'));
      expect(() =>
        s.transaction(() => {
          s.run(insert, 'rolled back');
          throw new Boom('x');
        }),
      ).toThrow(Boom);
      s.run(insert, 'out2');
      expect(names(s)).toEqual(['out1', 'in', 'out2']);
    });
  });
}
