/**
 * The delivery attempt history of one stream's subscriptions (protocol §22): the last `kept`
 * attempts per key, in runtime storage beside the subscription_runtime rows — never in core state.
 * Attempts are held in memory and written with the delivery progress they belong to (within the
 * 250 ms of subscription-runtime.ts, protocol §12.9), so the delivery hot path writes nothing of
 * its own; each write deletes what falls out of the window, so storage stays bounded per key.
 * A removed subscription's attempts go with its runtime row; a destroyed stream's with its rows.
 */
import type { DeliveryAttempt } from '@rivulet/contract';
import type { SqlStorage } from '../ports/storage.js';

export const DELIVERY_ATTEMPTS_DDL = [
  `CREATE TABLE IF NOT EXISTS delivery_attempts (
     sid INTEGER NOT NULL,
     key TEXT NOT NULL,
     seq INTEGER NOT NULL,
     body TEXT NOT NULL,
     PRIMARY KEY (sid, key, seq)
   )`,
];

export class DeliveryAttempts {
  /** Attempts not written yet, by key, oldest first. */
  private readonly pending = new Map<string, DeliveryAttempt[]>();
  /** The last sequence number given per key (loaded from storage at its first attempt). */
  private readonly seqs = new Map<string, number>();

  constructor(
    private readonly storage: SqlStorage,
    private readonly kept: number,
  ) {}

  get hasPending(): boolean {
    return this.pending.size > 0;
  }

  record(key: string, attempt: DeliveryAttempt): void {
    if (this.kept <= 0) return;
    let list = this.pending.get(key);
    if (!list) this.pending.set(key, (list = []));
    list.push(attempt);
    // Never more in memory than storage would keep.
    if (list.length > this.kept) list.shift();
  }

  /** Writes what is pending (the caller provides the transaction) and prunes each key to `kept`. */
  persist(sid: number): void {
    for (const [key, list] of this.pending) {
      let seq = this.seqs.get(key);
      if (seq === undefined) {
        seq = this.storage.exec<{ n: number | null }>(`SELECT max(seq) AS n FROM delivery_attempts WHERE sid = ? AND key = ?`, sid, key)[0]!.n ?? 0;
      }
      for (const attempt of list) {
        seq += 1;
        this.storage.run(`INSERT INTO delivery_attempts (sid, key, seq, body) VALUES (?, ?, ?, ?)`, sid, key, seq, JSON.stringify(attempt));
      }
      this.storage.run(`DELETE FROM delivery_attempts WHERE sid = ? AND key = ? AND seq <= ?`, sid, key, seq - this.kept);
      this.seqs.set(key, seq);
    }
    this.pending.clear();
  }

  /**
   * The newest `limit` attempts of `key`, newest first (pending ones included), never more than
   * `kept`: until the next persist prunes them, stored attempts that pending ones push out of the
   * window are still in storage.
   */
  list(sid: number | null, key: string, requested: number): DeliveryAttempt[] {
    const limit = Math.min(requested, this.kept);
    if (limit <= 0) return [];
    const pending = [...(this.pending.get(key) ?? [])].reverse();
    if (pending.length >= limit || sid === null) return pending.slice(0, limit);
    const stored = this.storage
      .exec<{ body: string }>(`SELECT body FROM delivery_attempts WHERE sid = ? AND key = ? ORDER BY seq DESC LIMIT ?`, sid, key, limit - pending.length)
      .map((r) => JSON.parse(r.body) as DeliveryAttempt);
    return [...pending, ...stored];
  }

  /** The key was removed: its history goes (inside the transaction that removes its runtime row). */
  remove(sid: number, key: string): void {
    this.pending.delete(key);
    this.seqs.delete(key);
    this.storage.run(`DELETE FROM delivery_attempts WHERE sid = ? AND key = ?`, sid, key);
  }

  /** The stream was destroyed (its rows were erased with it). */
  clear(): void {
    this.pending.clear();
    this.seqs.clear();
  }
}
