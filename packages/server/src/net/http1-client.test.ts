/**
 * The lean HTTP/1.1 client's connection handling against raw TCP servers on loopback (the
 * framing itself is http1-response.test.ts): keep-alive and its limits, the one new attempt after a
 * stale kept-alive connection (and no other), connections the answer says not to reuse, idle
 * expiry, close().
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Http1Client, MAX_IDLE_PER_KEY, type Http1Destination } from './http1-client.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A TCP server that hands each complete request (head + Content-Length body) to `onRequest`. */
async function rawServer(onRequest: (socket: Socket, index: number, request: string) => void): Promise<{ server: Server; port: number; connections: () => number; requests: string[] }> {
  const requests: string[] = [];
  let connections = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        const request = buffered.slice(0, end + 4 + length);
        buffered = buffered.slice(end + 4 + length);
        requests.push(request);
        onRequest(socket, requests.length - 1, request);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return { server, port, connections: () => connections, requests };
}

function client(options?: ConstructorParameters<typeof Http1Client>[0]): Http1Client {
  const c = new Http1Client(options);
  cleanups.push(() => c.close());
  return c;
}

const to = (port: number): Http1Destination => ({ key: `127.0.0.1:${port}`, host: '127.0.0.1', port });
const request = (body = 'x', signal = new AbortController().signal) => ({
  head: `POST /hook HTTP/1.1\r\nhost: test\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`,
  body,
  signal,
  maxBodyBytes: 1024,
});
const NO_CONTENT = 'HTTP/1.1 204 No Content\r\n\r\n';

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

