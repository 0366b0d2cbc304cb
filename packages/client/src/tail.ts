/**
 * A live tail over SSE (protocol §5.2) that survives dropped connections.
 *
 * Invariants:
 * - Exactly once, in order, within one connection and across reconnects: the tail remembers the
 *   offset of the last event it yielded and reconnects with `Last-Event-ID: <that offset>`, which
 *   the server honours over `afterOffset`; any event at or below it is dropped as a duplicate.
 * - The first connection fails fast (a wrong URL or token is reported, not retried). After that,
 *   a connection that breaks, ends without `event: destroyed`, or is refused with UNAVAILABLE is
 *   retried with exponential backoff; other errors (INVALID_INPUT, UNAUTHENTICATED, …) end the
 *   tail with that error.
 * - Ephemeral events are live-only (protocol §4.4): one appended while the tail is disconnected
 *   is not replayed after the reconnect; durable events always are.
 * - `event: destroyed` ends the iteration (after calling `onDestroyed`): the stream's lifetime is
 *   over, and the offsets of its next lifetime start again from 1. The tail learns the lifetime
 *   from the server's `event: stream` frame (or the created event) and reconnects with
 *   `expectedStreamId`, so a stream destroyed and recreated while the tail was disconnected ends
 *   the tail instead of silently skipping the new lifetime's first offsets.
 * - The caller's abort signal ends the iteration quietly; leaving the loop early closes the
 *   connection.
 */
import { RivuletError, type CommittedEvent } from '@rivulet/contract';
import type { HttpClient } from './http.js';
import { readSse } from './sse.js';

export interface ReconnectOptions {
  /** Delay before the first reconnect (default 100 ms); it doubles after every failed attempt. */
  initialDelayMs?: number;
  /** Longest delay between attempts (default 5000 ms). */
  maxDelayMs?: number;
  /** Consecutive failed attempts before the tail gives up with the last error (default: never). */
  maxAttempts?: number;
}

export interface ReconnectInfo {
  /** 1 for the first attempt after a connection broke, counting up while attempts fail. */
  attempt: number;
  delayMs: number;
  /** Why the previous connection ended; undefined when the server simply ended the response. */
  error: RivuletError | undefined;
  lastOffset: number;
}

export interface TailOptions {
  /** Exclusive start offset (default 0: from the first event). */
  afterOffset?: number;
  eventTypes?: readonly string[];
  signal?: AbortSignal;
  reconnect?: ReconnectOptions;
  /** Each time the server accepts a connection (the first, and every reconnect). */
  onOpen?(info: { lastOffset: number; reconnected: boolean }): void;
  onReconnect?(info: ReconnectInfo): void;
  onDestroyed?(): void;
  /** When the tail learns the lifetime it reads (the `stream` frame, or the created event). */
  onStreamId?(streamId: string): void;
}

/** Internal marker: this attempt failed in a way worth retrying. */
class Retry extends Error {
  constructor(readonly error: RivuletError) {
    super(error.message);
  }
}

type ConnectionEnd = { kind: 'destroyed' } | { kind: 'dropped'; error: RivuletError | undefined };

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

function asRivuletError(error: unknown): RivuletError {
  if (error instanceof RivuletError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new RivuletError('UNAVAILABLE', `the event stream broke off: ${message}`, undefined, { cause: error });
}

function parseEvent(data: string): CommittedEvent {
  try {
    const event = JSON.parse(data) as CommittedEvent;
    if (typeof event === 'object' && event !== null && Number.isSafeInteger(event.offset)) return event;
  } catch {
    // Reported below.
  }
  throw new RivuletError('INTERNAL', 'the server sent an SSE event that is not a committed event', { data: data.slice(0, 200) });
}

function parseOpened(data: string): string | null {
  try {
    const opened = JSON.parse(data) as { streamId?: unknown };
    return typeof opened.streamId === 'string' ? opened.streamId : null;
  } catch {
    return null;
  }
}

function withExpectedStreamId(url: string, streamId: string): string {
  const u = new URL(url);
  u.searchParams.set('expectedStreamId', streamId);
  return u.toString();
}

export async function* tailEvents(http: HttpClient, url: string, options: TailOptions = {}): AsyncGenerator<CommittedEvent> {
  const { signal } = options;
  const initialDelay = options.reconnect?.initialDelayMs ?? 100;
  const maxDelay = options.reconnect?.maxDelayMs ?? 5000;
  const maxAttempts = options.reconnect?.maxAttempts ?? Number.POSITIVE_INFINITY;
  let lastOffset = options.afterOffset ?? 0;
  let streamId: string | null = null;
  let connectedOnce = false;
  let failures = 0;

  while (!signal?.aborted) {
    // Our own controller, so that leaving the loop early closes the connection.
    const connection = new AbortController();
    const forward = () => connection.abort(signal?.reason);
    signal?.addEventListener('abort', forward, { once: true });
    let end: ConnectionEnd = { kind: 'dropped', error: undefined };
    try {
      const headers: Record<string, string> = { accept: 'text/event-stream', 'cache-control': 'no-cache' };
      if (connectedOnce) headers['last-event-id'] = String(lastOffset);
      let response: Response;
      try {
        const target = connectedOnce && streamId !== null ? withExpectedStreamId(url, streamId) : url;
        response = await http.send('GET', target, { headers, signal: connection.signal });
      } catch (error) {
        if (signal?.aborted) return;
        const rivuletError = asRivuletError(error);
        if (!connectedOnce || rivuletError.code !== 'UNAVAILABLE') throw rivuletError;
        throw new Retry(rivuletError);
      }
      const contentType = response.headers.get('content-type') ?? '';
      if (!response.body || !/^text\/event-stream\b/i.test(contentType)) {
        await response.body?.cancel().catch(() => undefined);
        throw new RivuletError('INTERNAL', `expected an event stream, got ${contentType || 'no content type'}`);
      }
      options.onOpen?.({ lastOffset, reconnected: connectedOnce });
      connectedOnce = true;
      failures = 0;
      try {
        for await (const message of readSse(response.body)) {
          if (message.event === 'destroyed') {
            end = { kind: 'destroyed' };
            break;
          }
          if (message.event === 'stream') {
            streamId = parseOpened(message.data) ?? streamId;
            if (streamId !== null) options.onStreamId?.(streamId);
            continue;
          }
          if (message.event !== 'event') continue;
          const event = parseEvent(message.data);
          if (event.offset === 1 && typeof event.payload?.streamId === 'string') {
            streamId = event.payload.streamId;
            options.onStreamId?.(streamId);
          }
          if (signal?.aborted) return;
          if (event.offset <= lastOffset) continue;
          lastOffset = event.offset;
          yield event;
        }
      } catch (error) {
        if (signal?.aborted) return;
        if (error instanceof RivuletError) throw error;
        end = { kind: 'dropped', error: asRivuletError(error) };
      }
    } catch (error) {
      if (!(error instanceof Retry)) throw error;
      failures++;
      if (failures >= maxAttempts) throw error.error;
      end = { kind: 'dropped', error: error.error };
    } finally {
      signal?.removeEventListener('abort', forward);
      connection.abort();
    }
    if (end.kind === 'destroyed') {
      options.onDestroyed?.();
      return;
    }
    if (signal?.aborted) return;
    const delayMs = Math.min(maxDelay, initialDelay * 2 ** Math.max(0, failures - 1));
    options.onReconnect?.({ attempt: failures + 1, delayMs, error: end.error, lastOffset });
    await sleep(delayMs, signal);
  }
}
