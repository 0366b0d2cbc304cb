/**
 * The load generator's raw HTTP/1.1 client reads exactly the answers the servers under test give,
 * and turns everything else into a failed request (status 0) rather than a miscount.
 */
import http from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RawConnection, dechunk, parseHead } from './raw-http-client.mjs';

const closers = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A server on a free loopback port; answers with `handler`. */
async function listen(server) {
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return server.address().port;
}

function connection(port) {
  const conn = new RawConnection('127.0.0.1', port);
  closers.push(() => conn.close());
  return conn;
}

describe('raw HTTP client', () => {
  it('sends method, path, headers and body in one request; reads a Content-Length answer; reuses the socket', async () => {
    const seen = [];
    const port = await listen(
      http.createServer((req, res) => {
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', () => {
          seen.push({ method: req.method, url: req.url, type: req.headers['content-type'], body, socket: req.socket.remotePort });
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': 2 }).end('{}');
        });
      }),
    );
    const conn = connection(port);
    expect(await conn.request('POST', '/v1/streams/a', Buffer.from('{"type":"x"}'))).toEqual({ status: 200, text: '' });
    expect(await conn.request('POST', '/v1/streams/b', Buffer.from('[1]'))).toEqual({ status: 200, text: '' });
    expect(seen.map((s) => ({ method: s.method, url: s.url, type: s.type, body: s.body }))).toEqual([
      { method: 'POST', url: '/v1/streams/a', type: 'application/json', body: '{"type":"x"}' },
      { method: 'POST', url: '/v1/streams/b', type: 'application/json', body: '[1]' },
    ]);
    expect(seen[0].socket).toBe(seen[1].socket);
  });

  it('returns the body of an answer other than 200, chunked or not', async () => {
    const port = await listen(
      http.createServer((req, res) => {
        if (req.url === '/chunked') {
          res.writeHead(409, { 'content-type': 'application/json' });
          res.write('{"error":');
          setTimeout(() => res.end('"CONFLICT"}'), 5);
        } else res.writeHead(404, { 'content-length': 9 }).end('not found');
      }),
    );
    const conn = connection(port);
    expect(await conn.request('POST', '/chunked', Buffer.from('{}'))).toEqual({ status: 409, text: '{"error":"CONFLICT"}' });
    expect(await conn.request('GET', '/other')).toEqual({ status: 404, text: 'not found' });
  });

  it('reconnects after an answer with Connection: close, and after the server drops an idle socket', async () => {
    const sockets = new Set();
    const server = http.createServer((req, res) => {
      sockets.add(req.socket.remotePort);
      res.writeHead(200, { 'content-length': 0, connection: req.url === '/close' ? 'close' : 'keep-alive' }).end();
    });
    const port = await listen(server);
    const conn = connection(port);
    expect((await conn.request('POST', '/close', Buffer.from('{}'))).status).toBe(200);
    expect((await conn.request('POST', '/a', Buffer.from('{}'))).status).toBe(200);
    server.closeIdleConnections();
    // Until the client has seen the close (a request written before would meet a reset).
    for (let i = 0; i < 500 && conn.socket !== null; i++) await new Promise((r) => setTimeout(r, 10));
    expect(conn.socket).toBeNull();
    expect((await conn.request('POST', '/b', Buffer.from('{}'))).status).toBe(200);
    expect(sockets.size).toBe(3);
  });

  it('reads an answer framed by the end of the connection', async () => {
    const port = await listen(
      net.createServer((socket) => {
        socket.once('data', () => socket.end('HTTP/1.1 500 Oops\r\ncontent-type: text/plain\r\n\r\nsomething broke'));
      }),
    );
    expect(await connection(port).request('POST', '/x', Buffer.from('{}'))).toEqual({ status: 500, text: 'something broke' });
  });

  it('fails (status 0) on a cut answer, a refused connection, garbage and extra bytes; the next request works again', async () => {
    let mode = 'cut';
    const port = await listen(
      net.createServer((socket) => {
        socket.on('data', () => {
          if (mode === 'cut') socket.end('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{}');
          else if (mode === 'garbage') socket.write('SMTP ready\r\n\r\n');
          else if (mode === 'extra') socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}HTTP/1.1');
          else socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}');
        });
      }),
    );
    const conn = connection(port);
    expect(await conn.request('POST', '/', Buffer.from('{}'))).toEqual({ status: 0, text: 'connection closed before the answer was complete' });
    mode = 'garbage';
    expect(await conn.request('POST', '/', Buffer.from('{}'))).toEqual({ status: 0, text: 'unreadable answer head: "SMTP ready"' });
    mode = 'extra';
    expect(await conn.request('POST', '/', Buffer.from('{}'))).toEqual({ status: 0, text: '8 bytes after the answer' });
    mode = 'ok';
    expect(await conn.request('POST', '/', Buffer.from('{}'))).toEqual({ status: 200, text: '' });

    const closed = await listen(net.createServer((s) => s.destroy()));
    const refused = await connection(closed).request('POST', '/', Buffer.from('{}'));
    expect(refused.status).toBe(0);
  });

  it('refuses a second request while one is waiting', async () => {
    const port = await listen(http.createServer(() => undefined));
    const conn = connection(port);
    void conn.request('POST', '/', Buffer.from('{}'));
    expect(() => conn.request('POST', '/', Buffer.from('{}'))).toThrow('one request at a time');
  });
});

describe('parseHead', () => {
  it('reads status and framing; header names and values in any case', () => {
    expect(parseHead('HTTP/1.1 201 Created\r\nContent-Length: 12\r\nConnection: Keep-Alive')).toEqual({ status: 201, length: 12, chunked: false, close: false, bodyAt: 0 });
    expect(parseHead('HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, Chunked\r\nconnection: close')).toMatchObject({ length: -1, chunked: true, close: true });
    expect(parseHead('HTTP/1.0 204 No Content')).toMatchObject({ status: 204, length: 0 });
    expect(parseHead('HTTP/1.1 200 OK')).toMatchObject({ length: -1, chunked: false });
  });

  it('refuses what is not an HTTP/1.x answer or has an unreadable length', () => {
    expect(parseHead('HTTP/2 200')).toBeNull();
    expect(parseHead('hello')).toBeNull();
    expect(parseHead('HTTP/1.1 200 OK\r\ncontent-length: 1x')).toBeNull();
  });
});

describe('dechunk', () => {
  const b = (s) => Buffer.from(s, 'latin1');
  it('joins chunks, skips extensions and trailers, tells where the answer ends', () => {
    const buf = b('HEAD3\r\nabc\r\n2;x=1\r\nde\r\n0\r\nx-trailer: 1\r\n\r\nNEXT');
    const r = dechunk(buf, 4);
    expect(r.data.toString()).toBe('abcde');
    expect(r.end).toBe(buf.indexOf('NEXT'));
  });
  it('waits for more bytes at every cut point', () => {
    const whole = '3\r\nabc\r\n0\r\n\r\n';
    for (let cut = 0; cut < whole.length; cut++) expect(dechunk(b(whole.slice(0, cut)), 0)).toBeNull();
    expect(dechunk(b(whole), 0).data.toString()).toBe('abc');
  });
  it('answers bad for a size that is not hex or a chunk without its CRLF', () => {
    expect(dechunk(b('zz\r\n'), 0)).toBe('bad');
    expect(dechunk(b('3\r\nabcXY0\r\n\r\n'), 0)).toBe('bad');
  });
});
