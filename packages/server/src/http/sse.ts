/**
 * Server-sent events for a stream tail (protocol §5.2 `?live=sse`): one `event: event`
 * frame per committed event with `id:` = offset; first an `event: stream` frame naming the lifetime
 * (`{streamId, streamMaxOffset}`, streamId null while the stream does not exist); `event:
 * destroyed` when the stream is destroyed (or is not the `expectedStreamId` lifetime), then the
 * response ends; a comment line every 15 s keeps idle connections open through proxies.
 */
import { whenAborted } from '../core/when-aborted.js';
import type { TailItem } from '../engine/tail.js';
import type { RawEvent } from '../engine/stream-store.js';

const encoder = new TextEncoder();
const KEEPALIVE_MS = 15_000;

export interface SseHooks {
  onOpen?(): void;
  onClose?(): void;
  /** Aborted when the server shuts down: the response then ends cleanly (protocol §16.9). */
  stopping?: AbortSignal | undefined;
}

/** The `event: event` frames of a batch of events. */
function eventFrames(events: readonly RawEvent[]): string {
  let text = '';
  for (const e of events) text += `id: ${e.offset}\nevent: event\ndata: ${e.json}\n\n`;
  return text;
}

/**
 * `items` is the tail to send; `live` (for its `TailOptions.live`) writes a caught-up reader's
 * live events at once, while the response's consumer is reading, and refuses them otherwise.
 */
export function sseResponse(
  items: (signal: AbortSignal, live: (events: RawEvent[]) => boolean) => AsyncIterable<TailItem>,
  hooks: SseHooks = {},
): Response {
  const abort = new AbortController();
  let iterator: AsyncIterator<TailItem> | undefined;
  let keepalive: ReturnType<typeof setInterval> | undefined;
  let closed = false;
  let stopListening: (() => void) | undefined;
  const close = () => {
    if (closed) return;
    closed = true;
    if (keepalive) clearInterval(keepalive);
    stopListening?.();
    abort.abort();
    void iterator?.return?.();
    hooks.onClose?.();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      hooks.onOpen?.();
      const live = (events: RawEvent[]): boolean => {
        // desiredSize ≤ 0: the consumer is not reading (a slow client's socket is full); the tail
        // then queues, bounded, as for a reader that is behind.
        if (closed || controller.desiredSize === null || controller.desiredSize <= 0) return false;
        try {
          controller.enqueue(encoder.encode(eventFrames(events)));
          return true;
        } catch {
          return false;
        }
      };
      iterator = items(abort.signal, live)[Symbol.asyncIterator]();
      // A server going down ends the response like a finished one: the reader reconnects with
      // Last-Event-ID to the next server and misses nothing.
      stopListening = whenAborted(hooks.stopping, () => {
        if (closed) return;
        close();
        controller.close();
      });
      controller.enqueue(encoder.encode(': rivulet tail\nretry: 1000\n\n'));
      keepalive = setInterval(() => {
        try {
          controller.enqueue(encoder.encode(': keepalive\n\n'));
        } catch {
          close();
        }
      }, KEEPALIVE_MS);
    },
    async pull(controller) {
      if (closed) return;
      try {
        const next = await iterator!.next();
        // Ended while waiting (the server stopping): the stream is closed already.
        if (closed) return;
        if (next.done) {
          close();
          controller.close();
          return;
        }
        const item = next.value;
        if (item.kind === 'opened') {
          const data = JSON.stringify({ streamId: item.streamId, streamMaxOffset: item.streamMaxOffset });
          controller.enqueue(encoder.encode(`event: stream\ndata: ${data}\n\n`));
          return;
        }
        if (item.kind === 'destroyed') {
          controller.enqueue(encoder.encode('event: destroyed\ndata: {}\n\n'));
          close();
          controller.close();
          return;
        }
        controller.enqueue(encoder.encode(eventFrames(item.events)));
      } catch (error) {
        if (closed) return;
        close();
        controller.error(error);
      }
    },
    cancel() {
      close();
    },
  });
  return new Response(body, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    },
  });
}
