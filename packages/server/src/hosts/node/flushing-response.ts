/**
 * The Node host's responses (node:http's `ServerResponse` option): a live event stream's writes
 * leave at once (docs/performance.md "Live frames leave at once").
 *
 * node:http corks the socket at a response's write and uncorks it on `process.nextTick`, so that
 * writes of one moment go out in one packet. A nextTick queued from a promise continuation runs
 * only once every queued continuation has run. When a group commit becomes durable, the answers of
 * its appends, the publication to live readers and the delivery bookkeeping are one such cascade,
 * so an SSE frame handed over at publication waited for all of it: on the peers' lag load, the
 * slowest copies reached their reader 0.5 ms after their source's answer. Here the write of a
 * `live=sse` response (the Rivulet tail, protocol §5.2, and the Durable Streams one) uncorks the
 * socket right after it: the frame is on the socket before the cascade goes on. A live reader's
 * frames come one batch of events per write (http/sse.ts), so this costs one send per batch.
 * Other responses keep node:http's cork.
 */
import { ServerResponse, type IncomingMessage } from 'node:http';

/** Whether a request target asks for a live event stream (`live=sse` in its query). */
export function asksForEventStream(target: string | undefined): boolean {
  const query = target?.indexOf('?') ?? -1;
  return query >= 0 && new URLSearchParams(target!.slice(query + 1)).get('live') === 'sse';
}

const write = ServerResponse.prototype.write as (this: ServerResponse, ...args: unknown[]) => boolean;

export class FlushingResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /** Decided at the first write: this response is a live event stream. */
  private flushes: boolean | undefined;

  override write(...args: unknown[]): boolean {
    const ok = write.apply(this, args);
    this.flushes ??= asksForEventStream(this.req.url);
    if (this.flushes && this.socket !== null && this.socket.writableCorked > 0) this.socket.uncork();
    return ok;
  }
}
