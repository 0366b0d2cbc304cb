/**
 * An incremental parser of one HTTP/1.x response (RFC 9112), for the webhook client
 * (net/http1-client.ts). Pure: bytes in, an answer out; no sockets, so every framing rule is
 * tested on its own (http1-response.test.ts).
 *
 * What it reads: the status line and header fields (at most MAX_HEAD_BYTES), interim 1xx answers
 * (skipped, except 101 which is final), a body delimited by Content-Length, by chunked transfer
 * coding (with extensions and trailers), or by the end of the connection. 204 and 304 have no body.
 * It keeps at most `maxBodyBytes` of the body; past that it answers `capped` and the caller drops
 * the connection, so an endless body is never buffered. `reusable` tells whether the connection
 * may carry another request afterwards (HTTP/1.1 without `Connection: close`, HTTP/1.0 with
 * `keep-alive`, a body with a known end, and nothing sent beyond it).
 */

/** Longest status line plus header section accepted (node:http's default limit). */
export const MAX_HEAD_BYTES = 16 * 1024;
/** Longest chunk-size line, and the most trailer bytes accepted after the last chunk. */
const MAX_LINE_BYTES = 4 * 1024;
const MAX_TRAILER_BYTES = 16 * 1024;
/** Interim (1xx) answers accepted before the final one: a server that sends them forever is broken. */
export const MAX_INTERIM_ANSWERS = 16;

export class ResponseParseError extends Error {}

type Phase = 'head' | 'length' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailers' | 'until-close' | 'done';

export type FeedResult = 'more' | 'done' | 'capped';

