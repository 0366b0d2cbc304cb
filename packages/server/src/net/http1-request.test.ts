import { describe, expect, it } from 'vitest';
import { MAX_REQUEST_HEAD_BYTES, readRequestHead, type HeadRules } from './http1-request.js';

const rules: HeadRules = {
  maxBodyBytes: 1000,
  accepts: (target, host) => target.startsWith('/v1/streams/') && host === 'h:1',
};

const plain = ['POST /v1/streams/a HTTP/1.1', 'Host: h:1', 'Content-Type: application/json', 'Content-Length: 2'];
const head = (lines: string[], end = '\r\n\r\n') => Buffer.from(lines.join('\r\n') + end, 'latin1');

describe('readRequestHead', () => {
  it('reads the plain form: target, fields by lower-case name, length, where the body starts', () => {
    const bytes = Buffer.concat([head(plain), Buffer.from('{}')]);
    const verdict = readRequestHead(bytes, rules);
    expect(verdict).toMatchObject({ target: '/v1/streams/a', contentLength: 2, close: false, headBytes: bytes.length - 2 });
    if (typeof verdict === 'string') throw new Error('expected a request');
    expect(verdict.fields.get('content-type')).toBe('application/json');
    expect(verdict.fields.get('host')).toBe('h:1');
  });

  it('trims spaces and tabs around a value and takes names in any case', () => {
    const verdict = readRequestHead(head([...plain, 'X-Project-Id: \t p1 \t', 'aUtHoRiZaTiOn:Bearer t']), rules);
    if (typeof verdict === 'string') throw new Error('expected a request');
    expect(verdict.fields.get('x-project-id')).toBe('p1');
    expect(verdict.fields.get('authorization')).toBe('Bearer t');
  });

  it('notes Connection: close, in any case, and takes keep-alive', () => {
    expect(readRequestHead(head([...plain, 'Connection: Close']), rules)).toMatchObject({ close: true });
    expect(readRequestHead(head([...plain, 'Connection: keep-alive']), rules)).toMatchObject({ close: false });
  });

  it('is incomplete until the blank line, at every cut', () => {
    const bytes = head(plain);
    for (let cut = 0; cut < bytes.length; cut++) expect(readRequestHead(bytes.subarray(0, cut), rules)).toBe('incomplete');
    expect(typeof readRequestHead(bytes, rules)).toBe('object');
  });

  it('takes a head of exactly the size limit and steps aside one byte above it', () => {
    const base = head([...plain, 'X-Pad: ']).length;
    const fits = head([...plain, `X-Pad: ${'a'.repeat(MAX_REQUEST_HEAD_BYTES - base)}`]);
    expect(fits.length).toBe(MAX_REQUEST_HEAD_BYTES);
    expect(typeof readRequestHead(fits, rules)).toBe('object');
    const over = head([...plain, `X-Pad: ${'a'.repeat(MAX_REQUEST_HEAD_BYTES - base + 1)}`]);
    expect(readRequestHead(over, rules)).toBe('other');
    // Without its blank line yet, but already longer than any head it would take.
    expect(readRequestHead(over.subarray(0, MAX_REQUEST_HEAD_BYTES + 1), rules)).toBe('other');
  });

  it('takes a body of exactly the limit and steps aside one byte above it', () => {
    const at = plain.map((l) => (l.startsWith('Content-Length') ? 'Content-Length: 1000' : l));
    const above = plain.map((l) => (l.startsWith('Content-Length') ? 'Content-Length: 1001' : l));
    expect(readRequestHead(head(at), rules)).toMatchObject({ contentLength: 1000 });
    expect(readRequestHead(head(above), rules)).toBe('other');
  });

  const others: Array<[string, string[] | Buffer]> = [
    ['another method', ['GET /v1/streams/a HTTP/1.1', ...plain.slice(1)]],
    ['HTTP/1.0', ['POST /v1/streams/a HTTP/1.0', ...plain.slice(1)]],
    ['a target the rules refuse', ['POST /healthz HTTP/1.1', ...plain.slice(1)]],
    ['a Host the rules refuse', [plain[0]!, 'Host: other', ...plain.slice(2)]],
    ['no Host', [plain[0]!, ...plain.slice(2)]],
    ['no Content-Length', plain.slice(0, 3)],
    ['a Content-Length that is not digits', [...plain.slice(0, 3), 'Content-Length: 2a']],
    ['a signed Content-Length', [...plain.slice(0, 3), 'Content-Length: +2']],
    ['a list as Content-Length', [...plain.slice(0, 3), 'Content-Length: 2, 2']],
    ['two Content-Length fields', [...plain, 'Content-Length: 2']],
    ['a duplicated field', [...plain, 'X-A: 1', 'x-a: 2']],
    ['Transfer-Encoding', [...plain, 'Transfer-Encoding: chunked']],
    ['Expect', [...plain, 'Expect: 100-continue']],
    ['Upgrade', [...plain, 'Upgrade: websocket']],
    ['another Connection option', [...plain, 'Connection: upgrade']],
    ['a folded field', [...plain, 'X-A: 1', ' continued']],
    ['a space before the colon', [...plain, 'X-A : 1']],
    ['an empty field name', [...plain, ': 1']],
    ['a field without colon', [...plain, 'X-A']],
    ['a bare LF inside the head', Buffer.from(`${plain.join('\r\n')}\nX-A: 1\r\n\r\n`, 'latin1')],
    ['a bare CR inside a value', [...plain, 'X-A: 1\r2']],
    ['a byte above ASCII in a value', [...plain, 'X-A: caf\u00e9']],
    ['a control byte in a value', [...plain, 'X-A: a\u0001b']],
    ['two spaces in the request line', ['POST  /v1/streams/a HTTP/1.1', ...plain.slice(1)]],
    ['too many fields (65)', [...plain, ...Array.from({ length: 62 }, (_, i) => `X-${i}: 1`)]],
  ];

  it.each(others)('steps aside for %s', (_name, lines) => {
    expect(readRequestHead(Array.isArray(lines) ? head(lines) : lines, rules)).toBe('other');
  });

  it('takes the most fields it allows (64)', () => {
    expect(typeof readRequestHead(head([...plain, ...Array.from({ length: 61 }, (_, i) => `X-${i}: 1`)]), rules)).toBe('object');
  });
});
