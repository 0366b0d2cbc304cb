/**
 * Checkpoints off the event loop (checkpointer.ts): when the server's connection starts the WAL
 * over, a real worker thread against a real file, and what happens when the worker fails.
 */
import { EventEmitter } from 'node:events';
import { existsSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../../test/helpers/subscriptions.js';
import { sqliteFiles } from '../../../test/helpers/sqlite-files.js';
import { afterCheckpoint, type CheckpointReport, type CheckpointWorker } from './checkpointer.js';
import { INLINE_CHECKPOINT_FRAMES } from './connection-settings.js';
import { SqliteStorage } from './sqlite-storage.js';

let file: string;
const files = sqliteFiles((fresh) => (file = fresh.file), 'rivulet-checkpointer-');

function open(options: ConstructorParameters<typeof SqliteStorage>[1]): SqliteStorage {
  const s = files.storage({ durability: 'relaxed', ...options });
  s.exec('CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body TEXT)');
  return s;
}

/** Commits `n` groups of one row of `bytes` characters each, one group per turn. */
async function write(s: SqliteStorage, n: number, bytes = 3000): Promise<void> {
  for (let i = 0; i < n; i++) {
    s.transaction(() => s.run('INSERT INTO t (body) VALUES (?)', 'x'.repeat(bytes)));
    await s.flush();
  }
}

/** A worker the test answers for: it records what it was asked and emits what the test says. */
class FakeWorker extends EventEmitter implements CheckpointWorker {
  asked: string[] = [];
  postMessage(message: 'checkpoint' | 'close'): void {
    this.asked.push(message);
    if (message === 'close') queueMicrotask(() => this.emit('exit', 0));
  }
  unref(): void {}
  ref(): void {}
  answer(report: CheckpointReport): void {
    this.emit('message', report);
  }
}

describe('afterCheckpoint', () => {
  const limits = { restartFrames: 1000, catchUpFrames: 512, maxFrames: 16_000 };
  it('starts the WAL over only from restartFrames on', () => {
    expect(afterCheckpoint({ log: 999, checkpointed: 999 }, limits)).toBe('wait');
    expect(afterCheckpoint({ log: 1000, checkpointed: 1000 }, limits)).toBe('catch-up');
  });
  it('catches up at most catchUpFrames left behind', () => {
    expect(afterCheckpoint({ log: 2000, checkpointed: 1488 }, limits)).toBe('catch-up');
    expect(afterCheckpoint({ log: 2000, checkpointed: 1487 }, limits)).toBe('wait');
  });
  it('catches up whatever is left once the WAL reaches maxFrames', () => {
    expect(afterCheckpoint({ log: 15_999, checkpointed: 0 }, limits)).toBe('wait');
    expect(afterCheckpoint({ log: 16_000, checkpointed: 0 }, limits)).toBe('catch-up');
  });
});

describe('background checkpoints on a worker thread', () => {
  it('copies the WAL off the event loop and starts it over, with every row kept', async () => {
    const s = open({ backgroundCheckpoints: { intervalMs: 1, restartFrames: 20, catchUpFrames: 100_000 } });
    // The server's connection no longer checkpoints in its commits.
    expect(s.db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    await write(s, 60);
    await eventually(() => s.checkpointer!.catchUps > 0, 'a catch-up');
    const logBefore = s.checkpointer!.lastLog;
    expect(logBefore).toBeGreaterThanOrEqual(20);
    // Started over: the next commits write from the WAL's start, so the WAL holds only them (a WAL
    // not started over only grows). Waiting for any later checkpoint instead was a race: one asked
    // for before these commits may answer after them, with the WAL as it was.
    await write(s, 3);
    await eventually(() => s.checkpointer!.lastLog < logBefore, 'a checkpoint of the WAL started over');
    expect(s.checkpointer!.failure).toBeNull();
    const walBytes = statSync(`${file}-wal`).size;
    await write(s, 60);
    await eventually(() => s.checkpointer!.catchUps > 1, 'a second catch-up');
    await write(s, 60);
    // The file is reused from its start, not grown by every commit (60 rows of 3 KB are ~45 pages).
    expect(statSync(`${file}-wal`).size).toBeLessThan(walBytes + 200 * 4096);
    await s.closeFully();
    // The worker's connection closed last and folded the WAL into the file.
    expect(existsSync(`${file}-wal`)).toBe(false);
    const again = open({});
    expect(again.exec<{ n: number }>('SELECT count(*) AS n FROM t')[0]!.n).toBe(183);
  });

  it('catches up whatever is left once the WAL reaches maxFrames, not one checkpoint before', async () => {
    const s = open({ backgroundCheckpoints: { intervalMs: 1, restartFrames: 20, catchUpFrames: 0, maxFrames: 60 } });
    await write(s, 5);
    // A reader's snapshot keeps every checkpoint from copying the frames committed after it, so
    // each leaves some behind: more than catchUpFrames (0) until the WAL reaches maxFrames.
    const reader = new Database(file, { readonly: true });
    try {
      reader.prepare('BEGIN').run();
      reader.prepare('SELECT count(*) FROM t').get();
      let below = 0;
      while (s.checkpointer!.lastLog < 60) {
        const seen = s.checkpointer!.checkpoints;
        await write(s, 1);
        await eventually(() => s.checkpointer!.checkpoints > seen, 'a checkpoint');
        if (s.checkpointer!.lastLog < 60) {
          below++;
          expect(s.checkpointer!.catchUps).toBe(0);
        }
      }
      expect(below).toBeGreaterThan(10);
      // (More than one when a checkpoint asked for meanwhile also found the WAL past maxFrames.)
      expect(s.checkpointer!.catchUps).toBeGreaterThanOrEqual(1);
    } finally {
      reader.prepare('COMMIT').run();
      reader.close();
    }
    expect(s.checkpointer!.failure).toBeNull();
  });

  it('leaves a WAL below restartFrames as it is', async () => {
    const s = open({ backgroundCheckpoints: { intervalMs: 1, restartFrames: 1_000_000 } });
    await write(s, 10);
    await eventually(() => s.checkpointer!.checkpoints > 0, 'a checkpoint');
    await write(s, 2);
    expect(s.checkpointer!.catchUps).toBe(0);
  });
});

describe('the checkpointer with a worker the test drives', () => {
  function driven(options: { restartFrames?: number } = {}) {
    const worker = new FakeWorker();
    const failures: string[] = [];
    const s = open({
      backgroundCheckpoints: { intervalMs: 1, restartFrames: options.restartFrames ?? 10, startWorker: () => worker, onFailure: (reason) => failures.push(reason) },
    });
    return { s, worker, failures };
  }

  it('asks for a checkpoint after a commit, not while nothing was written', async () => {
    const { s, worker } = driven();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(worker.asked).toEqual([]);
    await write(s, 1);
    await eventually(() => worker.asked.length === 1, 'a request');
    expect(worker.asked).toEqual(['checkpoint']);
  });

  it('catches up only between transactions: a report met inside one waits for the next commit', async () => {
    const { s, worker } = driven();
    await write(s, 1);
    await eventually(() => worker.asked.length === 1, 'a request');
    s.transaction(() => {
      s.run('INSERT INTO t (body) VALUES (?)', 'y');
      worker.answer({ busy: 0, log: 50, checkpointed: 50 });
      expect(s.checkpointer!.catchUps).toBe(0);
    });
    await s.flush();
    expect(s.checkpointer!.catchUps).toBe(1);
  });

  it('does not catch up after a busy checkpoint, nor with more than catchUpFrames left', async () => {
    const { s, worker } = driven();
    await write(s, 1);
    await eventually(() => worker.asked.length === 1, 'a request');
    worker.answer({ busy: 1, log: 600, checkpointed: 600 });
    // One frame more than catchUpFrames (512) left behind: not yet.
    worker.answer({ busy: 0, log: 600, checkpointed: 87 });
    expect(s.checkpointer!.catchUps).toBe(0);
    worker.answer({ busy: 0, log: 600, checkpointed: 88 });
    expect(s.checkpointer!.catchUps).toBe(1);
  });

  it('goes back to checkpoints in the commits when the worker reports an error', async () => {
    const { s, worker, failures } = driven();
    await write(s, 1);
    await eventually(() => worker.asked.length === 1, 'a request');
    worker.answer({ error: 'SQLITE_IOERR: disk I/O error' });
    expect(s.checkpointer!.failure).toBe('SQLITE_IOERR: disk I/O error');
    // Told once, though the worker's exit follows.
    worker.emit('exit', 0);
    expect(failures).toEqual(['SQLITE_IOERR: disk I/O error']);
    expect(s.db.pragma('wal_autocheckpoint', { simple: true })).toBe(INLINE_CHECKPOINT_FRAMES);
    await write(s, 2);
    await new Promise((resolve) => setTimeout(resolve, 10));
    // Told to close its connection at once, and never asked for a checkpoint again.
    expect(worker.asked).toEqual(['checkpoint', 'close']);
  });

  it('goes back to checkpoints in the commits when the worker exits or cannot start', async () => {
    const { s, worker, failures } = driven();
    worker.emit('exit', 1);
    expect(s.checkpointer!.failure).toBe('the checkpoint worker exited');
    expect(failures).toEqual(['the checkpoint worker exited']);
    expect(s.db.pragma('wal_autocheckpoint', { simple: true })).toBe(INLINE_CHECKPOINT_FRAMES);
    await s.closeFully();
    const refused = open({
      backgroundCheckpoints: {
        startWorker: () => {
          throw new Error('no threads here');
        },
      },
    });
    expect(refused.checkpointer!.failure).toBe('no threads here');
    expect(refused.db.pragma('wal_autocheckpoint', { simple: true })).toBe(INLINE_CHECKPOINT_FRAMES);
    await write(refused, 2);
    expect(refused.exec<{ n: number }>('SELECT count(*) AS n FROM t')[0]!.n).toBe(2);
  });
});

describe('background checkpoints refused', () => {
  it('with exclusive locking, whose connection no other can share', () => {
    expect(() => new SqliteStorage(file, { exclusive: true, backgroundCheckpoints: true })).toThrow(
      'storage: background checkpoints need a file database opened without exclusive locking',
    );
  });
  it('for an in-memory database', () => {
    expect(() => new SqliteStorage(':memory:', { backgroundCheckpoints: true })).toThrow('storage: background checkpoints need a file database');
  });
});
