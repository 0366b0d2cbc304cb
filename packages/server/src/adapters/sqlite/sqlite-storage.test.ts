/**
 * The SQLite adapter with its durable sync off the event loop (decision 010), over a real database
 * file but with the WAL's fdatasync held by the test: a sync runs (for real) only when the test
 * lets it end, so which flush waits for which sync is decided by the test, not by the disk.
 */
import { closeSync, fdatasyncSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RivuletError } from '@rivulet/contract';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CommitReport } from '../../ports/storage.js';
import { SqliteStorage, type SqliteStorageOptions } from './sqlite-storage.js';

/** Lets the poll and check phases run: an open group commits in the check phase of its turn. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

interface Held {
  fd: number;
  done: (error: NodeJS.ErrnoException | null) => void;
}

let dir: string;
let opened: SqliteStorage[];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rivulet-durable-sync-'));
  opened = [];
});

afterEach(() => {
  for (const s of opened) s.close();
  rmSync(dir, { recursive: true, force: true });
});

function open(options: SqliteStorageOptions = {}) {
  const held: Held[] = [];
  let syncNow = 0;
  const closed: number[] = [];
  let clock = 0;
  const s = new SqliteStorage(join(dir, 'data.sqlite'), {
    backgroundSyncMs: 0,
    now: () => clock,
    ...options,
    walSync: {
      fdatasync: (fd, done) => held.push({ fd, done }),
      fdatasyncSync: (fd) => {
        syncNow++;
        fdatasyncSync(fd);
      },
      close: (fd) => {
        closed.push(fd);
        closeSync(fd);
      },
      ...options.walSync,
    },
  });
  opened.push(s);
  s.run(`CREATE TABLE t (v TEXT)`);
  /** Runs the oldest held sync for real, or fails it, and tells its callback. */
  const release = (error: NodeJS.ErrnoException | null = null) => {
    const sync = held.shift()!;
    if (!error) fdatasyncSync(sync.fd);
    sync.done(error);
  };
  const write = (v: string, durable = true) => s.transaction(() => s.run(`INSERT INTO t (v) VALUES (?)`, v), { durable });
  /** Watches a promise: `state()` says whether it has settled and how. */
  const watch = (promise: Promise<void>) => {
    let state = 'pending';
    promise.then(
      () => (state = 'resolved'),
      (error: Error) => (state = `rejected: ${error.message}`),
    );
    return () => state;
  };
  return { s, held, release, write, watch, syncNow: () => syncNow, closed, tick: (ms: number) => (clock += ms) };
}

const eio = () => Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO', errno: -5 });
const FAILED = 'storage failed: the write-ahead log could not be synced to disk (EIO); nothing more is read or written until the server restarts';

