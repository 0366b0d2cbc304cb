/**
 * A live tail of one stream: durable replay after a cursor, then live events, with no gap and no
 * duplicate at the seam (protocol §5.2).
 *
 * The listener is registered first; the actor answers the committed head at that moment. Replay
 * reads durable events up to that head from storage; everything after it arrives through the
 * listener. A reader that falls more than `maxBuffered` events behind stops buffering and catches up
 * from storage instead (durable events only: ephemeral events it missed are gone, as they would be
 * for any reader opened after them), so a slow reader never holds unbounded memory.
 */
import type { CommittedEvent } from '@rivulet/contract';
import type { StreamActor } from './actor.js';
import type { RawEvent } from './stream-store.js';
import { committedJson } from './event-json.js';

export type TailItem =
  | { kind: 'opened'; streamId: string | null; streamMaxOffset: number }
  | { kind: 'events'; events: RawEvent[] }
  | { kind: 'destroyed' };

export interface TailOptions {
  afterOffset: number;
  /**
   * The lifetime the reader's cursor belongs to: when the stream now has another (or none), the
   * cursor means nothing here and the tail answers `destroyed` at once instead of skipping events.
   */
  expectedStreamId?: string | undefined;
  eventTypes?: readonly string[] | undefined;
  signal?: AbortSignal | undefined;
  maxBuffered?: number;
  pageSize?: number;
  /**
   * Hands a caught-up reader's live events over as they are published, in the commit's own turn,
   * instead of through the generator (docs/architecture.md "Live readers"). Answers false when it
   * cannot take them now (its consumer is not reading): they then queue and come through the
   * generator as they would without it. In-process only: the Worker host's tail crosses an RPC.
   */
  live?: ((events: RawEvent[]) => boolean) | undefined;
}

/** The JSON of live events as a tail yields them. */
function rawEvents(events: readonly CommittedEvent[]): RawEvent[] {
  return events.map((e) => ({ offset: e.offset, json: committedJson(e) }));
}

export async function* tailStream(actor: StreamActor, options: TailOptions): AsyncGenerator<TailItem> {
  const types = options.eventTypes && options.eventTypes.length > 0 ? new Set(options.eventTypes) : undefined;
  const maxBuffered = options.maxBuffered ?? 10_000;
  const pageSize = options.pageSize ?? 500;
  let queue: CommittedEvent[] = [];
  let overflowed = false;
  let destroyed = false;
  let wake: (() => void) | undefined;
  const signal = options.signal;
  const onAbort = () => wake?.();
  signal?.addEventListener('abort', onAbort);
  let cursor = options.afterOffset;
  /** The generator waits for live events with nothing queued: `options.live` may take them. */
  let parked = false;

  const watch = actor.watch({
    onEvents(events) {
      if (overflowed) return;
      const matching = types ? events.filter((e) => types.has(e.type)) : events;
      if (parked && options.live && queue.length === 0 && !signal?.aborted && handedOver(options.live, matching)) return;
      for (const e of matching) queue.push(e);
      if (queue.length > maxBuffered) {
        overflowed = true;
        queue = [];
      }
      wake?.();
    },
    onDestroyed() {
      destroyed = true;
      wake?.();
    },
  });

  /** Hands the events past the cursor to `live`; false when it refused them (they queue instead). */
  function handedOver(live: (events: RawEvent[]) => boolean, matching: readonly CommittedEvent[]): boolean {
    const fresh = matching.filter((e) => e.offset > cursor);
    if (fresh.length === 0) return true;
    if (!live(rawEvents(fresh))) return false;
    cursor = fresh[fresh.length - 1]!.offset;
    return true;
  }

  /** Durable events in (cursor, upTo], page by page. */
  async function* replay(upTo: number): AsyncGenerator<TailItem> {
    while (cursor < upTo && !destroyed && !signal?.aborted) {
      const page = actor.readRaw({
        afterOffset: cursor,
        beforeOffset: upTo + 1,
        limit: pageSize,
        includeEphemeral: false,
        eventTypes: options.eventTypes,
      });
      if (page.events.length === 0) break;
      cursor = page.events[page.events.length - 1]!.offset;
      yield { kind: 'events', events: page.events };
    }
    cursor = Math.max(cursor, upTo);
  }

  try {
    const streamId = actor.coreState?.streamId ?? null;
    if (options.expectedStreamId !== undefined && options.expectedStreamId !== streamId) {
      yield { kind: 'destroyed' };
      return;
    }
    yield { kind: 'opened', streamId, streamMaxOffset: watch.head };
    yield* replay(watch.head);
    while (!signal?.aborted) {
      if (destroyed) {
        // Events committed before the destroy are delivered first, then the end of the lifetime.
        const last = queue.filter((e) => e.offset > cursor);
        queue = [];
        if (last.length > 0) yield { kind: 'events', events: rawEvents(last) };
        yield { kind: 'destroyed' };
        return;
      }
      if (overflowed) {
        overflowed = false;
        yield* replay(actor.durableHead);
        continue;
      }
      const fresh = queue.filter((e) => e.offset > cursor);
      queue = [];
      if (fresh.length > 0) {
        cursor = fresh[fresh.length - 1]!.offset;
        yield { kind: 'events', events: rawEvents(fresh) };
        continue;
      }
      parked = true;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      parked = false;
      wake = undefined;
    }
  } finally {
    watch.stop();
    signal?.removeEventListener('abort', onAbort);
  }
}
