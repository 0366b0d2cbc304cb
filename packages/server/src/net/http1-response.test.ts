/**
 * The HTTP/1.x response parser of the webhook client, byte by byte: every framing rule, every
 * limit on both sides, and every malformed answer it refuses.
 */
import { describe, expect, it } from 'vitest';
import { MAX_HEAD_BYTES, MAX_INTERIM_ANSWERS, ResponseParseError, ResponseParser, type FeedResult } from './http1-response.js';

/** Feeds `text` in pieces of `step` bytes; answers the last result and the parser. */
function parse(text: string | Buffer, step = Number.POSITIVE_INFINITY, maxBody = 1024): { result: FeedResult; parser: ResponseParser } {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'latin1') : text;
  const parser = new ResponseParser(maxBody);
  let result: FeedResult = 'more';
  for (let at = 0; at < bytes.length && result === 'more'; at += Math.min(step, bytes.length)) {
    result = parser.feed(bytes.subarray(at, Math.min(bytes.length, at + step)));
  }
  return { result, parser };
}

function refusal(text: string): string {
  try {
    parse(text);
  } catch (error) {
    expect(error).toBeInstanceOf(ResponseParseError);
    return (error as Error).message;
  }
  throw new Error('expected a ResponseParseError');
}

describe('framing', () => {
  it.each([1, 2, 7, Number.POSITIVE_INFINITY])('a Content-Length body, fed %s byte(s) at a time', (step) => {
    const { result, parser } = parse('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello', step);
    expect(result).toBe('done');
    expect([parser.status, parser.statusText, parser.body(), parser.reusable]).toEqual([200, 'OK', 'hello', true]);
  });

  it.each([1, 3, Number.POSITIVE_INFINITY])('a chunked body with extensions and trailers, fed %s byte(s) at a time', (step) => {
    const text = 'HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n4;name=v\r\nbad \r\nA\r\nthings hap\r\n0\r\nX-Trailer: 1\r\n\r\n';
    const { result, parser } = parse(text, step);
    expect(result).toBe('done');
    expect([parser.status, parser.body(), parser.reusable]).toEqual([500, 'bad things hap', true]);
  });

  it('204 and 304 have no body whatever their fields say', () => {
    for (const status of [204, 304]) {
      const { result, parser } = parse(`HTTP/1.1 ${status} X\r\nContent-Length: 10\r\n\r\n`);
      expect([result, parser.status, parser.body(), parser.reusable]).toEqual(['done', status, '', true]);
    }
  });

  it('Content-Length: 0 ends at the header section', () => {
    expect(parse('HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n').result).toBe('done');
  });

  it('a body without a length ends with the connection, which is then not reused', () => {
    const { result, parser } = parse('HTTP/1.1 200 OK\r\n\r\nsome text');
    expect(result).toBe('more');
    expect(parser.end()).toBe(true);
    expect([parser.body(), parser.reusable]).toEqual(['some text', false]);
  });

  it('a transfer coding other than chunked last also reads to the end of the connection', () => {
    const { result, parser } = parse('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz');
    expect(result).toBe('more');
    expect(parser.end()).toBe(true);
    expect(parser.reusable).toBe(false);
  });

  it('Transfer-Encoding wins over Content-Length, and such a connection is not reused', () => {
    const { result, parser } = parse('HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n');
    expect([result, parser.body(), parser.reusable]).toEqual(['done', 'ok', false]);
  });

  it('interim 1xx answers are skipped; 101 is final and ends the connection', () => {
    const { result, parser } = parse('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok', 5);
    expect([result, parser.status, parser.statusText, parser.body()]).toEqual(['done', 201, 'Created', 'ok']);
    const upgrade = parse('HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n');
    expect([upgrade.result, upgrade.parser.status, upgrade.parser.reusable]).toEqual(['done', 101, false]);
  });

  it('keep-alive: HTTP/1.1 unless Connection: close; HTTP/1.0 only with Connection: keep-alive', () => {
    expect(parse('HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n').parser.reusable).toBe(false);
    expect(parse('HTTP/1.1 204 No Content\r\nConnection: Keep-Alive, Close\r\n\r\n').parser.reusable).toBe(false);
    expect(parse('HTTP/1.0 204 No Content\r\n\r\n').parser.reusable).toBe(false);
    expect(parse('HTTP/1.0 204 No Content\r\nConnection: keep-alive\r\n\r\n').parser.reusable).toBe(true);
  });

  it('reads the idle timeout a server announces with Keep-Alive', () => {
    expect(parse('HTTP/1.1 204 No Content\r\nKeep-Alive: timeout=5, max=100\r\n\r\n').parser.keepAliveMs).toBe(5000);
    expect(parse('HTTP/1.1 204 No Content\r\nKeep-Alive: max=3;timeout = 2\r\n\r\n').parser.keepAliveMs).toBe(2000);
    expect(parse('HTTP/1.1 204 No Content\r\nKeep-Alive: timeout=soon\r\n\r\n').parser.keepAliveMs).toBeUndefined();
    expect(parse('HTTP/1.1 204 No Content\r\nKeep-Alive: mytimeout=5\r\n\r\n').parser.keepAliveMs).toBeUndefined();
    expect(parse('HTTP/1.1 204 No Content\r\n\r\n').parser.keepAliveMs).toBeUndefined();
  });

  it('bytes beyond the answer make the connection not reusable', () => {
    const { result, parser } = parse('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n');
    expect([result, parser.reusable]).toEqual(['done', false]);
  });

  it('a status line without a reason phrase answers an empty one; header names are case-insensitive', () => {
    const { parser } = parse('HTTP/1.1 418\r\ncOnTeNt-LeNgTh: 1\r\n\r\nx');
    expect([parser.status, parser.statusText, parser.body()]).toEqual([418, '', 'x']);
  });

  it('a repeated Content-Length with one value is accepted', () => {
    expect(parse('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2, 2\r\n\r\nok').parser.body()).toBe('ok');
  });

  it('the body is decoded as UTF-8 even when split inside a character', () => {
    const bytes = Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n'), Buffer.from('€x')]);
    expect(parse(bytes, 1).parser.body()).toBe('€x');
  });
});

