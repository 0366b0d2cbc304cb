/**
 * Reaching another stream: the port copy delivery uses to hand a batch to the receiving stream's
 * actor (in-process in the Node host; a Durable Object RPC on Cloudflare). Only trusted delivery
 * code holds it, which is what makes "only trusted stream delivery may append source.copiedFrom"
 * true (protocol §3.5).
 */
import type { CopyBatch } from '../core/copy-builder.js';

export interface CopyReceipt {
  appended: number;
  dropped: number;
}

/** A receipt given once the copies are written, before they are durable. */
export interface WrittenCopyReceipt extends CopyReceipt {
  /** Settles when the copies are durable; rejects when their group commit failed. */
  durable: Promise<void>;
}

export interface StreamDirectory {
  receiveCopies(projectId: string | null, path: string, batch: CopyBatch): Promise<CopyReceipt>;
  /**
   * Only for a directory whose streams live in the sender's own storage, where a write becomes
   * durable only together with everything written before it (one SQLite write-ahead log): answers
   * once the copies are written into the open group commit, refusals as receiveCopies does
   * (docs/architecture.md "Copies in the source's commit").
   */
  writeCopies?(projectId: string | null, path: string, batch: CopyBatch): Promise<WrittenCopyReceipt>;
}
