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

export interface StreamDirectory {
  receiveCopies(projectId: string | null, path: string, batch: CopyBatch): Promise<CopyReceipt>;
}
