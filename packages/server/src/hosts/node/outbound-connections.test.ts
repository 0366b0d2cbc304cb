/**
 * The Node outbound adapter's connection rules (protocol §17.6) against raw TCP servers and a
 * local https server: kept-alive connections and when they are not used again, the one resend
 * after a kept connection the receiver had closed (and no other), the header-section cap, the
 * connect timeout, TLS session resumption, pinning under DNS rebinding, and when `onSent` is told.
 */
import { createServer as createHttpsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HookServer, TEST_CA, TEST_KEY } from '../../../test/helpers/hook-server.js';
import { rawServer, silentServer, type RawServer } from '../../../test/helpers/raw-servers.js';
import { nodeOutbound, type HostResolver, type NodeOutbound, type NodeOutboundOptions } from './outbound.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function outbound(options: Partial<NodeOutboundOptions> = {}): NodeOutbound & { opened: number; resent: number } {
  const counts = { opened: 0, resent: 0 };
  const http = nodeOutbound({
    allowPrivate: true,
    onConnection: () => counts.opened++,
    onResend: () => counts.resent++,
    ...options,
  });
  cleanups.push(() => http.close());
  return Object.defineProperties(http as NodeOutbound & { opened: number; resent: number }, {
    opened: { get: () => counts.opened },
    resent: { get: () => counts.resent },
  });
}

async function raw(onRequest: Parameters<typeof rawServer>[0]): Promise<RawServer> {
  const server = await rawServer(onRequest);
  cleanups.push(() => server.close());
  return server;
}

const post = (body = 'x', signal = new AbortController().signal) => ({ headers: { 'content-type': 'text/plain' }, body, signal });
const NO_CONTENT = 'HTTP/1.1 204 No Content\r\n\r\n';

async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error('expected a rejection');
}

describe('kept-alive connections', () => {
  it('requests one after another share one connection', async () => {
    const s = await raw((socket) => socket.write(NO_CONTENT));
    const http = outbound();
    for (let i = 0; i < 5; i++) expect((await http.post(s.url(), post(`body-${i}`))).status).toBe(204);
    expect(s.connections()).toBe(1);
    expect(s.requests[4]).toContain('\r\n\r\nbody-4');
  });

  it('requests at the same time go out on connections of their own, never two on one', async () => {
    const held: Array<() => void> = [];
    const s = await raw((socket) => held.push(() => socket.write(NO_CONTENT)));
    const http = outbound();
    const answers = Array.from({ length: 3 }, (_, i) => http.post(s.url(), post(`c${i}`)));
    await expect.poll(() => s.requests.length).toBe(3);
    expect(s.connections()).toBe(3);
    for (const answer of held) answer();
    expect((await Promise.all(answers)).map((a) => a.status)).toEqual([204, 204, 204]);
    // Kept, all three: the next three at once reuse them.
    const again = Array.from({ length: 3 }, () => http.post(s.url(), post()));
    await expect.poll(() => s.requests.length).toBe(6);
    for (const answer of held.slice(3)) answer();
    await Promise.all(again);
    expect(s.connections()).toBe(3);
  });

  it('an answer with connection: close is not followed by another request on its connection', async () => {
    const s = await raw((socket) => socket.write('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok'));
    const http = outbound();
    expect((await http.post(s.url(), post())).body).toBe('ok');
    expect((await http.post(s.url(), post())).body).toBe('ok');
    expect(s.connections()).toBe(2);
    expect(http.resent).toBe(0);
  });

  it('a connection is not used within a second of the idle timeout the receiver announced, and is used well before it', async () => {
    // timeout=1: already within the margin when the answer is done.
    const short = await raw((socket) => socket.write('HTTP/1.1 204 No Content\r\nKeep-Alive: timeout=1\r\n\r\n'));
    const http = outbound();
    await http.post(short.url(), post());
    await http.post(short.url(), post());
    expect(short.connections()).toBe(2);
    // timeout=3: two seconds to spare, so the next request goes on the same connection.
    const long = await raw((socket) => socket.write('HTTP/1.1 204 No Content\r\nKeep-Alive: timeout=3\r\n\r\n'));
    await http.post(long.url(), post());
    await http.post(long.url(), post());
    expect(long.connections()).toBe(1);
  });

  it('interim 1xx answers are skipped: the final status is the answer', async () => {
    const s = await raw((socket) => socket.write('HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n'));
    expect(await outbound().post(s.url(), post())).toEqual({ status: 202, statusText: 'Accepted', body: '' });
  });
});

