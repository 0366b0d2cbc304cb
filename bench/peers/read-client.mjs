/**
 * The catch-up reader of bench/peers (the reads group): one keep-alive socket, one GET at a time,
 * each page's bytes kept as they arrive and joined once, then its first and last events' offsets
 * found in them. The next page starts after the last offset the page holds, so the reader follows
 * what it read rather than assuming offsets (bench/README "catch-up reads (reads group)").
 *
 * Why a reader of its own, not append/raw-http-client.mjs: that client joins the answer bytes
 * again on every chunk (fine for the appends' small answers, quadratic for an 80–120 KB page) and
 * throws the 200 body away. Per page it does what a sequential reader must and what
 * redis-benchmark does with an XRANGE reply: every byte is received, framed (Content-Length) and
 * copied into one buffer, and the next position is taken from the reply, checked against the range
 * asked for. It neither JSON.parses nor finds each event (hiredis, inside redis-benchmark, walks
 * each reply element by its length prefix, which JSON does not have): finding every event's
 * `"offset":` from the front cost 0.3 µs per event on its own (bench/README), about what the whole
 * reader costs otherwise.
 */
import net from 'node:net';

const CRLF2 = Buffer.from('\r\n\r\n');
const OFFSET_KEY = Buffer.from('"offset":');

/** The number after the `"offset":` key at `at` in `body`; throws when there is none. */
function offsetAt(body, at) {
  if (at < 0) throw new Error('read page: no "offset": key');
  let n = 0;
  let i = at + OFFSET_KEY.length;
  for (let c = body[i]; c >= 48 && c <= 57; c = body[++i]) n = n * 10 + (c - 48);
  if (i === at + OFFSET_KEY.length) throw new Error(`read page: "offset": not followed by a number at byte ${at}`);
  return n;
}

/**
 * A read page's first and last offsets: those of its first and last events' `"offset":` keys, found
 * from either end of the bytes. The stored event JSON has one such key at its top level (protocol
 * §3); the bench's payloads have none, and a payload that did would show as offsets the caller
 * refuses, never as a silent misread. Empty page: null.
 */
export function pageEnds(body) {
  const first = body.indexOf(OFFSET_KEY);
  if (first < 0) return null;
  return { first: offsetAt(body, first), last: offsetAt(body, body.lastIndexOf(OFFSET_KEY)) };
}

/** Status, Content-Length and whether the server closes, from an answer head; throws on anything else. */
export function readHead(text) {
  const match = /^HTTP\/1\.1 (\d{3}) /.exec(text);
  if (!match) throw new Error(`read page: not an HTTP/1.1 answer: ${JSON.stringify(text.slice(0, 200))}`);
  let length = -1;
  let close = false;
  for (const line of text.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim().toLowerCase();
    if (name === 'content-length') length = Number(value);
    else if (name === 'transfer-encoding') throw new Error(`read page: transfer-encoding ${value}; this reader takes Content-Length only`);
    else if (name === 'connection') close = value === 'close';
  }
  if (!Number.isInteger(length) || length < 0) throw new Error('read page: no Content-Length');
  return { status: Number(match[1]), length, close };
}

/** One keep-alive connection answering GETs with the whole body as one Buffer. */
export class PageConnection {
  constructor(host, port) {
    this.hostHeader = `${host}:${port}`;
    this.socket = net.connect({ host, port, noDelay: true });
    this.pending = null;
    this.socket.on('data', (chunk) => this.onData(chunk));
    this.socket.on('error', (error) => this.fail(error));
    this.socket.on('close', () => this.fail(new Error('read page: connection closed')));
  }

