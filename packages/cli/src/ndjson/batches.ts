/**
 * Appends NDJSON lines in order, in batches (protocol §4: a batch is atomic, 1–10 000 events, one
 * body of at most `--max-body-bytes`, 8 MiB by default). A batch holds consecutive lines for one
 * stream, at most BATCH_MAX_EVENTS events and BATCH_MAX_BYTES of JSON (a line larger than that
 * goes alone), so it stays far below the server's limits.
 *
 * When the server refuses a batch for something in it, the batch is split in halves and each half
 * sent in order: since a refused batch writes nothing, this commits every line before the refused
 * one, nothing after it, and names the refused line — the "stop at the first refused line" of
 * docs/operations.md, in a few requests rather than one per line.
 */
import { RivuletError, type AppendEvent, type CommittedEvent, type RivuletClient } from '@rivulet/client';
import { LineError } from './events.js';

export const BATCH_MAX_EVENTS = 1000;
export const BATCH_MAX_BYTES = 1024 * 1024;

export interface Item {
  line: number;
  path: string;
  event: AppendEvent;
}

export interface BatchLimits {
  maxEvents: number;
  maxBytes: number;
}

/** Codes that judge what a batch holds (protocol §7): the refusal belongs to one of its lines. */
const REFUSALS = new Set(['INVALID_INPUT', 'FORBIDDEN', 'CONFLICT', 'PRECONDITION_FAILED', 'PAYLOAD_TOO_LARGE', 'LIMIT_EXCEEDED']);

export interface BatcherOptions {
  limits?: BatchLimits;
  /** Before the first batch for a stream (import learns its head here). */
  prepare?(path: string): Promise<void>;
  /** After each committed batch, with the answered events in input order. */
  committed(path: string, items: readonly Item[], events: readonly CommittedEvent[]): Promise<void> | void;
}

export class Batcher {
  private path: string | undefined;
  private items: Item[] = [];
  private bytes = 0;
  private readonly prepared = new Set<string>();
  private readonly limits: BatchLimits;

  constructor(
    private readonly client: RivuletClient,
    private readonly options: BatcherOptions,
  ) {
    this.limits = options.limits ?? { maxEvents: BATCH_MAX_EVENTS, maxBytes: BATCH_MAX_BYTES };
  }

  /** Queues one line's event; sends the batch first when this one would not fit in it. */
  async add(item: Item): Promise<void> {
    const size = Buffer.byteLength(JSON.stringify(item.event));
    const full = this.items.length >= this.limits.maxEvents || this.bytes + size > this.limits.maxBytes;
    if (this.items.length > 0 && (item.path !== this.path || full)) await this.flush();
    this.path = item.path;
    this.items.push(item);
    this.bytes += size;
  }

  /** Sends what is queued. */
  async flush(): Promise<void> {
    const items = this.items;
    const path = this.path;
    this.items = [];
    this.bytes = 0;
    if (items.length === 0 || path === undefined) return;
    if (!this.prepared.has(path)) {
      this.prepared.add(path);
      await this.options.prepare?.(path);
    }
    await this.send(path, items);
  }

  private async send(path: string, items: Item[]): Promise<void> {
    let events: CommittedEvent[];
    try {
      events = await this.client.append(
        path,
        items.map((i) => i.event),
      );
    } catch (error) {
      if (!(error instanceof RivuletError)) throw error;
      const first = items[0]!.line;
      if (!REFUSALS.has(error.code)) {
        throw new LineError(first, `${error.message} (nothing from line ${first} on was appended)`, error.code);
      }
      // The server names an event of the batch by its index ("events[0]: …", "events.[0].type: …"); the line says it better.
      if (items.length === 1) throw new LineError(first, error.message.replace(/^events\.?\[\d+\](?:\.|: )/, ''), error.code);
      const half = Math.ceil(items.length / 2);
      await this.send(path, items.slice(0, half));
      await this.send(path, items.slice(half));
      return;
    }
    await this.options.committed(path, items, events);
  }
}