describe('the connection ending early', () => {
  it('before a whole header section: no answer', () => {
    const { parser } = parse('HTTP/1.1 200 OK\r\nContent-Le');
    expect(parser.end()).toBe(false);
    expect(parser.started).toBe(true);
    expect(new ResponseParser(10).started).toBe(false);
  });

  it('inside a body of known length: the status is the answer', () => {
    const { result, parser } = parse('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 100\r\n\r\nbusy');
    expect(result).toBe('more');
    expect(parser.end()).toBe(true);
    expect([parser.status, parser.body(), parser.reusable]).toEqual([503, 'busy', false]);
  });
});

describe('the body cap', () => {
  it('a body of exactly the cap is read whole and the connection kept', () => {
    const { result, parser } = parse(`HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n${'a'.repeat(8)}`, 3, 8);
    expect([result, parser.body(), parser.reusable]).toEqual(['done', 'a'.repeat(8), true]);
  });

  it('one byte over the cap answers "capped" with the first cap bytes, not reusable', () => {
    const { result, parser } = parse(`HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n${'a'.repeat(9)}`, 3, 8);
    expect([result, parser.body(), parser.reusable]).toEqual(['capped', 'a'.repeat(8), false]);
  });

  it('applies to chunked and close-delimited bodies too', () => {
    expect(parse(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n${'b'.repeat(16)}\r\n0\r\n\r\n`, 4, 10).result).toBe('capped');
    expect(parse(`HTTP/1.1 200 OK\r\n\r\n${'c'.repeat(11)}`, 4, 10).result).toBe('capped');
  });
});

describe('malformed answers', () => {
  it('refuses a status line that is not HTTP/1.x', () => {
    expect(refusal('HTTP/2 200 OK\r\n\r\n')).toBe('invalid status line "HTTP/2 200 OK"');
    expect(refusal('SSH-2.0-OpenSSH\r\n\r\n')).toBe('invalid status line "SSH-2.0-OpenSSH"');
    expect(refusal('HTTP/1.1 99 Low\r\n\r\n')).toBe('invalid status line "HTTP/1.1 99 Low"');
  });

  it('refuses a header line without a colon, or a folded one', () => {
    expect(refusal('HTTP/1.1 200 OK\r\nno colon here\r\n\r\n')).toBe('invalid header line "no colon here"');
    expect(refusal('HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n')).toBe('invalid header line " folded"');
  });

  it('refuses a bad or conflicting Content-Length', () => {
    expect(refusal('HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n')).toBe('invalid Content-Length "-1"');
    expect(refusal('HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n')).toBe('conflicting Content-Length values');
  });

  it('refuses a bad chunk size or a chunk without its CRLF', () => {
    expect(refusal('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')).toBe('invalid chunk size "zz"');
    expect(refusal('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX')).toBe('a chunk does not end with CRLF');
  });

  it('a header section of exactly the limit is read; one byte more is refused', () => {
    const head = (size: number) => {
      const start = 'HTTP/1.1 204 No Content\r\nX-Pad: ';
      return `${start}${'p'.repeat(size - start.length - 4)}\r\n\r\n`;
    };
    expect(head(MAX_HEAD_BYTES)).toHaveLength(MAX_HEAD_BYTES);
    expect(parse(head(MAX_HEAD_BYTES), 1000).result).toBe('done');
    expect(refusal(head(MAX_HEAD_BYTES + 1))).toBe(`the response header is larger than ${MAX_HEAD_BYTES} bytes`);
    // Also when the end never comes: refused once the limit is passed, not buffered forever.
    expect(() => parse(`HTTP/1.1 200 OK\r\nX: ${'q'.repeat(MAX_HEAD_BYTES)}`, 512)).toThrow(ResponseParseError);
  });

  it(`accepts ${MAX_INTERIM_ANSWERS} interim answers before the final one, and refuses one more`, () => {
    const interim = (n: number) => 'HTTP/1.1 103 Early Hints\r\n\r\n'.repeat(n);
    expect(parse(`${interim(MAX_INTERIM_ANSWERS)}HTTP/1.1 204 No Content\r\n\r\n`).parser.status).toBe(204);
    expect(refusal(`${interim(MAX_INTERIM_ANSWERS + 1)}HTTP/1.1 204 No Content\r\n\r\n`)).toBe(`more than ${MAX_INTERIM_ANSWERS} interim (1xx) answers`);
  });

  it('refuses an endless chunk-size line and an endless trailer section', () => {
    expect(() => parse(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1${'0'.repeat(5000)}`, 100)).toThrow('the chunk size line is longer than 4096 bytes');
    expect(() => parse(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n${'T: x\r\n'.repeat(3000)}`, 100)).toThrow(
      /the trailer section is longer than/,
    );
  });
});
