/**
 * The connection front of the Node host (front.ts) over raw sockets: plain appends answered
 * on the socket, in order; the hand-over to node:http at the first other request with every byte
 * intact; node:http's manners (headers, Connection: close, half-close, time limits); shutdown.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { EventEmitter } from 'node:events';
import type { Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNodeServer, type NodeServerOptions, type RunningServer } from './serve.js';
import { attachFront } from './front.js';

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A raw client connection: sends bytes, reads answers one by one (Content-Length or until close). */
class Raw {
  private buffer = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  closed = false;
  readonly socket: Socket;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.wake();
    });
    this.socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    this.socket.on('error', () => undefined);
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  private changed(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  send(text: string | Buffer): void {
    this.socket.write(text);
  }

  async answer(): Promise<Answer> {
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end >= 0) {
        const [statusLine, ...lines] = this.buffer.toString('latin1', 0, end).split('\r\n');
        const headers: Record<string, string> = {};
        for (const line of lines) {
          const colon = line.indexOf(':');
          headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
        }
        const status = Number(statusLine!.split(' ')[1]);
        const length = headers['content-length'];
        if (length !== undefined && this.buffer.length >= end + 4 + Number(length)) {
          const body = this.buffer.toString('utf8', end + 4, end + 4 + Number(length));
          this.buffer = this.buffer.subarray(end + 4 + Number(length));
          return { status, headers, body };
        }
        if (length === undefined && this.closed) {
          const body = this.buffer.toString('utf8', end + 4);
          this.buffer = Buffer.alloc(0);
          return { status, headers, body };
        }
      }
      if (this.closed) throw new Error(`connection closed; unread: ${JSON.stringify(this.buffer.toString('latin1'))}`);
      await this.changed();
    }
  }

  async untilClosed(): Promise<void> {
    while (!this.closed) await this.changed();
  }

  end(): void {
    this.socket.end();
  }
}

function append(path: string, body: string, extra: string[] = []): string {
  return [
    `POST /v1/streams/${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...extra,
    '',
    body,
  ].join('\r\n');
}

function get(path: string, extra: string[] = []): string {
  return [`GET ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...extra, '', ''].join('\r\n');
}

const offsets = (answer: Answer): number[] => (JSON.parse(answer.body) as { events: Array<{ offset: number }> }).events.map((e) => e.offset);