describe('SqliteStorage: the durable sync off the event loop', () => {
  it('flush() waits for the sync of a group that has committed (no open group left) until that sync ends', async () => {
    const h = open();
    h.write('a');
    const first = h.watch(h.s.flush());
    await turn();
    // Committed (a second connection would see it) but not durable: the sync is held.
    expect(h.s.db.inTransaction).toBe(false);
    expect(h.held).toHaveLength(1);
    const later = h.watch(h.s.flush()); // no group open now: it must still wait for the sync
    await turn();
    expect([first(), later()]).toEqual(['pending', 'pending']);
    h.release();
    await turn();
    expect([first(), later()]).toEqual(['resolved', 'resolved']);
    expect(h.s.walSyncs).toBe(1);
    expect(h.s.flush()).toBeInstanceOf(Promise);
    await expect(h.s.flush()).resolves.toBeUndefined();
  });

  it('groups committing while a sync runs wait for the next one, which covers all of them; promises settle in commit order', async () => {
    const h = open();
    const order: string[] = [];
    h.write('a');
    void h.s.flush().then(() => order.push('a'));
    await turn();
    h.write('b');
    void h.s.flush().then(() => order.push('b'));
    await turn();
    h.write('c');
    void h.s.flush().then(() => order.push('c'));
    await turn();
    // Three groups committed, one sync in flight: b and c were not yet on disk when it started.
    expect(h.held).toHaveLength(1);
    h.release();
    await turn();
    expect(order).toEqual(['a']);
    expect(h.held).toHaveLength(1);
    h.release();
    await turn();
    expect(order).toEqual(['a', 'b', 'c']);
    expect(h.s.walSyncs).toBe(2);
    expect(h.held).toHaveLength(0);
  });

  it('a {durable: false} group resolves at once when nothing waits, and after an earlier durable group when one does', async () => {
    const h = open();
    h.write('progress', false);
    await expect(h.s.flush()).resolves.toBeUndefined();
    expect(h.held).toHaveLength(0);
    h.write('a');
    const a = h.watch(h.s.flush());
    await turn();
    h.write('progress', false);
    const progress = h.watch(h.s.flush());
    await turn();
    expect([a(), progress()]).toEqual(['pending', 'pending']);
    h.release();
    await turn();
    expect([a(), progress()]).toEqual(['resolved', 'resolved']);
    expect(h.held).toHaveLength(0);
  });

  it('relaxed: groups resolve at commit; the background sync may be held without holding anyone', async () => {
    const h = open({ durability: 'relaxed', backgroundSyncMs: 1 });
    h.write('a');
    await h.s.flush();
    expect(h.held).toHaveLength(1); // the background sync, still running
    h.write('b');
    await h.s.flush();
    expect(h.s.walSyncs).toBe(0);
    h.release();
  });

  it('commit reports come when a group is durable: one per group, the sync time once per sync', async () => {
    const reports: CommitReport[] = [];
    const h = open({ onCommit: (r) => reports.push(r) });
    h.write('a');
    await turn();
    h.write('b');
    h.write('c');
    await turn();
    expect(reports).toEqual([]);
    h.tick(4);
    h.release(); // a's sync: started at 0, ends at 4
    await turn();
    expect(reports).toEqual([{ transactions: 1, seconds: 0.004, syncSeconds: 0.004 }]);
    h.tick(6);
    h.release(); // the sync of the group of b and c: started at 4, ends at 10
    await turn();
    expect(reports[1]).toEqual({ transactions: 2, seconds: 0.01, syncSeconds: 0.006 });
    h.write('d');
    h.write('e');
    await turn();
    h.write('f');
    await turn();
    h.release();
    h.release();
    await turn();
    // f committed while the sync of d and e ran; its own sync reports its own time.
    expect(reports.slice(2).map((r) => [r.transactions, r.syncSeconds])).toEqual([
      [2, 0],
      [1, 0],
    ]);
  });

  describe('a failed sync', () => {
    it('rejects the groups it covered and those waiting, bumps the epoch, and refuses everything after', async () => {
      const h = open();
      h.write('a');
      const a = h.s.flush();
      await turn();
      h.write('b');
      const b = h.s.flush();
      await turn();
      h.write('c'); // still open: it never commits
      const c = h.s.flush();
      const epoch = h.s.epoch;
      h.release(eio());
      for (const p of [a, b, c]) await expect(p).rejects.toThrow(FAILED);
      const error = await a.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RivuletError);
      expect((error as RivuletError).code).toBe('UNAVAILABLE');
      expect((error as RivuletError).cause).toMatchObject({ code: 'EIO' });
      expect(h.s.epoch).toBe(epoch + 1);
      expect(h.s.failure?.message).toBe(FAILED);
      expect(h.s.db.inTransaction).toBe(false);
      // Refused from now on: writes, reads, flush and backups (a later sync that succeeds would
      // prove nothing about the pages the failed one could not write).
      expect(() => h.write('d')).toThrow(FAILED);
      expect(() => h.s.exec(`SELECT count(*) AS n FROM t`)).toThrow(FAILED);
      expect(() => h.s.execRows(`SELECT v FROM t`)).toThrow(FAILED);
      expect(() => h.s.run(`DELETE FROM t`)).toThrow(FAILED);
      await expect(h.s.flush()).rejects.toMatchObject({ code: 'UNAVAILABLE', message: FAILED });
      await expect(h.s.backup(join(dir, 'copy.sqlite'), 100)).rejects.toThrow(FAILED);
      expect(h.held).toHaveLength(0);
      expect(h.s.epoch).toBe(epoch + 1);
      // c rolled back: only a and b (committed, durability unknown) are in the file.
      h.s.close();
      const reopened = new SqliteStorage(join(dir, 'data.sqlite'));
      opened.push(reopened);
      expect(reopened.exec<{ v: string }>(`SELECT v FROM t ORDER BY v`).map((r) => r.v)).toEqual(['a', 'b']);
    });

    it('without group commit the transaction itself throws the failure', () => {
      const h = open({ groupCommit: false, walSync: { fdatasyncSync: () => { throw eio(); } } });
      expect(() => h.write('a')).toThrow(FAILED);
      expect(h.s.failure?.code).toBe('UNAVAILABLE');
      expect(() => h.write('b')).toThrow(FAILED);
    });
  });

  it('a backup is answered only once every group it copied is durable', async () => {
    const h = open();
    h.write('a');
    await turn();
    expect(h.held).toHaveLength(1);
    let answered = false;
    const copy = h.s.backup(join(dir, 'copy.sqlite'), 1000).then((pages) => {
      answered = true;
      return pages;
    });
    // The copy of a few pages is made in a turn or two; its answer waits for the held sync.
    for (let i = 0; i < 20; i++) await turn();
    expect(answered).toBe(false);
    h.release();
    expect(await copy).toBeGreaterThan(0);
    const restored = new SqliteStorage(join(dir, 'copy.sqlite'));
    opened.push(restored);
    expect(restored.exec<{ v: string }>(`SELECT v FROM t`)).toEqual([{ v: 'a' }]);
  });

  describe('close()', () => {
    it('with a sync in flight and groups waiting: syncs once on the spot, settles every promise, closes the descriptor once', async () => {
      const h = open();
      h.write('a');
      const a = h.watch(h.s.flush());
      await turn();
      h.write('b');
      const b = h.watch(h.s.flush());
      await turn();
      h.write('c'); // open: close commits it
      const c = h.watch(h.s.flush());
      expect(h.held).toHaveLength(1);
      h.s.close();
      expect(h.syncNow()).toBe(1);
      await turn();
      expect([a(), b(), c()]).toEqual(['resolved', 'resolved', 'resolved']);
      // The thread-pool sync still holds the descriptor: it is closed when that sync ends.
      expect(h.closed).toEqual([]);
      h.release();
      expect(h.closed).toHaveLength(1);
      h.s.close();
      expect(h.closed).toHaveLength(1);
      const reopened = new SqliteStorage(join(dir, 'data.sqlite'));
      opened.push(reopened);
      expect(reopened.exec<{ n: number }>(`SELECT count(*) AS n FROM t`)[0]!.n).toBe(3);
    });

    it('with nothing in flight: no sync, the descriptor closed at once', async () => {
      const h = open();
      h.write('a');
      await turn();
      h.release();
      await h.s.flush();
      h.s.close();
      expect(h.syncNow()).toBe(0);
      expect(h.closed).toHaveLength(1);
    });
  });
});

