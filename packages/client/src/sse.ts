/**
 * A text/event-stream parser following the WHATWG "server-sent events" interpretation rules, fed
 * incrementally: chunks may split a line, a CRLF pair or a multi-byte character anywhere. Lines
 * end at CRLF, LF or CR; ":" starts a comment; a blank line dispatches the buffered message
 * (nothing is dispatched while the data buffer is empty); one space after the field colon is
 * dropped; `id` containing NUL is ignored; `retry` takes digits only. A message left unterminated
 * when the stream ends is discarded, as the standard requires — a half-received frame is never
 * surfaced.
 */

export interface SseMessage {
  /** The `event:` field, "message" when absent. */
  event: string;
  /** The `data:` lines joined by "\n". */
  data: string;
  /** The last event id in effect when this message was dispatched ("" when none was ever set). */
  lastEventId: string;
}

export class SseParser {
  private pending = '';
  private skipLeadingLf = false;
  private atStart = true;
  private data: string[] = [];
  private eventType = '';
  private lastId = '';
  /** The reconnection delay the server asked for with `retry:`, if any. */
  retryMs: number | undefined;

  /** Feeds decoded text; answers the messages it completed. */
  push(text: string): SseMessage[] {
    let chunk = text;
    if (this.atStart && chunk.length > 0) {
      this.atStart = false;
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
    }
    if (this.skipLeadingLf && chunk.startsWith('\n')) chunk = chunk.slice(1);
    if (chunk.length > 0) this.skipLeadingLf = false;
    const messages: SseMessage[] = [];
    let buffer = this.pending + chunk;
    let start = 0;
    for (let i = 0; i < buffer.length; i++) {
      const c = buffer.charCodeAt(i);
      if (c !== 0x0a && c !== 0x0d) continue;
      this.line(buffer.slice(start, i), messages);
      if (c === 0x0d) {
        if (i + 1 < buffer.length) {
          if (buffer.charCodeAt(i + 1) === 0x0a) i++;
        } else {
          this.skipLeadingLf = true;
        }
      }
      start = i + 1;
    }
    buffer = buffer.slice(start);
    this.pending = buffer;
    return messages;
  }

  private line(line: string, out: SseMessage[]): void {
    if (line === '') {
      this.dispatch(out);
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.eventType = value;
        break;
      case 'data':
        this.data.push(value);
        break;
      case 'id':
        if (!value.includes('\u0000')) this.lastId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        break;
    }
  }

  private dispatch(out: SseMessage[]): void {
    const data = this.data;
    const event = this.eventType;
    this.data = [];
    this.eventType = '';
    if (data.length === 0) return;
    out.push({ event: event === '' ? 'message' : event, data: data.join('\n'), lastEventId: this.lastId });
  }
}

/**
 * The messages of an event-stream body, decoded as UTF-8 across chunk boundaries. Returning early
 * (break, or the consumer's error) cancels the body, which releases the connection.
 */
export async function* readSse(body: ReadableStream<Uint8Array>, parser = new SseParser()): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder('utf-8');
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        finished = true;
        yield* parser.push(decoder.decode());
        return;
      }
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
