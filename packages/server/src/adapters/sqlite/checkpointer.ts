/**
 * WAL checkpoints off the event loop (docs/architecture.md "Checkpoints in the background").
 *
 * SQLite copies the WAL into the database file at a checkpoint, and by default does it inside the
 * committing call: on the event loop, with an fsync of the WAL before and of the database file
 * after (under load 15–30 ms every half second, the longest stall the server had). Here a worker
 * thread with a connection of its own runs PASSIVE checkpoints, which copy what is in the WAL while
 * the server's connection goes on committing. They never restart the WAL: the server's connection
 * commits again before its next transaction begins, so the WAL is never wholly copied when one
 * begins, and only then does SQLite write the next frames from the WAL's start. So once a
 * checkpoint left at most `catchUpFrames` frames behind a WAL of at least `restartFrames`, the
 * server's connection copies that remainder itself, between transactions (a short stop), and its
 * next commit starts the WAL over. A WAL past `maxFrames` is caught up whatever is left, so it
 * cannot grow without bound when the worker never gets close.
 *
 * The worker's connection syncs as SQLite's own checkpoints do (the WAL before copying, the
 * database file after), so durability is unchanged. Should the worker fail, the server's
 * connection checkpoints inline again (`wal_autocheckpoint`), as without this class.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { INLINE_CHECKPOINT_FRAMES } from './connection-settings.js';

export interface CheckpointerOptions {
  /** Least time between two checkpoints of the worker, in ms (default 400). */
  intervalMs?: number;
  /** A WAL of fewer frames is not started over (default 1000, SQLite's own checkpoint size). */
  restartFrames?: number;
  /** The most frames the server's connection copies itself to start the WAL over (default 512). */
  catchUpFrames?: number;
  /** A WAL of this many frames is caught up whatever is left (default 16000, 64 MiB of 4 KiB pages). */
  maxFrames?: number;
  /** Makes the worker (tests inject failing ones); default a worker thread running CHECKPOINT_WORKER. */
  startWorker?: (file: string) => CheckpointWorker;
  /** Told once, why the worker failed (checkpoints are inline from then on); a throw is ignored. */
  onFailure?: (reason: string) => void;
}

/** What the worker answers for one checkpoint: SQLite's `wal_checkpoint` row, or why it failed. */
export interface CheckpointReport {
  busy?: number;
  /** Frames in the WAL. */
  log?: number;
  /** Frames of those copied into the database file. */
  checkpointed?: number;
  error?: string;
}

/** The part of a worker thread this class uses. */
export interface CheckpointWorker {
  postMessage(message: 'checkpoint' | 'close'): void;
  on(event: 'message', listener: (report: CheckpointReport) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'exit', listener: (code: number) => void): unknown;
  unref(): void;
  ref(): void;
}

/**
 * What to do after a checkpoint of the worker: start the WAL over from the server's connection
 * (`catch-up`), or leave it to grow until a later one (`wait`).
 */
export function afterCheckpoint(report: Required<Pick<CheckpointReport, 'log' | 'checkpointed'>>, limits: Required<Pick<CheckpointerOptions, 'restartFrames' | 'catchUpFrames' | 'maxFrames'>>): 'catch-up' | 'wait' {
  if (report.log >= limits.maxFrames) return 'catch-up';
  if (report.log < limits.restartFrames) return 'wait';
  return report.log - report.checkpointed <= limits.catchUpFrames ? 'catch-up' : 'wait';
}

/**
 * The worker's code (a CommonJS script run with `eval`, so that it is found whether the server
 * runs from its TypeScript sources or from `dist`): its own connection, which never waits for a
 * lock; one PASSIVE checkpoint per message; closes on `close`.
 */
