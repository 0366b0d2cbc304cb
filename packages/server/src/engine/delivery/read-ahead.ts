/**
 * Read-ahead for single-event deliveries: webhooks (one event per POST, protocol §12.3, §17.1) and
 * hosted processors (one event per batch, §20.4).
 *
 * Reading what a subscription owes (collect.ts) costs a query, JSON parsing and the filter per
 * read; doing that for every POST was the largest single cost of webhook delivery. One read here
 * collects a page of owed events and hands them out one at a time.
 *
 * Each buffered event remembers the cursor it follows (`cursorBefore`): scanning from that cursor,
 * it is the first event the subscription owes, and `cursorAfter` is where a success leaves the
 * cursor (the next event's `cursorBefore`, or for the last one the end of the scan, past the
 * non-matching events read with it). Committed events never change and a run's filter never
 * changes (a new configuration or cursor-set is a new run), so an entry is valid for exactly its
 * run and its `cursorBefore`: a row whose cursor is anywhere else (a failure that isolated the
 * event, a cursor-set, a quiet advance) simply reads again. Nothing here decides an outcome.
 */
import type { CommittedEvent, OutboundEntry } from '@rivulet/contract';
import type { StreamActor } from '../actor.js';
import { collectBatch } from './collect.js';

/**
 * What a subscription owes after a cursor: collect.ts's answer, without its byte count (and
 * without the texts, which the events read ahead carry themselves: only copies' do not).
 */
export type Owed =
  | { kind: 'events'; events: CommittedEvent[]; texts?: string[]; scannedTo: number }
  | { kind: 'none'; scannedTo: number }
  | { kind: 'condition-error'; events: CommittedEvent[]; texts?: string[]; failingOffset: number; error: string };

interface Ahead {
  event: CommittedEvent;
  cursorBefore: number;
  cursorAfter: number;
}

/** Events read per page, and their stored size at most (the first event always goes). */
const PAGE_EVENTS = 64;
const PAGE_BYTES = 256 * 1024;

export class ReadAhead {
  private readonly buffers = new Map<string, { run: string; items: Ahead[] }>();

  constructor(private readonly actor: StreamActor) {}

  /** The first event `key` owes after `cursor` in `run`, as a one-event answer. */
  async next(key: string, run: string, entry: OutboundEntry, cursor: number): Promise<Owed> {
    const buffered = this.buffers.get(key);
    if (buffered?.run === run && buffered.items[0]?.cursorBefore === cursor) {
      const item = buffered.items.shift()!;
      if (buffered.items.length === 0) this.buffers.delete(key);
      return { kind: 'events', events: [item.event], scannedTo: item.cursorAfter };
    }
    this.buffers.delete(key);
    const collected = await collectBatch(this.actor, entry, cursor, { maxEvents: PAGE_EVENTS, maxBytes: PAGE_BYTES, scanRows: 1000 });
    if (collected.kind === 'none' || collected.events.length === 0) return collected;
    const events = collected.events;
    // The last event's success moves past what was scanned after it, unless the scan stopped at a
    // condition that threw: then the cursor stops at the event, and the next read meets the error.
    const end = collected.kind === 'events' ? collected.scannedTo : events[events.length - 1]!.offset;
    const items = events.map((event, i) => ({
      event,
      cursorBefore: i === 0 ? cursor : events[i - 1]!.offset,
      cursorAfter: i === events.length - 1 ? end : event.offset,
    }));
    const first = items.shift()!;
    if (items.length > 0) this.buffers.set(key, { run, items });
    return { kind: 'events', events: [first.event], scannedTo: first.cursorAfter };
  }

  /** Drops what was read for keys that are no longer configured. */
  retain(configured: (key: string) => boolean): void {
    for (const key of this.buffers.keys()) if (!configured(key)) this.buffers.delete(key);
  }

  clear(): void {
    this.buffers.clear();
  }
}
