/**
 * The SQLite adapter's commit reports (ports/storage.ts CommitReport, behind the Node host's
 * storage metrics, protocol §15.2): one report per commit that reached the database, with the
 * transactions of its group, its duration and the duration of its WAL sync when it waited for one.
 */
import { describe, expect, it } from 'vitest';
import type { CommitReport } from '../src/ports/storage.js';
import { sqliteFiles } from './helpers/sqlite-files.js';

describe('SqliteStorage commit reports', () => {
  const { storage } = sqliteFiles();

  function observed(options: Parameters<typeof storage>[0] = {}) {
    const reports: CommitReport[] = [];
    const s = storage({ ...options, onCommit: (report) => reports.push(report) });
    s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)`);
    return { s, reports };
  }

  it('one report per group: every top-level transaction of the turn counts, failed ones too, nested ones not', async () => {
    const { s, reports } = observed({ durability: 'full' });
    for (let i = 0; i < 40; i++) s.transaction(() => s.run(`INSERT INTO t (v) VALUES (?)`, `v${i}`));
    s.transaction(() => s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('nested')`)));
    expect(() => s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('v0')`))).toThrow(/UNIQUE/);
    expect(reports).toEqual([]);
    await s.flush();
    expect(reports).toHaveLength(1);
    const [report] = reports;
    expect(report!.transactions).toBe(42);
    expect(report!.seconds).toBeGreaterThan(0);
    // A durable group in full mode waited for the fsync of the WAL, which is part of the commit.
    expect(report!.syncSeconds).not.toBeNull();
    expect(report!.syncSeconds!).toBeGreaterThan(0);
    expect(report!.syncSeconds!).toBeLessThanOrEqual(report!.seconds);
    s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('next')`));
    await s.flush();
    expect(reports.map((r) => r.transactions)).toEqual([42, 1]);
  });

  it('no sync is reported where the commit does not wait for one: relaxed mode, or only non-durable writes', async () => {
    const relaxed = observed({ durability: 'relaxed' });
    relaxed.s.transaction(() => relaxed.s.run(`INSERT INTO t (v) VALUES ('a')`));
    await relaxed.s.flush();
    expect(relaxed.reports).toEqual([{ transactions: 1, seconds: expect.any(Number) as number, syncSeconds: null }]);
  });

  it('in full mode, a group of only {durable: false} writes reports no sync; one durable write makes it sync', async () => {
    const { s, reports } = observed({ durability: 'full' });
    s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('progress')`), { durable: false });
    await s.flush();
    s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('p2')`), { durable: false });
    s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('event')`));
    await s.flush();
    expect(reports.map((r) => [r.transactions, r.syncSeconds === null])).toEqual([
      [1, true],
      [2, false],
    ]);
  });

  it('a group whose only transaction failed commits nothing and reports nothing', async () => {
    const { s, reports } = observed();
    s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('a')`));
    await s.flush();
    expect(() => s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('a')`))).toThrow(/UNIQUE/);
    await s.flush();
    expect(reports.map((r) => r.transactions)).toEqual([1]);
  });

  it('without group commit every transaction is its own commit of one', () => {
    const { s, reports } = observed({ groupCommit: false });
    s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('a')`));
    s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('b')`));
    expect(reports.map((r) => r.transactions)).toEqual([1, 1]);
  });

  it('an observer that throws does not fail the commit', async () => {
    let calls = 0;
    const s = storage({
      onCommit: () => {
        calls++;
        throw new Error('broken observer');
      },
    });
    s.run(`CREATE TABLE t (v TEXT)`);
    s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('a')`));
    await expect(s.flush()).resolves.toBeUndefined();
    expect(calls).toBe(1);
    expect(s.exec<{ n: number }>(`SELECT count(*) AS n FROM t`)[0]!.n).toBe(1);
    expect(s.db.inTransaction).toBe(false);
  });

  it('a group that fails to commit reports nothing, and the next group counts only its own transactions', async () => {
    const { s, reports } = observed();
    s.db.pragma('foreign_keys = ON');
    s.run(`CREATE TABLE parent (id INTEGER PRIMARY KEY)`);
    s.run(`CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`);
    s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('a')`));
    s.transaction(() => s.run(`INSERT INTO child (parent) VALUES (7)`));
    await expect(s.flush()).rejects.toThrow(/FOREIGN KEY/);
    expect(reports).toEqual([]);
    s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('b')`));
    await s.flush();
    expect(reports.map((r) => r.transactions)).toEqual([1]);
  });
});
