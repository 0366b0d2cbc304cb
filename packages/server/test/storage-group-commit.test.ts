/**
 * What only the SQLite adapter promises about commits: group commit (one COMMIT for every
 * transaction of one event-loop turn), and the failure path of a group (flush rejects, epoch
 * increases, the whole group is gone, the next one works).
 *
 * The adapter is observed from outside only: its public better-sqlite3 handle (`db`) lets the test
 * wrap the statements it prepares (to count COMMITs), a second connection sees what is really
 * committed, and a deferred foreign-key violation makes a COMMIT fail on demand.
 */
import type Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { SqliteStorage } from '../src/adapters/sqlite/sqlite-storage.js';
import { sqliteFiles } from './helpers/sqlite-files.js';

/** Counts the COMMIT statements the adapter runs, by wrapping the statements it prepares. */
function countCommits(storage: SqliteStorage): { readonly commits: number } {
  const counter = { commits: 0 };
  const db = storage.db as { prepare: Database.Database['prepare'] };
  const prepare = db.prepare.bind(storage.db);
  db.prepare = ((sql: string) => {
    const stmt = prepare(sql);
    if (/^\s*COMMIT\b/i.test(sql)) {
      const run = stmt.run.bind(stmt);
      (stmt as { run: typeof stmt.run }).run = ((...params: never[]) => {
        counter.commits++;
        return run(...params);
      }) as typeof stmt.run;
    }
    return stmt;
  }) as Database.Database['prepare'];
  return counter;
}

/**
 * Makes the next COMMIT containing an orphan row of `child` fail: SQLite checks a deferred
 * foreign key only when the outermost transaction commits.
 */