describe('SqliteStorage: savepoint journals in memory', () => {
  it('keeps the statement journal in memory (temp_store = MEMORY) and a group member that rewrote many pages still undoes alone', async () => {
    const { s, release } = open();
    expect(s.exec<{ temp_store: number }>('PRAGMA temp_store')).toEqual([{ temp_store: 2 }]);
    // 400 rows of 2000 bytes: ~200 pages, past SQLite's 64 KiB before a journal spills to a file.
    s.transaction(() => {
      for (let i = 0; i < 400; i++) s.run(`INSERT INTO t (v) VALUES (?)`, `${i}:`.padEnd(2000, 'a'));
    });
    await turn();
    release();
    // One group: the first member's write stays; the second rewrites every row in its savepoint and fails.
    s.transaction(() => s.run(`INSERT INTO t (v) VALUES ('kept')`));
    const failing = () =>
      s.transaction(() => {
        s.run(`UPDATE t SET v = replace(v, 'a', 'b')`);
        throw new Error('member fails');
      });
    expect(failing).toThrow('member fails');
    await turn();
    release();
    expect(s.exec<{ n: number }>(`SELECT count(*) AS n FROM t WHERE v LIKE '%b%'`)).toEqual([{ n: 0 }]);
    expect(s.exec<{ n: number }>(`SELECT count(*) AS n FROM t`)).toEqual([{ n: 401 }]);
  });
});
