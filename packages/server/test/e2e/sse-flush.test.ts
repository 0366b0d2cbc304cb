/**
 * The Node host answers with FlushingResponse (hosts/node/flushing-response.ts): a live SSE frame
 * is on the socket right after its write, uncorked, for the Rivulet tail and the Durable Streams
 * one; a page read keeps node:http's way. Node host only (the Worker host has no node:http).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FlushingResponse } from '../../src/hosts/node/flushing-response.js';
import { openTail } from '../helpers/sse.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

interface Write {
  url: string;
  text: string;
  corkedAfter: number;
}

const writes: Write[] = [];
const original = FlushingResponse.prototype.write;
let server: TestServer;

beforeAll(async () => {
  FlushingResponse.prototype.write = function (this: FlushingResponse, ...args: unknown[]): boolean {
    const ok = original.apply(this, args);
    const chunk = args[0];
    const text = chunk instanceof Uint8Array ? Buffer.from(chunk).toString('utf8') : String(chunk);
    writes.push({ url: this.req.url ?? '', text, corkedAfter: this.socket?.writableCorked ?? -1 });
    return ok;
  };
  server = await startTestServer();
});

afterAll(async () => {
  FlushingResponse.prototype.write = original;
  await server?.close();
});

describe('live SSE frames leave at once on the Node host', () => {
  it('a live frame of the Rivulet tail is written through FlushingResponse and leaves the socket uncorked', async () => {
    const path = '/sse-flush/rivulet';
    const tail = await openTail(server.api, path);
    try {
      await server.api.append(path, [{ type: 'flush/test', payload: { n: 1 } }]);
      const events = await tail.eventsThrough(2);
      expect(events.map((e) => e.type)).toEqual(['events.iterate.com/stream/created', 'flush/test']);
      const frames = writes.filter((w) => w.url.includes('/sse-flush/rivulet') && w.text.includes('"flush/test"'));
      expect(frames.length).toBeGreaterThan(0);
      expect(frames.every((w) => w.corkedAfter === 0)).toBe(true);
    } finally {
      tail.close();
    }
  });

  it('so is a Durable Streams live=sse frame, one write with the control frame after it', async () => {
    const base = `${server.api.baseUrl}/v1/stream/sse-flush/ds`;
    expect((await fetch(base, { method: 'PUT', headers: { 'content-type': 'application/json' } })).status).toBe(201);
    const controller = new AbortController();
    const response = await fetch(`${base}?offset=-1&live=sse`, { signal: controller.signal });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    try {
      expect((await fetch(base, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ flush: 'ds' }) })).status).toBe(204);
      let text = '';
      while (!text.includes('"flush":"ds"')) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      expect(text).toContain('"flush":"ds"');
      const frames = writes.filter((w) => w.url.includes('/v1/stream/sse-flush/ds') && w.text.includes('flush'));
      expect(frames.length).toBeGreaterThan(0);
      expect(frames.every((w) => w.corkedAfter === 0)).toBe(true);
      // A batch's data frame goes in one write with its control frame: a reader gets them together.
      expect(frames.every((w) => /^event: data\n[^]*\n\nevent: control\n[^]*\n\n$/.test(w.text))).toBe(true);
    } finally {
      controller.abort();
    }
  });
});