describe('keep-alive', () => {
  it('sends requests one after another on one connection, head and body as written', async () => {
    const s = await rawServer((socket) => socket.write(NO_CONTENT));
    const c = client();
    for (let i = 0; i < 3; i++) expect(await c.post(to(s.port), request(`body-${i}`))).toEqual({ status: 204, statusText: 'No Content', body: '' });
    expect(s.connections()).toBe(1);
    expect(s.requests[2]).toBe('POST /hook HTTP/1.1\r\nhost: test\r\ncontent-length: 6\r\n\r\nbody-2');
    expect(c.idleCount()).toBe(1);
  });

  it('an answer with Connection: close is not followed by another request on its connection', async () => {
    const s = await rawServer((socket) => socket.write('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok'));
    const c = client();
    expect((await c.post(to(s.port), request())).body).toBe('ok');
    expect((await c.post(to(s.port), request())).body).toBe('ok');
    expect(s.connections()).toBe(2);
    expect(c.idleCount()).toBe(0);
  });

  it(`keeps at most ${MAX_IDLE_PER_KEY} idle connections per destination`, async () => {
    const s = await rawServer((socket) => setTimeout(() => socket.write(NO_CONTENT), 20));
    const c = client();
    await Promise.all(Array.from({ length: MAX_IDLE_PER_KEY }, () => c.post(to(s.port), request())));
    expect(c.idleCount(to(s.port).key)).toBe(MAX_IDLE_PER_KEY);
    await Promise.all(Array.from({ length: MAX_IDLE_PER_KEY + 1 }, () => c.post(to(s.port), request())));
    expect(s.connections()).toBe(MAX_IDLE_PER_KEY + 1);
    expect(c.idleCount(to(s.port).key)).toBe(MAX_IDLE_PER_KEY);
  });

  it('closes connections left idle longer than the idle time', async () => {
    let closed = 0;
    const s = await rawServer((socket) => {
      socket.once('close', () => closed++);
      socket.write(NO_CONTENT);
    });
    const c = client({ idleMs: 30 });
    await c.post(to(s.port), request());
    expect(c.idleCount()).toBe(1);
    await expect.poll(() => closed, { timeout: 2000 }).toBe(1);
    expect(c.idleCount()).toBe(0);
  });

  it('an answer that comes before the whole request was written does not keep the connection', async () => {
    // The server answers at the first bytes and stops reading: most of a large body stays queued.
    const sockets: Socket[] = [];
    const server = createServer((socket) => {
      sockets.push(socket);
      socket.once('data', () => {
        socket.pause();
        socket.write(NO_CONTENT);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    cleanups.push(() => {
      // A paused socket never notices the client left: end it here, or close() waits forever.
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(resolve));
    });
    const c = client();
    const answer = await c.post(to(port), request('z'.repeat(16 * 1024 * 1024)));
    expect(answer.status).toBe(204);
    expect(c.idleCount()).toBe(0);
  });

  it('a connection is not used within a second of the idle timeout the server announced', async () => {
    // timeout=1: the connection is already within the margin when the answer is done.
    const short = await rawServer((socket) => socket.write('HTTP/1.1 204 No Content\r\nKeep-Alive: timeout=1\r\n\r\n'));
    const c = client();
    await c.post(to(short.port), request());
    await c.post(to(short.port), request());
    expect(short.connections()).toBe(2);
    // timeout=30: plenty to spare, so the next request goes on the same connection.
    const long = await rawServer((socket) => socket.write('HTTP/1.1 204 No Content\r\nKeep-Alive: timeout=30\r\n\r\n'));
    await c.post(to(long.port), request());
    await c.post(to(long.port), request());
    expect(long.connections()).toBe(1);
  });

  it('a server that talks while nothing was asked loses the connection', async () => {
    const s = await rawServer((socket) => {
      socket.write(NO_CONTENT);
      setTimeout(() => socket.write('HTTP/1.1 200 OK\r\n\r\nunasked'), 10);
    });
    const c = client();
    await c.post(to(s.port), request());
    await expect.poll(() => c.idleCount()).toBe(0);
    expect((await c.post(to(s.port), request())).status).toBe(204);
    expect(s.connections()).toBe(2);
  });
});

describe('connections that end without an answer', () => {
  it('a kept-alive connection dropped by the server on the next request: sent once more, on a new connection', async () => {
    const s = await rawServer((socket, index) => {
      if (index === 1) socket.destroy();
      else socket.write(NO_CONTENT);
    });
    let opened = 0;
    let resent = 0;
    const c = client({ onConnection: () => opened++, onResend: () => resent++ });
    expect((await c.post(to(s.port), request('first'))).status).toBe(204);
    expect((await c.post(to(s.port), request('second'))).status).toBe(204);
    expect(s.requests.map((r) => r.slice(-6))).toEqual(['\nfirst', 'second', 'second']);
    expect(s.connections()).toBe(2);
    expect([opened, resent]).toEqual([2, 1]);
  });

  it('a new connection dropped without an answer rejects (no second attempt)', async () => {
    const s = await rawServer((socket) => socket.destroy());
    const error = await failure(client().post(to(s.port), request()));
    expect(error.message).toMatch(/closed before an answer|ECONNRESET/);
    expect(s.requests).toHaveLength(1);
  });

  it('a kept-alive connection that dies after part of an answer is not tried again', async () => {
    const s = await rawServer((socket, index) => {
      if (index === 0) socket.write(NO_CONTENT);
      else socket.end('HTTP/1.1 200 O');
    });
    const c = client();
    await c.post(to(s.port), request());
    const error = await failure(c.post(to(s.port), request()));
    expect(error.message).toBe('the connection closed before an answer');
    expect(s.requests).toHaveLength(2);
  });

  it('a connection refused rejects with its code', async () => {
    const s = await rawServer(() => undefined);
    const port = s.port;
    await cleanups.pop()!();
    const error = await failure(client().post(to(port), request()));
    expect((error as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
  });
});

describe('the signal and close()', () => {
  it('an aborted signal refuses at once; aborting destroys the connection in flight', async () => {
    let serverClosed = false;
    const s = await rawServer((socket) => socket.once('close', () => (serverClosed = true)));
    const c = client();
    const aborted = new AbortController();
    aborted.abort(new Error('gone'));
    expect((await failure(c.post(to(s.port), request('x', aborted.signal)))).message).toBe('gone');
    const abort = new AbortController();
    const pending = c.post(to(s.port), request('x', abort.signal));
    await expect.poll(() => s.requests.length).toBe(1);
    abort.abort(new Error('delivery timed out'));
    expect((await failure(pending)).message).toBe('delivery timed out');
    await expect.poll(() => serverClosed).toBe(true);
  });

  it('close() fails a request in flight and ends its connection', async () => {
    let serverClosed = false;
    const s = await rawServer((socket) => socket.once('close', () => (serverClosed = true)));
    const c = client();
    const pending = c.post(to(s.port), request());
    await expect.poll(() => s.requests.length).toBe(1);
    c.close();
    expect((await failure(pending)).message).toBe('the webhook client is closed');
    await expect.poll(() => serverClosed).toBe(true);
  });

  it('close() ends idle connections and refuses later requests', async () => {
    let closed = false;
    const s = await rawServer((socket) => {
      socket.once('close', () => (closed = true));
      socket.write(NO_CONTENT);
    });
    const c = client();
    await c.post(to(s.port), request());
    c.close();
    await expect.poll(() => closed).toBe(true);
    expect((await failure(c.post(to(s.port), request()))).message).toBe('the webhook client is closed');
  });
});
