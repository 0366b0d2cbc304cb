/**
 * The adapter's own descriptor of the database's WAL file, for the syncs it makes itself (see
 * sqlite-storage.ts): opened once, on first use, and closed exactly once, after the last sync still
 * running on libuv's thread pool has ended (closing a descriptor a pending fdatasync uses would
 * sync whatever file the number is reused for next).
 */
import { closeSync, existsSync, fdatasync, fdatasyncSync, openSync } from 'node:fs';

/** How the WAL is synced; the defaults are node:fs's. Tests inject failures and hold syncs back. */
export interface WalSyncFunctions {
  /** Starts an fdatasync on the thread pool; `done` is called once, when it ended. */
  fdatasync?: (fd: number, done: (error: NodeJS.ErrnoException | null) => void) => void;
  /** An fdatasync on the calling thread; throws when it failed. */
  fdatasyncSync?: (fd: number) => void;
  /** Closes the descriptor (default closeSync). */
  close?: (fd: number) => void;
}

export class WalFile {
  private fd: number | null = null;
  /** Syncs started on the thread pool and not ended yet: the descriptor must stay open. */
  private running = 0;
  private closing = false;
  private backgroundRunning = false;
  private lastBackground = -Infinity;
  /** Background syncs started (observable by tests and diagnostics). */
  backgroundSyncs = 0;
  private readonly syncAsync: NonNullable<WalSyncFunctions['fdatasync']>;
  private readonly syncSync: NonNullable<WalSyncFunctions['fdatasyncSync']>;
  private readonly closeFd: NonNullable<WalSyncFunctions['close']>;

  constructor(
    private readonly path: string,
    fns: WalSyncFunctions = {},
  ) {
    this.syncAsync = fns.fdatasync ?? fdatasync;
    this.syncSync = fns.fdatasyncSync ?? fdatasyncSync;
    this.closeFd = fns.close ?? closeSync;
  }

  /** The descriptor, opened once; null while there is no WAL file, or once closing. */
  private descriptor(): number | null {
    if (this.closing) return null;
    if (this.fd === null) {
      if (!existsSync(this.path)) return null;
      this.fd = openSync(this.path, 'r');
    }
    return this.fd;
  }

  /**
   * Starts an fdatasync of the WAL on the thread pool; `done` is told how it ended. Answers false
   * (and never calls `done`) when there is nothing to sync: no WAL file, or closing.
   */
  sync(done: (error: Error | null) => void): boolean {
    const fd = this.descriptor();
    if (fd === null) return false;
    this.running++;
    this.syncAsync(fd, (error) => {
      this.running--;
      if (this.closing && this.running === 0) this.release();
      done(error ?? null);
    });
    return true;
  }

  /**
   * Starts a background sync (the sqlite-storage.ts header says why; its outcome is ignored)
   * unless one runs or one started less than `minMs` before `now` (ms).
   */
  syncInBackground(now: number, minMs: number): void {
    if (this.backgroundRunning || now - this.lastBackground < minMs) return;
    const started = this.sync(() => {
      this.backgroundRunning = false;
    });
    if (!started) return;
    this.lastBackground = now;
    this.backgroundRunning = true;
    this.backgroundSyncs++;
  }

  /** An fdatasync of the WAL on the event loop; answers false when there is no WAL file. Throws on failure. */
  syncNow(): boolean {
    const fd = this.descriptor();
    if (fd === null) return false;
    this.syncSync(fd);
    return true;
  }

  /** Closes the descriptor now, or when the last running sync ends. */
  close(): void {
    if (this.closing) return;
    this.closing = true;
    if (this.running === 0) this.release();
  }

  private release(): void {
    const fd = this.fd;
    this.fd = null;
    if (fd !== null) this.closeFd(fd);
  }
}
