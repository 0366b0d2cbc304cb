/**
 * The Node host's background erasure of destroyed stream lifetimes (StreamStore deferred erase):
 * one chunk of rows per event-loop turn, yielding to requests in between, until nothing is left.
 * Scheduled by every destroy and at start (a run that stopped in the middle goes on).
 */
import type { StreamStore } from '../../engine/stream-store.js';

/** Event rows deleted per chunk: a few milliseconds of SQLite work on this machine kind. */
export const PURGE_CHUNK_ROWS = 2000;

export class ErasedPurger {
  private scheduled = false;
  private stopped = false;

  constructor(
    private readonly store: () => StreamStore,
    private readonly log: (message: string, error: unknown) => void,
    private readonly chunkRows = PURGE_CHUNK_ROWS,
  ) {}

  /** A purge is under way (some destroyed lifetime may still have rows). */
  get active(): boolean {
    return this.scheduled;
  }

  /** Starts purging on a later turn, unless it is already under way. */
  schedule(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => this.step());
  }

  stop(): void {
    this.stopped = true;
  }

  private step(): void {
    this.scheduled = false;
    if (this.stopped) return;
    let more: boolean;
    try {
      more = this.store().purgeErased(this.chunkRows);
    } catch (error) {
      // The rows stay marked: the next destroy or the next start tries again.
      this.log('could not purge the events of a destroyed stream', error);
      return;
    }
    if (more) this.schedule();
  }
}
