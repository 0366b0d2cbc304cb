/**
 * An SSE reader over fetch streaming (text/event-stream, protocol §5.2): frames are parsed
 * as the server sends them, comments are skipped, and every wait has a deadline that fails with a
 * message instead of hanging the suite.
 */
import { expect } from 'vitest';
import type { CommittedEvent } from '@rivulet/contract';
import { queryString, streamRoute, type Api } from './http.js';

export interface SseFrame {
  id: string | undefined;
  event: string;
  data: string;
}

const DEFAULT_WAIT_MS = 5_000;

export class SseReader {
  private buffer = '';
  private readonly frames: SseFrame[] = [];
  private waiter: (() => void) | undefined;
  private done = false;
  private failure: unknown;
  private firstBytes!: () => void;
  /** Resolves when the first bytes of the body (comment or frame) arrived. */
  readonly opened: Promise<void>;
  /** The `event: stream` frame the server sends first: the lifetime this tail reads. */
  stream: { streamId: string | null; streamMaxOffset: number } | undefined;

  private constructor(
    readonly url: string,
    readonly response: Response,
    private readonly abort: AbortController,
  ) {
    this.opened = new Promise((resolve) => {
      this.firstBytes = resolve;
    });
    void this.pump();
  }

  /** Opens a tail; fails the test unless the server answers 200 text/event-stream. */
  static async open(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
    const abort = new AbortController();
    const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
    if (response.status !== 200) {
      const text = await response.text();
      throw new Error(`SSE ${url} answered ${response.status}: ${text}`);
    }
    expect(response.headers.get('content-type') ?? '').toMatch(/^text\/event-stream/);
    const reader = new SseReader(url, response, abort);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`SSE ${url}: no bytes within ${DEFAULT_WAIT_MS} ms of opening`)), DEFAULT_WAIT_MS);
    });
    try {
      await Promise.race([reader.opened, late]);
    } finally {
      clearTimeout(timer);
    }
    // The first frame names the lifetime (protocol §5.2); a tail refused for another lifetime
    // starts with `event: destroyed` instead, which stays queued for the test to read.
    const first = await reader.next();
    if (first?.event === 'stream') reader.stream = JSON.parse(first.data) as SseReader['stream'];
    else if (first) reader.frames.unshift(first);
    return reader;
  }

  private async pump(): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of this.response.body as unknown as AsyncIterable<Uint8Array>) {
        this.firstBytes();
        this.buffer += decoder.decode(chunk, { stream: true });
        this.parse();
      }
    } catch (error) {
      if (!this.abort.signal.aborted) this.failure = error;
    }
    this.firstBytes();
    this.done = true;
    this.wake();
  }

  private parse(): void {
    for (;;) {
      const end = this.buffer.indexOf('\n\n');
      if (end === -1) break;
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      let id: string | undefined;
      let event = 'message';
      const data: string[] = [];
      let fields = 0;
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const name = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (name === 'id') id = value;
        else if (name === 'event') event = value;
        else if (name === 'data') data.push(value);
        else continue;
        fields++;
      }
      if (fields > 0) this.frames.push({ id, event, data: data.join('\n') });
    }
    this.wake();
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  /** True once the server ended the response. */
  get ended(): boolean {
    return this.done && this.frames.length === 0;
  }

  /** The next frame, or null when the response ended; fails after `timeoutMs`. */
  async next(timeoutMs = DEFAULT_WAIT_MS): Promise<SseFrame | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const frame = this.frames.shift();
      if (frame) return frame;
      if (this.failure) throw new Error(`SSE ${this.url} failed: ${String(this.failure)}`);
      if (this.done) return null;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`SSE ${this.url}: no frame within ${timeoutMs} ms`);
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
        timer = setTimeout(resolve, left);
      });
      clearTimeout(timer);
    }
  }

  /** The next `event: event` frame as a committed event, checking that `id:` is its offset. */
  async nextEvent(timeoutMs = DEFAULT_WAIT_MS): Promise<CommittedEvent> {
    const frame = await this.next(timeoutMs);
    if (frame === null) throw new Error(`SSE ${this.url} ended while an event was expected`);
    expect(frame.event, `unexpected frame ${JSON.stringify(frame)}`).toBe('event');
    const event = JSON.parse(frame.data) as CommittedEvent;
    expect(frame.id).toBe(String(event.offset));
    return event;
  }

  /** The next `n` events. */
  async events(n: number, timeoutMs = DEFAULT_WAIT_MS): Promise<CommittedEvent[]> {
    const out: CommittedEvent[] = [];
    while (out.length < n) out.push(await this.nextEvent(timeoutMs));
    return out;
  }

  /** Events up to and including the first at or beyond `offset`. */
  async eventsThrough(offset: number, timeoutMs = DEFAULT_WAIT_MS): Promise<CommittedEvent[]> {
    const out: CommittedEvent[] = [];
    for (;;) {
      const event = await this.nextEvent(timeoutMs);
      out.push(event);
      if (event.offset >= offset) return out;
    }
  }

  /** Frames already received and not yet consumed. */
  get pending(): number {
    return this.frames.length;
  }

  close(): void {
    this.abort.abort();
  }
}

/** Opens `GET /v1/streams/{path}?live=sse&…` with the API's headers (token, project). */
export function openTail(
  api: Api,
  path: string,
  query: Record<string, string | number> = {},
  headers: Record<string, string> = {},
): Promise<SseReader> {
  const url = `${api.baseUrl}${streamRoute(path)}${queryString({ live: 'sse', ...query })}`;
  return SseReader.open(url, { ...api.defaultHeaders, ...headers });
}
