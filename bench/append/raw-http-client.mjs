/**
 * A lean HTTP/1.1 keep-alive client for the load generator: one socket, one request at a time,
 * the request written in one piece, the answer read by Content-Length or chunked encoding.
 *
 * Why: node:http's client spends about 50 µs of CPU per request here (bench/README), so with 50
 * clients the generator itself used ~90 % of a core and both servers under test shared the
 * machine's second core with it; their difference was squeezed towards 1.0x. This client costs a
 * fraction of that, and it is the same for every server measured. It understands only what the
 * servers under test answer (a status line, headers, a body framed by Content-Length, chunks or the
 * connection's end); anything else is counted as a failed request, never guessed at.
 *
 * Why not the server's webhook client (undici, packages/server/src/hosts/node/outbound.ts): that
 * one answers for a webhook, where the status is what counts, so a body cut short after the status
 * is an answer. A load generator must count complete answers only, and tell such cases apart as
 * failures (raw-http-client.test.mjs).
 */
import net from 'node:net';

const CRLF2 = Buffer.from('\r\n\r\n');
const MAX_HEAD = 64 * 1024;

export class RawConnection {
  /** @param {string} host @param {number} port */
  constructor(host, port) {
    this.host = host;
    this.port = port;
    this.hostHeader = `${host}:${port}`;
    /** @type {net.Socket | null} */
    this.socket = null;
    /** @type {((answer: {status: number, text: string}) => void) | null} */
    this.resolve = null;
    /** Bytes of the answer read so far. */
    this.buf = null;
    /** Parsed head of the answer being read: {status, length, chunked, close, bodyAt} or null. */
    this.head = null;
  }

  /**
   * Sends one request and resolves with its answer's status and, unless 200, its body as text;
   * status 0 for a transport failure or an answer this client cannot read (text says why).
   * @param {string} method @param {string} path @param {Buffer} [body]
   */
  request(method, path, body) {
    if (this.resolve) throw new Error('RawConnection: one request at a time');
    if (!this.socket) this.connect();
    const head = body
      ? `${method} ${path} HTTP/1.1\r\nhost: ${this.hostHeader}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`
      : `${method} ${path} HTTP/1.1\r\nhost: ${this.hostHeader}\r\n\r\n`;
    const bytes = body ? Buffer.concat([Buffer.from(head, 'latin1'), body]) : Buffer.from(head, 'latin1');
    return new Promise((resolve) => {
      this.resolve = resolve;
      this.buf = null;
      this.head = null;
      this.socket.write(bytes);
    });
  }

  close() {
    this.socket?.destroy();
    this.socket = null;
  }

  connect() {
    const socket = net.connect({ host: this.host, port: this.port, noDelay: true });
    socket.on('data', (chunk) => {
      if (this.socket === socket) this.onData(chunk);
    });
    socket.on('error', (error) => {
      if (this.socket === socket) this.fail(String(error));
    });
    socket.on('close', () => {
      if (this.socket !== socket) return;
      // An answer framed by the connection's end is complete now.
      if (this.head && this.head.length < 0 && !this.head.chunked) this.finish(this.buf.subarray(this.head.bodyAt));
      else this.fail('connection closed before the answer was complete');
      this.socket = null;
    });
    this.socket = socket;
  }

  onData(chunk) {
    if (!this.resolve) return this.fail('bytes arrived with no request waiting');
    this.buf = this.buf ? Buffer.concat([this.buf, chunk]) : chunk;
    if (!this.head) {
      const end = this.buf.indexOf(CRLF2);
      if (end < 0) {
        if (this.buf.length > MAX_HEAD) this.fail('answer head too large');
        return;
      }
      this.head = parseHead(this.buf.latin1Slice(0, end));
      if (!this.head) return this.fail(`unreadable answer head: ${JSON.stringify(this.buf.latin1Slice(0, Math.min(end, 200)))}`);
      this.head.bodyAt = end + 4;
    }
    const { length, chunked, bodyAt } = this.head;
    if (length >= 0) {
      if (this.buf.length >= bodyAt + length) this.finish(this.buf.subarray(bodyAt, bodyAt + length), this.buf.length - bodyAt - length);
      return;
    }
    if (chunked) {
      const body = dechunk(this.buf, bodyAt);
      if (body === 'bad') this.fail('bad chunked encoding');
      else if (body) this.finish(body.data, this.buf.length - body.end);
    }
    // Otherwise the body ends with the connection (see the 'close' handler).
  }

  finish(body, extra = 0) {
    const resolve = this.resolve;
    const { status, close } = this.head;
    this.resolve = null;
    this.head = null;
    this.buf = null;
    if (extra !== 0) {
      this.close();
      return resolve({ status: 0, text: `${extra} bytes after the answer` });
    }
    if (close) this.close();
    resolve({ status, text: status === 200 ? '' : body.toString('utf8') });
  }

  fail(text) {
    const resolve = this.resolve;
    this.resolve = null;
    this.head = null;
    this.buf = null;
    this.close();
    resolve?.({ status: 0, text });
  }
}

/** Status and framing of an answer head; null when it is not an HTTP/1.x answer. */
export function parseHead(text) {
  const match = /^HTTP\/1\.[01] (\d{3})[^\r]*/.exec(text);
  if (!match) return null;
  let length = -1;
  let chunked = false;
  let close = false;
  for (const line of text.slice(match[0].length + 2).split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim().toLowerCase();
    if (name === 'content-length') {
      if (!/^\d+$/.test(value)) return null;
      length = Number(value);
    } else if (name === 'transfer-encoding') chunked = value.split(',').some((v) => v.trim() === 'chunked');
    else if (name === 'connection') close = value.split(',').some((v) => v.trim() === 'close');
  }
  const status = Number(match[1]);
  // Answers that never have a body.
  if (status === 204 || status === 304 || (status >= 100 && status < 200)) length = 0;
  if (chunked) length = -1;
  return { status, length, chunked, close, bodyAt: 0 };
}

/**
 * The body of a complete chunked answer starting at `from`: {data, end} once the last chunk and
 * the trailer's end are in, null while more bytes are needed, 'bad' when it is not chunked encoding.
 */
export function dechunk(buf, from) {
  const parts = [];
  let at = from;
  for (;;) {
    const eol = buf.indexOf('\r\n', at, 'latin1');
    if (eol < 0) return null;
    const sizeText = buf.latin1Slice(at, eol).split(';')[0].trim();
    if (!/^[0-9a-fA-F]+$/.test(sizeText)) return 'bad';
    const size = parseInt(sizeText, 16);
    if (size === 0) {
      // Optional trailer lines, then an empty line.
      let t = eol + 2;
      for (;;) {
        const next = buf.indexOf('\r\n', t, 'latin1');
        if (next < 0) return null;
        if (next === t) return { data: Buffer.concat(parts), end: next + 2 };
        t = next + 2;
      }
    }
    if (buf.length < eol + 2 + size + 2) return null;
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    if (buf[eol + 2 + size] !== 13 || buf[eol + 3 + size] !== 10) return 'bad';
    at = eol + 4 + size;
  }
}
