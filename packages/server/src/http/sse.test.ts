/**
 * sseResponse's hand-over of live events (TailOptions.live): written at once while the response's
 * consumer reads, refused while it does not (the tail then queues them, bounded), refused once the
 * response is closed.
 */
import { describe, expect, it } from 'vitest';
import type { RawEvent } from '../engine/stream-store.js';
import type { TailItem } from '../engine/tail.js';
import { sseResponse } from './sse.js';

const decoder = new TextDecoder();

/** A response over a tail that yields nothing itself (it waits until aborted); answers its `live`. */
function parkedResponse(): { response: Response; live: () => (events: RawEvent[]) => boolean } {
  let captured: ((events: RawEvent[]) => boolean) | undefined;
  const response = sseResponse((signal, live) => {
    captured = live;
    return (async function* (): AsyncGenerator<TailItem> {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
    })();
  });
  return { response, live: () => captured! };
}

const event = (offset: number): RawEvent => ({ offset, json: `{"offset":${offset}}` });

describe('sseResponse live hand-over', () => {
  it('writes the frames of live events while the consumer reads, and refuses them while it does not', async () => {
    const { response, live } = parkedResponse();
    const reader = response.body!.getReader();
    expect(decoder.decode((await reader.read()).value)).toBe(': rivulet tail\nretry: 1000\n\n');
    // A read is waiting: the frame goes straight to it.
    const waiting = reader.read();
    expect(live()([event(5), event(6)])).toBe(true);
    expect(decoder.decode((await waiting).value)).toBe('id: 5\nevent: event\ndata: {"offset":5}\n\nid: 6\nevent: event\ndata: {"offset":6}\n\n');
    // Nobody reads: one chunk fills the response's buffer, the next is refused.
    expect(live()([event(7)])).toBe(true);
    expect(live()([event(8)])).toBe(false);
    expect(decoder.decode((await reader.read()).value)).toBe('id: 7\nevent: event\ndata: {"offset":7}\n\n');
    await reader.cancel();
    expect(live()([event(9)])).toBe(false);
  });
});
