/**
 * A live event stream's writes leave at once (flushing-response.ts): after a write of a `live=sse`
 * response the socket is no longer corked; other responses keep node:http's cork until nextTick.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { asksForEventStream, FlushingResponse } from './flushing-response.js';

describe('asksForEventStream', () => {
  it('is the live=sse query parameter, wherever it stands in the query', () => {
    expect(asksForEventStream('/v1/streams/a/b?live=sse')).toBe(true);
    expect(asksForEventStream('/v1/streams/a?afterOffset=3&live=sse&eventTypes=x')).toBe(true);
    expect(asksForEventStream('/v1/stream/a?offset=-1&live=sse')).toBe(true);
  });

  it('is not any other query or none', () => {
    for (const target of ['/v1/streams/a', '/v1/streams/a?live=long-poll', '/v1/streams/a?alive=sse', '/v1/streams/a?live=', '/v1/streams/live=sse', undefined]) {
      expect(asksForEventStream(target)).toBe(false);
    }
  });
});

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** Serves two writes per request and answers, per request target, the socket's corked count after the first write and the body the client read. */
async function corkedAfterWrite(target: string): Promise<{ corked: number; body: string }> {
  let corked = -1;
  server = createServer({ ServerResponse: FlushingResponse }, (_incoming, outgoing) => {
    outgoing.writeHead(200, { 'content-type': 'text/event-stream' });
    // From a promise continuation, as a live frame is written (http/sse.ts through the Hono adapter).
    void Promise.resolve().then(() => {
      outgoing.write('data: one\n\n');
      corked = outgoing.socket?.writableCorked ?? -1;
      outgoing.end('data: two\n\n');
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const response = await fetch(`http://127.0.0.1:${port}${target}`);
  return { corked, body: await response.text() };
}

describe('FlushingResponse', () => {
  it('uncorks the socket right after a write of a live=sse response', async () => {
    expect(await corkedAfterWrite('/v1/streams/a?live=sse')).toEqual({ corked: 0, body: 'data: one\n\ndata: two\n\n' });
  });

  it('leaves the cork of any other response to node:http', async () => {
    expect(await corkedAfterWrite('/v1/streams/a?limit=5')).toEqual({ corked: 1, body: 'data: one\n\ndata: two\n\n' });
  });
});