async function withServer(options: NodeServerOptions, body: (server: RunningServer) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-front-'));
  const server = await startNodeServer({ port: 0, data: dir, logger: { error: () => undefined }, ...options });
  try {
    await body(server);
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the connection front', () => {
  let server: RunningServer;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rivulet-front-'));
    server = await startNodeServer({ port: 0, data: dir, maxBodyBytes: 1000, logger: { error: () => undefined } });
  });

  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers plain appends on the socket, pipelined or a byte at a time, in order, with node:http’s headers', async () => {
    const handedOver = server.front.handedOver;
    const raw = new Raw(server.port);
    raw.send(append('front/a', '{"type":"t/x"}') + append('front/a', '{"type":"t/y"}') + append('front/a', '[{"type":"t/z"},{"type":"t/z"}]'));
    const answers = [await raw.answer(), await raw.answer(), await raw.answer()];
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(answers.map(offsets)).toEqual([[2], [3], [4, 5]]);
    const headers = answers[0]!.headers;
    expect(headers['content-type']).toBe('application/json; charset=utf-8');
    expect(headers['connection']).toBe('keep-alive');
    expect(headers['keep-alive']).toBe('timeout=5');
    expect(Number.isNaN(Date.parse(headers['date']!))).toBe(false);
    expect(Number(headers['content-length'])).toBe(Buffer.byteLength(answers[0]!.body));

    // A head in a few pieces is still the front's.
    const split = Buffer.from(append('front/a', '{"type":"t/é"}'));
    for (const piece of [split.subarray(0, 10), split.subarray(10, 40), split.subarray(40)]) {
      raw.send(piece);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const pieces = await raw.answer();
    expect(pieces.status).toBe(200);
    expect(JSON.parse(pieces.body)).toMatchObject({ events: [{ offset: 6, type: 't/é' }] });
    expect(server.front.handedOver).toBe(handedOver);
    raw.end();
    await raw.untilClosed();
  });

  it('hands a connection to node:http at its first other request, after the answers before it, with its bytes intact', async () => {
    const handedOver = server.front.handedOver;
    const raw = new Raw(server.port);
    // One write: an append, a read of the same stream, another append.
    raw.send(append('front/b', '{"type":"t/1"}') + get('/v1/streams/front/b') + append('front/b', '{"type":"t/2"}'));
    const first = await raw.answer();
    const read = await raw.answer();
    const second = await raw.answer();
    expect(offsets(first)).toEqual([2]);
    expect(read.status, read.body).toBe(200);
    // The read came after the first append's answer: it sees it, and not the second.
    expect((JSON.parse(read.body) as { events: Array<{ type: string }> }).events.map((e) => e.type), read.body).toEqual(['events.iterate.com/stream/created', 't/1']);
    expect(offsets(second)).toEqual([3]);
    expect(server.front.handedOver).toBe(handedOver + 1);
    const metrics = await fetch(`${server.url}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(new RegExp(`^rivulet_http_handovers_total ${server.front.handedOver}$`, 'm'));
    expect(metrics).toMatch(/^rivulet_http_front_connections \d+$/m);
    raw.end();
    await raw.untilClosed();
  });

  it('answers a head that arrives a byte at a time (node:http reads it, see the unit test below)', async () => {
    const raw = new Raw(server.port);
    raw.socket.setNoDelay(true);
    for (const byte of Buffer.from(append('front/bytes', '{"type":"t/é"}'))) {
      raw.send(Buffer.from([byte]));
      await new Promise((resolve) => setImmediate(resolve));
    }
    const answer = await raw.answer();
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ events: [{ offset: 2, type: 't/é' }] });
    raw.end();
    await raw.untilClosed();
  });

  it('gives a connection whose first request is not an append to node:http, which goes on answering appends', async () => {
    const raw = new Raw(server.port);
    raw.send(get('/healthz'));
    expect((await raw.answer()).status).toBe(200);
    raw.send(append('front/c', '{"type":"t/x"}'));
    const answer = await raw.answer();
    expect(answer.status).toBe(200);
    expect(offsets(answer)).toEqual([2]);
    raw.end();
    await raw.untilClosed();
  });

  it('answers an append the same way before and after the hand-over', async () => {
    const cases = [
      append('front/same', '{"type":"t/x","payload":{"a":1}}'),
      append('front/same', '{"type":"t/x"'),
      append('front/same', '{"nope":1}'),
      append('front/same', '{"type":"stream/created"}'),
      append('front//same', '{"type":"t/x"}'),
      append('front/same', '{"type":"t/x"}', ['X-Project-Id: NOT VALID']),
      append('front/same', '{"type":"t/x"}').replace('application/json', 'text/plain'),
    ];
    const mask = (a: Answer) => `${a.status} ${a.headers['content-type']} ${a.body.replace(/"(createdAt|offset)":("[^"]*"|\d+)/g, '"$1":_')}`;
    const front = new Raw(server.port);
    const node = new Raw(server.port);
    node.send(get('/healthz'));
    await node.answer();
    for (const request of cases) {
      front.send(request);
      node.send(request);
      expect(mask(await front.answer())).toBe(mask(await node.answer()));
    }
    front.end();
    node.end();
  });

  it('leaves what it does not recognise to node:http, which refuses it', async () => {
    // Both a length and chunked coding: node:http refuses it and closes the connection.
    const smuggle = new Raw(server.port);
    smuggle.send(append('front/d', '{"type":"t/x"}', ['Transfer-Encoding: chunked']));
    expect((await smuggle.answer()).status).toBe(400);
    await smuggle.untilClosed();
    // A bare LF between fields.
    const lf = new Raw(server.port);
    lf.send(`POST /v1/streams/front/d HTTP/1.1\r\nHost: 127.0.0.1\nContent-Length: 2\r\n\r\n{}`);
    expect((await lf.answer()).status).toBe(400);
    await lf.untilClosed();
    // A body above the limit: the append route's own answer (node:http's native path).
    const big = new Raw(server.port);
    big.send(append('front/d', `{"type":"t/x","payload":"${'x'.repeat(1000)}"}`));
    const answer = await big.answer();
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
    big.end();
  });

  it('closes after the answer when asked to, and when the client has half-closed', async () => {
    const close = new Raw(server.port);
    close.send(append('front/e', '{"type":"t/x"}', ['Connection: close']));
    const answer = await close.answer();
    expect(answer.status).toBe(200);
    expect(answer.headers['connection']).toBe('close');
    expect(answer.headers['keep-alive']).toBeUndefined();
    await close.untilClosed();

    const half = new Raw(server.port);
    half.send(append('front/e', '{"type":"t/y"}'));
    half.end();
    // The answer still arrives (its Connection header depends on whether the FIN came first).
    expect((await half.answer()).status).toBe(200);
    await half.untilClosed();

    // A request the half-close cut short gets node:http's 400, after the answers before it.
    const cut = new Raw(server.port);
    const whole = append('front/e', '{"type":"t/z"}');
    cut.send(whole + whole.slice(0, whole.length - 3));
    cut.end();
    expect((await cut.answer()).status).toBe(200);
    const refused = await cut.answer();
    expect(refused.status).toBe(400);
    expect(refused.headers['connection']).toBe('close');
    await cut.untilClosed();
  });
});

describe('the connection front’s time limits and shutdown', () => {
  it('closes an idle connection after keepAliveTimeout and a silent new one after headersTimeout', async () => {
    await withServer({ keepAliveTimeoutMs: 150, headersTimeoutMs: 400 }, async (server) => {
      const used = new Raw(server.port);
      used.send(append('front/t', '{"type":"t/x"}'));
      const answer = await used.answer();
      expect(answer.headers['keep-alive']).toBe('timeout=0');
      const answeredAt = Date.now();
      const silent = new Raw(server.port);
      const openedAt = Date.now();
      await used.untilClosed();
      expect(Date.now() - answeredAt).toBeGreaterThanOrEqual(140);
      await silent.untilClosed();
      expect(Date.now() - openedAt).toBeGreaterThanOrEqual(390);
      expect(server.front.connections).toBe(0);
    });
  });

  it('answers 408 to a request whose head does not arrive within headersTimeout', async () => {
    await withServer({ headersTimeoutMs: 200 }, async (server) => {
      const raw = new Raw(server.port);
      raw.send('POST /v1/streams/front/t HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      const answer = await raw.answer();
      expect(answer.status).toBe(408);
      await raw.untilClosed();
    });
  });

  it('keeps a connection that is used within the limits', async () => {
    await withServer({ keepAliveTimeoutMs: 300 }, async (server) => {
      const raw = new Raw(server.port);
      for (let i = 0; i < 4; i++) {
        raw.send(append('front/k', '{"type":"t/x"}'));
        expect((await raw.answer()).status).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(raw.closed).toBe(false);
      raw.end();
      await raw.untilClosed();
    });
  });

  it('closes its connections when the server stops, an append in flight or not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rivulet-front-'));
    try {
      const server = await startNodeServer({ port: 0, data: dir, logger: { error: () => undefined } });
      const idle = new Raw(server.port);
      idle.send(append('front/s', '{"type":"t/x"}'));
      await idle.answer();
      const partial = new Raw(server.port);
      partial.send('POST /v1/streams/front/s HTTP/1.1\r\n');
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(server.front.connections).toBe(2);
      await server.close();
      await idle.untilClosed();
      await partial.untilClosed();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

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
