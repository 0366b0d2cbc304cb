/**
 * The connection front of the Node host (front.ts) driven byte by byte on a fake socket: a head
 * read in up to 15 pieces by the front itself and handed to node:http at the 16th, half-closed
 * connections, requests cut short, and the hand-over after the answers before another request.
 */
import { EventEmitter } from 'node:events';
import type { Server } from 'node:http';
import { describe, expect, it } from 'vitest';
import { attachFront } from './front.js';
import { appendRequest as append, getRequest as get } from '../../../test/helpers/http1-requests.js';

/** A socket that only records what the front does with it; its bytes are pushed by the test. */
class FakeSocket extends EventEmitter {
  written: string[] = [];
  unshifted: Buffer[] = [];
  destroyed = false;
  ended = false;
  /** What end() wrote last, if anything. */
  endedWith: string | undefined;
  writableNeedDrain = false;
  write(text: string): boolean {
    this.written.push(text);
    return true;
  }
  end(text?: string): void {
    this.ended = true;
    this.endedWith = text;
  }
  destroy(): void {
    this.destroyed = true;
  }
  pause(): void {}
  resume(): void {}
  unshift(bytes: Buffer): void {
    this.unshifted.push(bytes);
  }
}

describe('the connection front, driven byte by byte', () => {
  function setUp() {
    const server = new EventEmitter() as EventEmitter & { keepAliveTimeout: number; headersTimeout: number; requestTimeout: number };
    Object.assign(server, { keepAliveTimeout: 5000, headersTimeout: 60_000, requestTimeout: 300_000 });
    const taken: FakeSocket[] = [];
    server.on('connection', (socket: FakeSocket) => taken.push(socket));
    const answered: string[] = [];
    const front = attachFront(server as unknown as Server, {
      answer: async (url, _headers, body) => {
        answered.push(`${url} ${Buffer.from(await body()).toString()}`);
        return { status: 200, text: '{}' };
      },
      rules: { maxBodyBytes: 100, accepts: (target) => target.startsWith('/v1/streams/') },
      log: () => undefined,
    });
    const socket = new FakeSocket();
    server.emit('connection', socket);
    return { front, socket, taken, answered };
  }
  const request = append('s', '{"type":"t/x"}');

  it('reads a head that arrives in up to 15 pieces itself', async () => {
    const { socket, taken, answered } = setUp();
    const bytes = Buffer.from(request);
    for (let i = 0; i < 14; i++) socket.emit('data', bytes.subarray(i, i + 1));
    socket.emit('data', bytes.subarray(14));
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toEqual(['/v1/streams/s {"type":"t/x"}']);
    expect(taken).toEqual([]);
    expect(socket.written[0]).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });

  it('hands the connection over at the 16th piece of a head, with every byte so far, in order', () => {
    const { front, socket, taken, answered } = setUp();
    const bytes = Buffer.from(request);
    for (let i = 0; i < 16; i++) socket.emit('data', bytes.subarray(i, i + 1));
    expect(taken).toEqual([socket]);
    expect(Buffer.concat(socket.unshifted).toString()).toBe(request.slice(0, 16));
    expect(front.handedOver).toBe(1);
    expect(front.connections).toBe(0);
    // Later bytes are node:http's: the front no longer listens.
    expect(socket.listenerCount('data')).toBe(0);
    expect(answered).toEqual([]);
  });

  it('answers every request sent before the client half-closed, then ends the connection', async () => {
    const { socket, answered } = setUp();
    socket.emit('data', Buffer.from(request + request + request));
    socket.emit('end');
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toHaveLength(3);
    expect(socket.written.map((w) => /Connection: (\S+)/.exec(w)![1])).toEqual(['keep-alive', 'keep-alive', 'close']);
    expect(socket.ended).toBe(true);
  });

  it('answers 400 and ends a half-closed connection whose last request can never complete (as node:http)', async () => {
    const cut = request.indexOf('\r\n\r\n') + 6; // inside the body
    for (const rest of [request.slice(0, 20), request.slice(0, cut)]) {
      const { socket, answered } = setUp();
      socket.emit('data', Buffer.from(request + rest));
      socket.emit('end');
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(answered).toHaveLength(1);
      expect(socket.written).toHaveLength(1);
      expect(socket.ended).toBe(true);
      expect(socket.endedWith).toBe('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    }
  });

  it('answers 400 to a request cut short while nothing else is pending', () => {
    const { socket, answered } = setUp();
    socket.emit('data', Buffer.from(request.slice(0, 30)));
    socket.emit('end');
    expect(answered).toEqual([]);
    expect(socket.endedWith).toBe('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
  });

  it('ends a half-closed connection with nothing unread without a word', () => {
    const { socket } = setUp();
    socket.emit('end');
    expect(socket.ended).toBe(true);
    expect(socket.endedWith).toBeUndefined();
  });

  it('hands over after the answers before the other request, with that request and all after it', async () => {
    const { socket, taken, answered } = setUp();
    const other = get('/healthz');
    socket.emit('data', Buffer.from(request + other + request));
    expect(taken).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toHaveLength(1);
    expect(socket.written).toHaveLength(1);
    expect(taken).toEqual([socket]);
    expect(Buffer.concat(socket.unshifted).toString()).toBe(other + request);
  });
});