const CHECKPOINT_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 0');
db.pragma('wal_autocheckpoint = 0');
parentPort.on('message', (message) => {
  if (message === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const row = db.pragma('wal_checkpoint(PASSIVE)')[0];
    parentPort.postMessage({ busy: row.busy, log: row.log, checkpointed: row.checkpointed });
  } catch (error) {
    parentPort.postMessage({ error: String((error && error.message) || error) });
  }
});
`;

function startWorkerThread(file: string): CheckpointWorker {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  return new Worker(CHECKPOINT_WORKER, { eval: true, workerData: { file, driver } }) as unknown as CheckpointWorker;
}

export class BackgroundCheckpointer {
  /** The worker (null when it could not start); it checkpoints while `failure` is null, and is closed even after. */
  private readonly worker: CheckpointWorker | null = null;
  private exited = false;
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private dirty = false;
  private catchUpDue = false;
  private closing = false;
  private readonly intervalMs: number;
  private readonly onFailure: ((reason: string) => void) | undefined;
  private readonly limits: Required<Pick<CheckpointerOptions, 'restartFrames' | 'catchUpFrames' | 'maxFrames'>>;
  /** Settles once the worker has closed its connection and ended (at once when it failed). */
  readonly closed: Promise<void>;
  /** Checkpoints the worker made, and the catch-ups the server's connection made (observable by tests and diagnostics). */
  checkpoints = 0;
  catchUps = 0;
  /** Frames in the WAL at the worker's last checkpoint. */
  lastLog = 0;
  /** Why the worker failed, once it did: checkpoints are inline again from then on. */
  failure: string | null = null;

  constructor(
    file: string,
    private readonly db: Database.Database,
    options: CheckpointerOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 400;
    this.onFailure = options.onFailure;
    this.limits = { restartFrames: options.restartFrames ?? 1000, catchUpFrames: options.catchUpFrames ?? 512, maxFrames: options.maxFrames ?? 16_000 };
    let ended!: () => void;
    this.closed = new Promise((resolve) => (ended = resolve));
    this.db.pragma('wal_autocheckpoint = 0');
    let worker: CheckpointWorker;
    try {
      worker = (options.startWorker ?? startWorkerThread)(file);
    } catch (error) {
      this.fail(error);
      ended();
      return;
    }
    this.worker = worker;
    worker.unref();
    worker.on('message', (report) => this.answered(report));
    worker.on('error', (error) => this.fail(error));
    worker.on('exit', () => {
      this.exited = true;
      this.fail(new Error('the checkpoint worker exited'));
      ended();
    });
  }

  /** A group committed: a checkpoint is due within `intervalMs`; a due catch-up runs now (the caller is between transactions). */
  committed(): void {
    if (this.failure !== null) return;
    this.dirty = true;
    if (this.catchUpDue) this.catchUp();
    if (this.timer === null && !this.running) this.schedule();
  }

  /** Stops checkpointing; the worker closes its connection (the last one closed folds the WAL in). */
  close(): void {
    if (this.closing) return;
    this.closing = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.exited || this.worker === null) return;
    // Until it has closed its connection the worker keeps the process alive: a process that ends
    // first leaves the WAL beside the file (harmless, but an orderly stop folds it in).
    this.worker.ref();
    this.worker.postMessage('close');
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.closing || this.failure !== null || !this.dirty) return;
      this.dirty = false;
      this.running = true;
      this.worker!.postMessage('checkpoint');
    }, this.intervalMs);
    this.timer.unref();
  }

  private answered(report: CheckpointReport): void {
    this.running = false;
    if (this.closing || this.failure !== null) return;
    if (report.error !== undefined) return this.fail(new Error(report.error));
    this.checkpoints++;
    this.lastLog = report.log ?? 0;
    if (report.busy === 0 && afterCheckpoint({ log: report.log ?? 0, checkpointed: report.checkpointed ?? 0 }, this.limits) === 'catch-up') {
      // In a transaction the checkpoint would fail: the next commit runs it.
      if (this.db.inTransaction) this.catchUpDue = true;
      else this.catchUp();
    }
    if (this.dirty) this.schedule();
  }

  /** The server's connection copies what the worker's checkpoint left, so its next commit starts the WAL over. */
  private catchUp(): void {
    this.catchUpDue = false;
    try {
      this.db.pragma('wal_checkpoint(PASSIVE)');
      this.catchUps++;
    } catch {
      // The connection is closing or failed; its own errors are reported by the next statement.
    }
  }

  /** The worker cannot be used: the server's connection checkpoints inline again. */
  private fail(error: unknown): void {
    if (this.failure !== null || this.closing) return;
    this.failure = error instanceof Error ? error.message : String(error);
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    // A worker that reported a failure still holds its connection: it ends now.
    if (!this.exited) this.worker?.postMessage('close');
    try {
      this.db.pragma(`wal_autocheckpoint = ${INLINE_CHECKPOINT_FRAMES}`);
    } catch {
      // The connection is closed: nothing left to checkpoint.
    }
    try {
      this.onFailure?.(this.failure);
    } catch {
      // An observer's fault changes nothing here.
    }
  }
}
