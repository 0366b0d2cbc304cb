/**
 * Copies answered once written (Receiver.durableWithSource) wait for their group commit to be
 * durable before the subscription's cursor moves past them, so that a reader who sees the cursor
 * (`acknowledgedOffset`, `lag`) also finds the copies on the receiving stream. Meanwhile the sender
 * reads on from what it wrote: the next copies join the next group commit instead of waiting for
 * the sync (docs/architecture.md "Copies in the source's commit").
 *
 * Per key and run: how far the sender has written (or passed over non-matching events) and how many
 * written batches still wait. Durability comes in commit order, so a batch that becomes durable
 * moves the cursor through its own events, and the last one through everything written or passed.
 */
import { succeeded, type SubscriptionRow } from '../../core/repair.js';
import { COPY_BATCH_EVENTS } from './prepare.js';
import type { SendLoop } from './send-loop.js';

/**
 * Offsets still owed after a written copy batch from which on they are a backlog (a full batch's
 * worth): the sender then
 * waits for the batch's sync before it writes the next (writing on at once synced the WAL back to
 * back, one sync per small commit: 1.2x CPU per copy in a drain, decision 012, "Options"). Fewer
 * are live events: the check after the batch copies them at once, so their copies join their own
 * source's group commit instead of waiting one sync more.
 */
export const BACKLOG_OFFSETS = COPY_BATCH_EVENTS;

interface Through {
  run: string;
  cursor: number;
  pending: number;
  /** Failed deliveries of the key since the entry began (a later batch's, while earlier ones waited). */
  failures: number;
}

export class WrittenThrough {
  private readonly byKey = new Map<string, Through>();
  private closed = false;

  /** Keys with batches still waiting for durability. */
  get size(): number {
    return this.byKey.size;
  }

  /** Where `key` reads on from in `run`: past what it has written, else the row's cursor. */
  cursor(key: string, run: string, row: SubscriptionRow): number {
    const through = this.byKey.get(key);
    return through !== undefined && through.run === run && through.cursor > row.cursor ? through.cursor : row.cursor;
  }

  /** A batch of `run` was written through `cursor` and waits for durability; answers the failures seen so far. */
  wrote(key: string, run: string, cursor: number): number {
    const through = this.byKey.get(key);
    if (through === undefined || through.run !== run) {
      this.byKey.set(key, { run, cursor, pending: 1, failures: 0 });
      return 0;
    }
    through.cursor = Math.max(through.cursor, cursor);
    through.pending++;
    return through.failures;
  }

  /** A delivery of `key` failed: batches written before it that still wait must not reset its ladder. */
  failed(key: string): void {
    const through = this.byKey.get(key);
    if (through !== undefined) through.failures++;
  }

  /**
   * Nothing owed up to `cursor` in `run`: answers true when batches still wait, remembering it for
   * the last of them; false when none wait (the caller passes the row over as usual).
   */
  passed(key: string, run: string, cursor: number): boolean {
    const through = this.byKey.get(key);
    if (through === undefined || through.run !== run) return false;
    through.cursor = Math.max(through.cursor, cursor);
    return true;
  }

  /**
   * A batch of `run` written through `cursor`, after `seen` failures, is durable: the cursor the row
   * may move to now, and whether no delivery failed since the batch was written (its success then
   * resets the ladder); nothing once closed.
   */
  settled(key: string, run: string, cursor: number, seen: number): { cursor: number; clean: boolean } | undefined {
    if (this.closed) return undefined;
    const through = this.byKey.get(key);
    if (through === undefined || through.run !== run) return { cursor, clean: true };
    through.pending--;
    const clean = through.failures === seen;
    if (through.pending > 0) return { cursor, clean };
    this.byKey.delete(key);
    return { cursor: Math.max(cursor, through.cursor), clean };
  }

  /**
   * The sender stopped (the stream left memory or the server is going down): what becomes durable
   * later moves no cursor, since its rows are written or the storage closed by then; a restart
   * copies those events again, once (their identities).
   */
  close(): void {
    this.closed = true;
    this.byKey.clear();
  }

  /** A written batch's group commit failed: every actor reloads what is stored, and so does this. */
  forget(key: string): void {
    this.byKey.delete(key);
  }
}

/**
 * A copy batch of `run` answered once written through `cursor`: when `durable` settles, the row's
 * cursor moves past it (after a later batch's failure, only the cursor: the ladder is that one's). If
 * its group commit failed, every actor reloads what is stored (the storage epoch), and a check
 * copies again.
 */
export function acknowledgeWhenDurable(loop: SendLoop, key: string, run: string, cursor: number, bytes: number, durable: Promise<void>): void {
  const seen = loop.writtenThrough.wrote(key, run, cursor);
  durable.then(
    () => {
      const through = loop.writtenThrough.settled(key, run, cursor, seen);
      if (through === undefined) return;
      const row = loop.actor.subscriptions.get(key);
      const streamId = loop.actor.coreState?.streamId;
      if (!row || streamId === undefined || loop.runOf(streamId, row) !== run || through.cursor <= row.cursor) return;
      const moved = through.clean ? succeeded(row, through.cursor, bytes) : { ...row, cursor: through.cursor };
      // A flight under way keeps its stored watchdog.
      loop.actor.subscriptions.update(loop.flights.has(key) ? { ...moved, inflightDeadlineAt: row.inflightDeadlineAt } : moved);
    },
    () => {
      loop.writtenThrough.forget(key);
      loop.poke();
    },
  );
}