function armDeferredForeignKey(storage: SqliteStorage): void {
  storage.db.pragma('foreign_keys = ON');
  // The pragma is ignored inside a transaction: arm only while no group is open.
  expect(storage.db.pragma('foreign_keys', { simple: true })).toBe(1);
  storage.run(`CREATE TABLE parent (id INTEGER PRIMARY KEY)`);
  storage.run(`CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`);
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('SqliteStorage adapter specifics', () => {
  const { storage, reader, rows } = sqliteFiles();

  describe('group commit', () => {
    it('every transaction of one turn joins one COMMIT, made visible to other connections together', async () => {
      const s = storage();
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`);
      const counter = countCommits(s);
      const other = reader();
      for (let i = 0; i < 100; i++) s.transaction(() => s.run(`INSERT INTO t (v) VALUES (?)`, `v${i}`));
      // Visible to this connection at once, not yet committed for anyone else.
      expect(s.exec<{ n: number }>(`SELECT count(*) AS n FROM t`)[0]!.n).toBe(100);
      expect(s.db.inTransaction).toBe(true);
      expect(rows(other)).toBe(0);
      expect(counter.commits).toBe(0);
      await s.flush();
      expect(counter.commits).toBe(1);
      expect(s.db.inTransaction).toBe(false);
      expect(rows(other)).toBe(100);
    });

    it('transactions of separate turns commit separately; every flush covers its own group', async () => {
      const s = storage();
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`);
      const counter = countCommits(s);
      const other = reader();
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('a')`));
      const first = s.flush();
      await turn();
      await turn();
      expect(counter.commits).toBe(1);
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('b')`));
      const second = s.flush();
      expect(second).not.toBe(first);
      await Promise.all([first, second]);
      expect(counter.commits).toBe(2);
      expect(rows(other)).toBe(2);
    });

    it('a transaction that fails inside a group rolls back alone; the others commit', async () => {
      const s = storage();
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)`);
      const counter = countCommits(s);
      const other = reader();
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('a')`));
      expect(() =>
        s.transaction(() => {
          s.run(`INSERT INTO t (v) VALUES ('b')`);
          s.run(`INSERT INTO t (v) VALUES ('a')`);
        }),
      ).toThrow(/UNIQUE/);
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('c')`));
      await s.flush();
      expect(counter.commits).toBe(1);
      expect(other.prepare(`SELECT v FROM t ORDER BY id`).pluck().all()).toEqual(['a', 'c']);
      expect(s.epoch).toBe(0);
    });

    it('the first transaction of a group fails alone too (it runs without a savepoint); the rest of the turn commits together', async () => {
      const s = storage();
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)`);
      s.run(`INSERT INTO t (v) VALUES ('a')`);
      const counter = countCommits(s);
      const other = reader();
      expect(() =>
        s.transaction(() => {
          s.run(`INSERT INTO t (v) VALUES ('b')`);
          s.run(`INSERT INTO t (v) VALUES ('a')`);
        }),
      ).toThrow(/UNIQUE/);
      expect(s.db.inTransaction).toBe(false);
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('c')`));
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('d')`));
      await s.flush();
      expect(counter.commits).toBe(1);
      expect(other.prepare(`SELECT v FROM t ORDER BY id`).pluck().all()).toEqual(['a', 'c', 'd']);
      expect(s.epoch).toBe(0);
    });

    it('a singleWrite member of a group runs without a savepoint and commits with the group', async () => {
      const s = storage();
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)`);
      const prepared: string[] = [];
      const prepare = s.db.prepare.bind(s.db);
      s.db.prepare = ((sql: string) => (prepared.push(sql), prepare(sql))) as typeof s.db.prepare;
      const counter = countCommits(s);
      for (const v of ['a', 'b', 'c']) s.transaction(() => s.run(`INSERT INTO t (v) VALUES (?)`, v), { singleWrite: true });
      await s.flush();
      expect(counter.commits).toBe(1);
      expect(prepared.filter((sql) => /SAVEPOINT|RELEASE/.test(sql))).toEqual([]);
      expect(reader().prepare(`SELECT v FROM t ORDER BY id`).pluck().all()).toEqual(['a', 'b', 'c']);
    });

    it('a singleWrite member whose one write fails leaves nothing behind; the group commits the rest', async () => {
      const s = storage();
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)`);
      s.run(`INSERT INTO t (v) VALUES ('a')`);
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('b')`));
      // Reads do not count as writes.
      expect(() =>
        s.transaction(
          () => {
            s.exec(`SELECT v FROM t`);
            s.run(`INSERT INTO t (v) VALUES ('a')`);
          },
          { singleWrite: true },
        ),
      ).toThrow(/UNIQUE/);
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('c')`), { singleWrite: true });
      await s.flush();
      expect(reader().prepare(`SELECT v FROM t ORDER BY id`).pluck().all()).toEqual(['a', 'b', 'c']);
      expect(s.epoch).toBe(0);
    });

    it('a singleWrite member that writes twice, or fails after its write, fails its whole group', async () => {
      for (const second of [() => undefined, (s: SqliteStorage) => s.run(`INSERT INTO t (v) VALUES ('x2')`)]) {
        const s = storage();
        s.run(`CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)`);
        s.run(`DELETE FROM t`);
        const before = s.epoch;
        s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('a')`));
        const flushed = s.flush();
        expect(() =>
          s.transaction(
            () => {
              s.run(`INSERT INTO t (v) VALUES ('x')`);
              second(s);
              throw new Error('after the write');
            },
            { singleWrite: true },
          ),
        ).toThrow(second.length === 0 ? /after the write/ : /declared singleWrite ran a second writing statement/);
        await expect(flushed).rejects.toThrow();
        expect(s.epoch).toBe(before + 1);
        expect(s.db.inTransaction).toBe(false);
        // Nothing of the group was committed; the next transaction starts a new group.
        s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('c')`), { singleWrite: true });
        await s.flush();
        expect(s.exec<{ v: string }>(`SELECT v FROM t ORDER BY id`).map((r) => r.v)).toEqual(['c']);
        s.close();
      }
    });

    it('a group whose only transaction failed commits nothing and its flush resolves', async () => {
      const s = storage();
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)`);
      s.run(`INSERT INTO t (v) VALUES ('a')`);
      const counter = countCommits(s);
      expect(() => s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('a')`))).toThrow(/UNIQUE/);
      await s.flush();
      expect(counter.commits).toBe(0);
      expect(rows(reader())).toBe(1);
      expect(s.epoch).toBe(0);
    });

    it('with groupCommit=false every transaction commits on its own, before transaction() returns', async () => {
      const s = storage({ groupCommit: false });
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`);
      const counter = countCommits(s);
      const other = reader();
      for (let i = 0; i < 10; i++) {
        s.transaction(() => s.run(`INSERT INTO t (v) VALUES (?)`, `v${i}`));
        expect(rows(other)).toBe(i + 1);
      }
      expect(counter.commits).toBe(10);
      expect(s.db.inTransaction).toBe(false);
      await s.flush();
      expect(counter.commits).toBe(10);
    });

    it('nested transactions inside a group commit once, with the outer one', async () => {
      const s = storage();
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`);
      const counter = countCommits(s);
      s.transaction(() => {
        s.run(`INSERT INTO t (v) VALUES ('outer')`);
        s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('inner')`));
      });
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('second')`));
      await s.flush();
      expect(counter.commits).toBe(1);
      expect(rows(reader())).toBe(3);
    });

    it('flush with nothing pending resolves at once, before the next turn', async () => {
      const s = storage();
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`);
      const order: string[] = [];
      setImmediate(() => order.push('immediate'));
      await s.flush();
      order.push('flushed');
      expect(order).toEqual(['flushed']);
      // The same after a group has committed.
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('x')`));
      await s.flush();
      order.length = 0;
      setImmediate(() => order.push('immediate'));
      await s.flush();
      order.push('flushed');
      expect(order).toEqual(['flushed']);
    });

    it('a pending group waits for the commit turn', async () => {
      const s = storage();
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`);
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('x')`));
      let flushed = false;
      const done = s.flush().then(() => {
        flushed = true;
      });
      await Promise.resolve();
      await Promise.resolve();
      expect(flushed).toBe(false);
      await done;
      expect(flushed).toBe(true);
    });

    it('close commits a pending group', async () => {
      const s = storage();
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`);
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('x')`));
      const flushed = s.flush();
      s.close();
      await expect(flushed).resolves.toBeUndefined();
      expect(rows(reader())).toBe(1);
      // A closed storage answers flush at once.
      await expect(s.flush()).resolves.toBeUndefined();
    });
  });

  describe('a group that fails to commit', () => {
    it('rejects flush with the commit error, bumps the epoch once and loses the whole group', async () => {
      const s = storage();
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`);
      armDeferredForeignKey(s);
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('committed')`));
      await s.flush();
      const other = reader();
      expect(s.epoch).toBe(0);

      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('innocent')`));
      const early = s.flush();
      const returned = s.transaction(() => {
        s.run(`INSERT INTO t (v) VALUES ('guilty')`);
        s.run(`INSERT INTO child (id, parent) VALUES (1, 999)`);
        return 'returned normally';
      });
      // Each transaction succeeded on its own; only the COMMIT of the group fails.
      expect(returned).toBe('returned normally');
      const late = s.flush();
      expect(late).toBe(early);
      await expect(early).rejects.toThrow(/FOREIGN KEY/);
      await expect(late).rejects.toThrow(/FOREIGN KEY/);
      expect(s.epoch).toBe(1);
      // Every transaction of the group is gone, on this connection and for others.
      expect(s.db.inTransaction).toBe(false);
      expect(s.exec<{ v: string }>(`SELECT v FROM t ORDER BY id`).map((r) => r.v)).toEqual(['committed']);
      expect(s.exec(`SELECT * FROM child`)).toEqual([]);
      expect(rows(other)).toBe(1);
    });

    it('the next group commits normally and the epoch stays', async () => {
      const s = storage();
      s.run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`);
      armDeferredForeignKey(s);
      s.transaction(() => s.run(`INSERT INTO child (id, parent) VALUES (1, 999)`));
      await expect(s.flush()).rejects.toThrow(/FOREIGN KEY/);
      expect(s.epoch).toBe(1);
      s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('after')`));
      await expect(s.flush()).resolves.toBeUndefined();
      expect(s.epoch).toBe(1);
      expect(rows(reader())).toBe(1);
      // A group that does satisfy the deferred constraint commits.
      s.transaction(() => {
        s.run(`INSERT INTO child (id, parent) VALUES (2, 5)`);
        s.run(`INSERT INTO parent (id) VALUES (5)`);
      });
      await expect(s.flush()).resolves.toBeUndefined();
      expect(s.epoch).toBe(1);
    });

    it('a group nobody flushes does not surface as an unhandled rejection', async () => {
      const s = storage();
      armDeferredForeignKey(s);
      s.transaction(() => s.run(`INSERT INTO child (id, parent) VALUES (1, 999)`));
      await turn();
      await turn();
      expect(s.epoch).toBe(1);
      // (vitest fails the run on an unhandled rejection.)
    });

    it('each failing group bumps the epoch again', async () => {
      const s = storage();
      armDeferredForeignKey(s);
      for (let i = 1; i <= 3; i++) {
        s.transaction(() => s.run(`INSERT INTO child (id, parent) VALUES (?, 999)`, i));
        await expect(s.flush()).rejects.toThrow(/FOREIGN KEY/);
        expect(s.epoch).toBe(i);
      }
    });
  });
});
