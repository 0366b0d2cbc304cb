/**
 * `GET /v1/stream/{name}?live=sse` (docs/durable-streams.md "SSE"): every batch of messages is
 * one `event: data` frame (a JSON array on a JSON stream, the text on a text stream, base64 on
 * any other), and every data frame is followed by an `event: control` frame with the offset to
 * resume from, a cursor and `upToDate`; on a closed stream the last control frame says
 * `streamClosed` and the answer ends. Payload lines are split on every line end, so a payload can
 * never forge a frame.
 */
import { whenAborted } from '../../core/when-aborted.js';
import type { DsStreams } from './store.js';
import { gone, notFound, refuse } from './answer.js';
import { collect, offsetOf, renderBody, waitForMore } from './read.js';
import { configOf, headOf } from './state.js';
import { toBase64 } from './messages.js';
import { H, formatOffset, isJsonType, isTextType, responseCursor } from './wire.js';

export interface SseRequest {
  projectId: string | null;
  path: string;
  query: URLSearchParams;
  longPollTimeoutMs: number;
  now(): number;
  stopping: AbortSignal | undefined;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function frame(event: string, payload: string): string {
  return `event: ${event}\n${payload.split(/\r\n|\r|\n/).map((line) => `data:${line}`).join('\n')}\n\n`;
}

export async function handleSse(streams: DsStreams, request: SseRequest): Promise<Response> {
  const offset = offsetOf(request.query);
  if (offset instanceof Response) return offset;
  if (offset === null) return refuse(400, 'SSE needs an offset');
  const start = offset;
  const { projectId, path } = request;
  const state = await streams.load(projectId, path);
  if (state === null) return notFound();
  if (state.softDeleted) return gone();
  streams.touch(projectId, path);
  const contentType = configOf(state).contentType;
  const json = isJsonType(contentType);
  const base64 = !isTextType(contentType);
  let clientCursor = request.query.get('cursor');
  const abort = new AbortController();
  const stopListening = whenAborted(request.stopping, () => abort.abort());

  async function* frames(): AsyncGenerator<Uint8Array> {
    let after = start.kind === 'start' ? 0 : start.kind === 'now' ? headOf(state!) : start.offset;
    while (!abort.signal.aborted) {
      const current = await streams.load(projectId, path);
      if (current === null) return;
      const found = await collect(streams, projectId, path, current, after);
      // A batch's data frame and the control frame after it go as one chunk: one write, one packet
      // (the Node host sends each write of a live stream at once, hosts/node/flushing-response.ts).
      let data = '';
      if (found.messages.length > 0) {
        const body = renderBody(found.messages, json);
        data = frame('data', base64 ? toBase64(body) : decoder.decode(body));
      }
      after = found.next;
      const closed = current.closed && found.upToDate && after >= headOf(current);
      const control: Record<string, unknown> = { streamNextOffset: formatOffset(after) };
      if (closed) control.streamClosed = true;
      else {
        clientCursor = control.streamCursor = responseCursor(request.now(), clientCursor);
        if (found.upToDate) control.upToDate = true;
      }
      yield encoder.encode(data + frame('control', JSON.stringify(control)));
      if (closed) return;
      if (!found.upToDate) continue;
      const waited = await waitForMore(streams, { projectId, path, longPollTimeoutMs: request.longPollTimeoutMs, signal: abort.signal }, current, after);
      if (waited === 'gone') return;
    }
  }

  const iterator = frames();
  const finish = () => {
    stopListening();
    abort.abort();
    void iterator.return(undefined);
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await iterator.next();
        if (next.done) {
          finish();
          controller.close();
        } else controller.enqueue(next.value);
      } catch (error) {
        finish();
        controller.error(error);
      }
    },
    cancel() {
      finish();
    },
  });
  const headers: Record<string, string> = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
  if (base64) headers[H.sseEncoding] = 'base64';
  return new Response(body, { status: 200, headers });
}