describe('a connection that ends without an answer', () => {
  it('a connection that ends after an interim 1xx answer, before the final status, is no answer', async () => {
    const s = await raw((socket) => socket.end('HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n'));
    expect(await failure(outbound().post(s.url(), post()))).toContain(`cannot reach http://127.0.0.1:${s.port}:`);
  });

  it('a kept connection the receiver drops on the next request: sent once more, on another connection', async () => {
    const s = await raw((socket, index) => {
      if (index === 1) socket.destroy();
      else socket.write(NO_CONTENT);
    });
    const http = outbound();
    expect((await http.post(s.url(), post('first'))).status).toBe(204);
    expect((await http.post(s.url(), post('second'))).status).toBe(204);
    expect(s.requests.map((r) => r.slice(-6))).toEqual(['\nfirst', 'second', 'second']);
    expect([s.connections(), http.opened, http.resent]).toEqual([2, 2, 1]);
  });

  it('a new connection dropped without an answer rejects: no second attempt', async () => {
    const s = await raw((socket) => socket.destroy());
    const http = outbound();
    expect(await failure(http.post(s.url(), post()))).toMatch(new RegExp(`^cannot reach http://127.0.0.1:${s.port}: (UND_ERR_SOCKET|ECONNRESET)`));
    expect([s.requests.length, http.resent]).toEqual([1, 0]);
  });

  it('a kept connection that dies after part of an answer is not tried again', async () => {
    const s = await raw((socket, index) => {
      if (index === 0) socket.write(NO_CONTENT);
      else socket.end('HTTP/1.1 200 O');
    });
    const http = outbound();
    await http.post(s.url(), post());
    expect(await failure(http.post(s.url(), post()))).toContain(`cannot reach http://127.0.0.1:${s.port}:`);
    expect([s.requests.length, http.resent]).toEqual([2, 0]);
  });

  it('the resend is sent once only: a second drop fails the request', async () => {
    const s = await raw((socket, index) => {
      if (index === 0) socket.write(NO_CONTENT);
      else socket.destroy();
    });
    const http = outbound();
    await http.post(s.url(), post());
    expect(await failure(http.post(s.url(), post()))).toContain(`cannot reach http://127.0.0.1:${s.port}:`);
    expect([s.requests.length, http.resent]).toEqual([3, 1]);
  });
});

describe('onSent (ports/outbound.ts)', () => {
  /** A post whose onSent is counted and resolves `sent`. */
  function counted(body: string, signal = new AbortController().signal) {
    const seen = { calls: 0 };
    let resolve!: () => void;
    const sent = new Promise<void>((r) => (resolve = r));
    return Object.assign(seen, { sent, post: { ...post(body, signal), onSent: () => (seen.calls++, resolve()) } });
  }

  it('is told once the request is written, before any answer, on a new and on a kept connection', async () => {
    const held: Array<() => void> = [];
    const s = await raw((socket) => held.push(() => socket.write(NO_CONTENT)));
    const http = outbound();
    for (const body of ['first', 'second']) {
      const c = counted(body);
      let answered = false;
      const answer = http.post(s.url(), c.post).then((a) => ((answered = true), a));
      // No answer is written until onSent was told: it cannot wait for one.
      await c.sent;
      expect([c.calls, answered]).toEqual([1, false]);
      await vi.waitFor(() => expect(held).toHaveLength(1));
      held.shift()!();
      expect((await answer).status).toBe(204);
      expect(c.calls).toBe(1);
    }
    expect(s.connections()).toBe(1);
  });

  it('is told once for a request sent once more after a kept connection was dropped', async () => {
    const s = await raw((socket, index) => {
      if (index === 1) socket.destroy();
      else socket.write(NO_CONTENT);
    });
    const http = outbound();
    await http.post(s.url(), post('first'));
    const c = counted('second');
    expect((await http.post(s.url(), c.post)).status).toBe(204);
    expect([s.requests.length, http.resent, c.calls]).toEqual([3, 1, 1]);
  });

  it('is never told for a request that could not be written (connection refused)', async () => {
    const s = await raw(() => undefined);
    const url = s.url();
    await s.close();
    const c = counted('x');
    expect(await failure(outbound().post(url, c.post))).toMatch(/^cannot reach http:\/\/127.0.0.1:\d+: .*ECONNREFUSED/);
    expect(c.calls).toBe(0);
  });
});

describe('close()', () => {
  it('fails a request in flight, ends its connection and refuses later requests', async () => {
    let serverClosed = false;
    const s = await raw((socket) => socket.once('close', () => (serverClosed = true)));
    const http = outbound();
    const pending = http.post(s.url(), post());
    await expect.poll(() => s.requests.length).toBe(1);
    await http.close();
    expect(await failure(pending)).toBe('the webhook client is closed');
    await expect.poll(() => serverClosed).toBe(true);
    expect(await failure(http.post(s.url(), post()))).toBe('the webhook client is closed');
    expect(s.requests).toHaveLength(1);
  });
});