  /** @returns {Promise<{status: number, body: Buffer}>} */
  get(path) {
    if (this.pending) throw new Error('PageConnection: one request at a time');
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject, chunks: [], bytes: 0, head: null, bodyAt: 0 };
      this.socket.write(`GET ${path} HTTP/1.1\r\nhost: ${this.hostHeader}\r\n\r\n`, 'latin1');
    });
  }

  onData(chunk) {
    const p = this.pending;
    if (!p) return this.fail(new Error('read page: bytes with no request waiting'));
    p.chunks.push(chunk);
    p.bytes += chunk.length;
    if (!p.head) {
      const buf = p.chunks.length === 1 ? chunk : Buffer.concat(p.chunks);
      const end = buf.indexOf(CRLF2);
      if (end < 0) return;
      p.head = readHead(buf.latin1Slice(0, end));
      p.bodyAt = end + 4;
      p.chunks = [buf];
    }
    const total = p.bodyAt + p.head.length;
    if (p.bytes < total) return;
    if (p.bytes > total) return this.fail(new Error(`read page: ${p.bytes - total} bytes after the answer`));
    const all = p.chunks.length === 1 ? p.chunks[0] : Buffer.concat(p.chunks, p.bytes);
    this.pending = null;
    if (p.head.close) this.close();
    p.resolve({ status: p.head.status, body: all.subarray(p.bodyAt) });
  }

  fail(error) {
    const p = this.pending;
    this.pending = null;
    p?.reject(error);
  }

  close() {
    this.socket.removeAllListeners('close');
    this.socket.destroy();
  }
}

/**
 * GETs the page after `after` and checks it holds exactly `after + 1 … after + expected` (dense
 * offsets); answers its body, every byte of which was received and framed by Content-Length.
 */
async function checkedPage(conn, path, after, page, expected) {
  const { status, body } = await conn.get(`${path}?afterOffset=${after}&limit=${page}`);
  if (status !== 200) throw new Error(`catch-up read answered ${status}: ${body.toString('utf8', 0, 300)}`);
  const ends = pageEnds(body);
  if (ends?.first !== after + 1 || ends.last !== after + expected) {
    throw new Error(`catch-up read after ${after}: events ${ends?.first}…${ends?.last}, expected ${after + 1}…${after + expected}`);
  }
  return body;
}

/**
 * The `afterOffset` of each of `pages` pages read from random positions, the shape of
 * redis-benchmark's `XRANGE s __rand_int__ + COUNT page` with `-r`: each uniform over the positions
 * whose page is full, `firstOffset - 1 … lastOffset - page`, so every page holds `page` events.
 * `random` answers [0, 1) (seeded in run.mjs, so a run's offsets can be repeated).
 */
export function randomAfters({ firstOffset, lastOffset, page, pages, random }) {
  const span = lastOffset - firstOffset + 2 - page;
  if (span < 1) throw new Error(`random pages: a stream of ${firstOffset}…${lastOffset} holds no full page of ${page}`);
  return Array.from({ length: pages }, () => firstOffset - 1 + Math.floor(random() * span));
}

/** A seeded generator of [0, 1) (mulberry32): the same seed answers the same sequence. */
export function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * One reader fetching one full page of `page` events after each offset of `afters` in turn, on one
 * keep-alive socket, one GET at a time: what redis-benchmark `-c 1` does with its XRANGEs. Each
 * page is received whole, framed and checked as catchUpRead's are. Answers the same figures.
 */
export async function randomPagesRead({ url, path, afters, page }) {
  const target = new URL(url);
  const conn = new PageConnection(target.hostname, Number(target.port));
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let bytes = 0;
  try {
    for (const after of afters) bytes += (await checkedPage(conn, path, after, page, page)).length;
  } finally {
    conn.close();
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { pages: afters.length, events: afters.length * page, bytes, seconds, readerCpuMs: (cpu.user + cpu.system) / 1000 };
}

/**
 * One reader fetching `path` (GET …?afterOffset=N&limit=page) from `firstOffset` to `lastOffset`,
 * one page after the other, each starting after the last offset of the one before. The stream's
 * offsets are dense (no ephemeral events), so each page must run from the offset after the one
 * before to `page` further (less on the last page); anything else fails the read. Answers pages, events, bytes, seconds and the reader's own CPU in ms.
 */
export async function catchUpRead({ url, path, firstOffset, lastOffset, page }) {
  const target = new URL(url);
  const conn = new PageConnection(target.hostname, Number(target.port));
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let pages = 0;
  let events = 0;
  let bytes = 0;
  let after = firstOffset - 1;
  try {
    while (after < lastOffset) {
      const expected = Math.min(page, lastOffset - after);
      const body = await checkedPage(conn, path, after, page, expected);
      after = pageEnds(body).last;
      pages++;
      events += expected;
      bytes += body.length;
    }
  } finally {
    conn.close();
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { pages, events, bytes, seconds, readerCpuMs: (cpu.user + cpu.system) / 1000 };
}