const CRLF = Buffer.from('\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: (.*))?$/;
const HEX = /^[0-9a-fA-F]{1,15}$/;
const DIGITS = /^\d{1,15}$/;
const KEEP_ALIVE_TIMEOUT = /(?:^|[,;\s])timeout\s*=\s*(\d{1,9})(?:$|[,;\s])/;

export class ResponseParser {
  status = 0;
  statusText = '';
  /** Whether the connection may carry another request once the answer is done. */
  reusable = false;
  /** Whether any byte of a response arrived (a kept-alive connection closed before that is stale). */
  started = false;
  /** The idle time the server announced it keeps the connection (`Keep-Alive: timeout=N`), in ms. */
  keepAliveMs: number | undefined;
  private phase: Phase = 'head';
  private pending: Buffer | undefined;
  /** Bytes of the body still owed: of the whole body (length) or of the current chunk. */
  private remaining = 0;
  private trailerBytes = 0;
  private interim = 0;
  private readonly kept: Buffer[] = [];
  private keptBytes = 0;
  private bodyBytes = 0;

  constructor(private readonly maxBodyBytes: number) {}

  /** The body read so far (at most maxBodyBytes), as text. */
  body(): string {
    return this.kept.length === 1 ? this.kept[0]!.toString('utf8') : Buffer.concat(this.kept).toString('utf8');
  }

  /** Takes the next bytes of the connection. Throws ResponseParseError for a malformed answer. */
  feed(chunk: Buffer): FeedResult {
    if (chunk.length > 0) this.started = true;
    let data = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = undefined;
    while (data.length > 0) {
      switch (this.phase) {
        case 'head': {
          const end = data.indexOf(HEAD_END);
          if (end < 0) {
            if (data.length > MAX_HEAD_BYTES) throw new ResponseParseError(`the response header is larger than ${MAX_HEAD_BYTES} bytes`);
            this.pending = data;
            return 'more';
          }
          if (end + 4 > MAX_HEAD_BYTES) throw new ResponseParseError(`the response header is larger than ${MAX_HEAD_BYTES} bytes`);
          this.head(data.toString('latin1', 0, end));
          data = data.subarray(end + 4);
          break;
        }
        case 'length':
        case 'chunk-data': {
          const take = Math.min(this.remaining, data.length);
          if (this.keep(data.subarray(0, take))) return 'capped';
          this.remaining -= take;
          data = data.subarray(take);
          if (this.remaining === 0) this.phase = this.phase === 'length' ? 'done' : 'chunk-end';
          break;
        }
        case 'chunk-size': {
          const line = this.line(data, MAX_LINE_BYTES, 'chunk size line');
          if (line === undefined) return 'more';
          data = data.subarray(line.length + 2);
          const size = line.split(';', 1)[0]!.trim();
          if (!HEX.test(size)) throw new ResponseParseError(`invalid chunk size "${line.slice(0, 40)}"`);
          this.remaining = Number.parseInt(size, 16);
          this.phase = this.remaining === 0 ? 'trailers' : 'chunk-data';
          break;
        }
        case 'chunk-end': {
          if (data.length < 2) {
            this.pending = data;
            return 'more';
          }
          if (data[0] !== 13 || data[1] !== 10) throw new ResponseParseError('a chunk does not end with CRLF');
          data = data.subarray(2);
          this.phase = 'chunk-size';
          break;
        }
        case 'trailers': {
          const line = this.line(data, MAX_TRAILER_BYTES - this.trailerBytes, 'trailer section');
          if (line === undefined) return 'more';
          data = data.subarray(line.length + 2);
          this.trailerBytes += line.length + 2;
          if (line === '') this.phase = 'done';
          break;
        }
        case 'until-close':
          if (this.keep(data)) return 'capped';
          return 'more';
        case 'done':
          // Bytes beyond the answer (we never pipeline): the connection is not used again.
          this.reusable = false;
          return 'done';
      }
    }
    return this.phase === 'done' ? 'done' : 'more';
  }

  /**
   * The connection ended. Answers whether an answer is complete: a close-delimited body ends
   * here; a body cut short after the status counts as answered (the status is what matters), so
   * only a connection that ends before a whole header section is not an answer.
   */
  end(): boolean {
    this.reusable = false;
    if (this.phase === 'head') return false;
    this.phase = 'done';
    return true;
  }

  /** Keeps body bytes up to the cap; true once the body went past it. */
  private keep(bytes: Buffer): boolean {
    this.bodyBytes += bytes.length;
    const room = this.maxBodyBytes - this.keptBytes;
    if (room > 0 && bytes.length > 0) {
      const part = bytes.length > room ? bytes.subarray(0, room) : bytes;
      // Copied: the socket's buffer is not ours to hold.
      this.kept.push(Buffer.from(part));
      this.keptBytes += part.length;
    }
    if (this.bodyBytes > this.maxBodyBytes) {
      this.reusable = false;
      this.phase = 'done';
      return true;
    }
    return false;
  }

  /** The next CRLF-terminated line of `data` (latin1), or undefined with `data` kept for more. */
  private line(data: Buffer, max: number, what: string): string | undefined {
    const end = data.indexOf(CRLF);
    if (end < 0) {
      if (data.length > max) throw new ResponseParseError(`the ${what} is longer than ${max} bytes`);
      this.pending = data;
      return undefined;
    }
    if (end > max) throw new ResponseParseError(`the ${what} is longer than ${max} bytes`);
    return data.toString('latin1', 0, end);
  }

  private head(text: string): void {
    const lines = text.split('\r\n');
    const match = STATUS_LINE.exec(lines[0]!);
    if (!match) throw new ResponseParseError(`invalid status line "${lines[0]!.slice(0, 60)}"`);
    const minor = match[1]!;
    const status = Number(match[2]);
    let length: number | undefined;
    let chunked = false;
    let encoded = false;
    let close = false;
    let keepAlive = false;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon <= 0 || line.charCodeAt(0) === 32 || line.charCodeAt(0) === 9) {
        throw new ResponseParseError(`invalid header line "${line.slice(0, 60)}"`);
      }
      const name = line.slice(0, colon).toLowerCase();
      if (name !== 'content-length' && name !== 'transfer-encoding' && name !== 'connection' && name !== 'keep-alive') continue;
      const value = line.slice(colon + 1).trim().toLowerCase();
      if (name === 'keep-alive') {
        const timeout = KEEP_ALIVE_TIMEOUT.exec(value);
        if (timeout) this.keepAliveMs = Number(timeout[1]) * 1000;
        continue;
      }
      if (name === 'content-length') {
        // A repeated field is allowed only with one value (RFC 9110 §8.6), also as a list.
        for (const item of value.split(',')) {
          const v = item.trim();
          if (!DIGITS.test(v)) throw new ResponseParseError(`invalid Content-Length "${value.slice(0, 40)}"`);
          if (length !== undefined && length !== Number(v)) throw new ResponseParseError('conflicting Content-Length values');
          length = Number(v);
        }
      } else if (name === 'transfer-encoding') {
        encoded = true;
        const codings = value.split(',').map((c) => c.trim());
        chunked = codings[codings.length - 1] === 'chunked';
      } else {
        for (const token of value.split(',')) {
          const t = token.trim();
          if (t === 'close') close = true;
          else if (t === 'keep-alive') keepAlive = true;
        }
      }
    }
    if (status >= 100 && status <= 199 && status !== 101) {
      // An interim answer (100 Continue, 103 Early Hints): the final one follows.
      if (++this.interim > MAX_INTERIM_ANSWERS) throw new ResponseParseError(`more than ${MAX_INTERIM_ANSWERS} interim (1xx) answers`);
      return;
    }
    this.status = status;
    this.statusText = match[3] ?? '';
    this.reusable = !close && (minor === '1' || keepAlive);
    if (status === 101) {
      // Switching protocols was never asked for: the answer is the status; the connection is done.
      this.reusable = false;
      this.phase = 'done';
    } else if (status === 204 || status === 304) {
      this.phase = 'done';
    } else if (encoded) {
      // Transfer-Encoding overrides Content-Length; with both, the connection is not trusted again.
      if (length !== undefined) this.reusable = false;
      if (chunked) this.phase = 'chunk-size';
      else {
        this.phase = 'until-close';
        this.reusable = false;
      }
    } else if (length !== undefined) {
      this.remaining = length;
      this.phase = length === 0 ? 'done' : 'length';
    } else {
      this.phase = 'until-close';
      this.reusable = false;
    }
  }
}