describe('limits of an answer', () => {
  // undici counts the header section's field bytes against the cap (16 KiB).
  const answerWithField = (bytes: number) => `HTTP/1.1 204 No Content\r\nx-big: ${'a'.repeat(bytes)}\r\n\r\n`;

  it('a header section under 16 KiB is an answer', async () => {
    const s = await raw((socket) => socket.write(answerWithField(15 * 1024)));
    expect((await outbound().post(s.url(), post())).status).toBe(204);
  });

  it('a header section over 16 KiB is not an answer', async () => {
    const s = await raw((socket) => socket.write(answerWithField(17 * 1024)));
    expect(await failure(outbound().post(s.url(), post()))).toMatch(new RegExp(`^http://127.0.0.1:${s.port} sent an invalid HTTP answer: `));
  });

  it('conflicting content-length fields are not an answer', async () => {
    const s = await raw((socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok'));
    expect(await failure(outbound().post(s.url(), post()))).toMatch(new RegExp(`^http://127.0.0.1:${s.port} sent an invalid HTTP answer: `));
  });
});

describe('the connect timeout', () => {
  it('a TLS handshake that never completes fails after the connect timeout', async () => {
    const silent = await silentServer();
    cleanups.push(() => silent.close());
    const since = Date.now();
    const message = await failure(outbound({ connectTimeoutMs: 150 }).post(`https://127.0.0.1:${silent.port}/hook`, post()));
    expect(message).toMatch(new RegExp(`^cannot reach https://127.0.0.1:${silent.port}: UND_ERR_CONNECT_TIMEOUT`));
    expect(Date.now() - since).toBeGreaterThanOrEqual(140);
    expect(silent.accepted()).toBe(1);
  });

  it('a handshake that completes within the connect timeout delivers', async () => {
    const server = await HookServer.start({ tls: true });
    cleanups.push(() => server.stop());
    expect((await outbound({ connectTimeoutMs: 2_000, trustedCa: TEST_CA }).post(server.url(), post())).status).toBe(204);
  });

  it('the signal ends a handshake that hangs before the connect timeout', async () => {
    const silent = await silentServer();
    cleanups.push(() => silent.close());
    const abort = new AbortController();
    const pending = outbound({ connectTimeoutMs: 60_000 }).post(`https://127.0.0.1:${silent.port}/hook`, post('x', abort.signal));
    await expect.poll(() => silent.accepted()).toBe(1);
    const since = Date.now();
    abort.abort(new Error('delivery timed out'));
    expect(await failure(pending)).toBe('delivery timed out');
    expect(Date.now() - since).toBeLessThan(1_000);
  });
});

describe('TLS sessions', () => {
  it('a new connection to the same host resumes the TLS session of the previous one', async () => {
    const reused: boolean[] = [];
    const server = createHttpsServer({ key: TEST_KEY, cert: TEST_CA }, (req, res) => {
      req.resume();
      // Each answer closes its connection, so every delivery needs a new one.
      req.on('end', () => res.writeHead(204, { connection: 'close' }).end());
    });
    server.on('secureConnection', (socket: TLSSocket) => reused.push(socket.isSessionReused()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    const port = (server.address() as { port: number }).port;
    const resolve: HostResolver = () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]);
    const http = outbound({ allowPrivate: false, resolve, refuses: () => false, trustedCa: TEST_CA });
    for (let i = 0; i < 3; i++) expect((await http.post(`https://hooks.rivulet.test:${port}/hook`, post())).status).toBe(204);
    expect(reused).toEqual([false, true, true]);
  });
});

describe('pinned addresses', () => {
  it('DNS rebinding to a private address after a delivery: refused, and the kept connection is not used for it', async () => {
    // 127.0.0.1 plays a public address (only 127.0.0.2 is refused). The second answer rebinds the
    // name to a refused address; the third is public again and finds the first connection kept.
    const server = await HookServer.start();
    cleanups.push(() => server.stop());
    const answers = ['127.0.0.1', '127.0.0.2', '127.0.0.1'];
    let call = 0;
    const resolve: HostResolver = () => Promise.resolve([{ address: answers[call++]!, family: 4 }]);
    const http = outbound({ allowPrivate: false, resolve, refuses: (address) => address === '127.0.0.2' });
    const url = server.url('/hook', 'hooks.rivulet.test');
    expect((await http.post(url, post())).status).toBe(204);
    expect(await failure(http.post(url, post()))).toContain('refused to send to hooks.rivulet.test: it resolves to 127.0.0.2');
    expect(server.requests).toHaveLength(1);
    expect((await http.post(url, post())).status).toBe(204);
    expect([server.requests.length, server.connections, http.opened]).toEqual([2, 1, 1]);
  });

  it('a new connection goes to the addresses of the latest vetting, never to a fresh DNS answer', async () => {
    // The system resolver knows nothing of *.rivulet.test: a connection that arrives used the vetted answer.
    const server = await HookServer.start();
    cleanups.push(() => server.stop());
    server.script = () => ({ status: 204, headers: { connection: 'close' } });
    const resolve: HostResolver = () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]);
    const http = outbound({ allowPrivate: false, resolve, refuses: () => false });
    for (let i = 0; i < 2; i++) expect((await http.post(server.url('/hook', 'pinned.rivulet.test'), post())).status).toBe(204);
    expect(server.connections).toBe(2);
  });
});
