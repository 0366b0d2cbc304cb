/**
 * The front's head reader against node:http's own parser (llhttp), on generated request heads.
 *
 * The front answers a request itself only when `readRequestHead` calls it plain; anything else goes
 * to node:http unchanged (protocol §16.7). So the property that matters is one-sided: every head
 * the reader calls plain, node:http must accept too, and frame the same way — the same target, the
 * same declared length, the body ending where the reader says, so the next pipelined request starts
 * at the same byte. A head the reader calls `other` is node:http's to judge, whatever it decides.
 * The generator leans on the places where parsers disagree: white space and tabs around values,
 * signs, commas and leading zeros in Content-Length, bare CR or LF, obsolete line folding, bytes
 * outside ASCII, duplicated and misspelled names, other methods and versions.
 */
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRequestHead } from './http1-request.js';

let server: Server;
let port: number;

/** What node:http made of one connection's bytes: the requests it handed over, or its refusal. */
interface Parsed {
  requests: { method: string; url: string; contentLength: string | undefined; body: number }[];
  refused: boolean;
  answer: string;
}
const seen = new Map<string, Parsed['requests']>();

beforeAll(async () => {
  server = createServer((req, res) => {
    const id = req.headers['x-case'] as string | undefined;
    const list = seen.get(String(id)) ?? [];
    seen.set(String(id), list);
    let body = 0;
    req.on('data', (chunk: Buffer) => (body += chunk.length));
    req.on('end', () => {
      list.push({ method: req.method!, url: req.url!, contentLength: req.headers['content-length'], body });
      const last = req.url === '/next';
      res.writeHead(200, { 'content-length': '2', ...(last ? { connection: 'close' } : {}) });
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

let cases = 0;

/** Sends head + body + a pipelined `GET /next`, and reports what node:http parsed. */
async function nodeHttp(head: Buffer, body: Buffer, pipelined = true): Promise<Parsed> {
  const id = String(++cases);
  const next = pipelined ? Buffer.from(`GET /next HTTP/1.1\r\nHost: h\r\nX-Case: ${id}\r\n\r\n`, 'latin1') : Buffer.alloc(0);
  // The case id goes in as the head's first field so node:http files both requests under it.
  const withId = Buffer.concat([head.subarray(0, head.indexOf('\r\n') + 2), Buffer.from(`X-Case: ${id}\r\n`), head.subarray(head.indexOf('\r\n') + 2)]);
  const answer = await new Promise<string>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('error', () => undefined);
    socket.setTimeout(2_000, () => socket.destroy());
    socket.end(Buffer.concat([withId, body, next]));
  });
  const requests = seen.get(id) ?? [];
  seen.delete(id);
  return { requests, refused: !answer.startsWith('HTTP/1.1 200'), answer };
}

const ows = fc.oneof({ weight: 8, arbitrary: fc.constantFrom('', ' ') }, { weight: 1, arbitrary: fc.constantFrom('  ', '\t', ' \t', '\t ') });
const lineEnd = fc.oneof({ weight: 30, arbitrary: fc.constant('\r\n') }, { weight: 1, arbitrary: fc.constantFrom('\n', '\r', '\r\n ', '\r\n\t') });
/** A declared length: mostly digits, sometimes with what some parsers skip or misread around it. */
const lengthValue = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 40 }).map(String) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom('', '+', '-', '0', '00', '\v', '\u00a0'), fc.integer({ min: 0, max: 40 }), fc.constantFrom('', ',', ', 3', 'x', '\u00a0', '.0', 'e0', '\v'))
      .map(([before, n, after]) => `${before}${n}${after}`),
  },
);
const name = fc.oneof(
  { weight: 15, arbitrary: fc.constantFrom('Content-Type', 'X-Project-Id', 'Authorization', 'Accept', 'Connection', 'Host', 'Content-Length') },
  { weight: 1, arbitrary: fc.constantFrom('Transfer-Encoding', 'Expect', 'Upgrade', 'Content-Length ', ' Content-Length', 'Content_Length', 'Ho\u00e9st', 'X\u0000A') },
);
const value = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom('h', 'a.example:7420', '[::1]:1', 'application/json', 'keep-alive', 'close', 'Close', 'Bearer t', '*/*') },
  { weight: 1, arbitrary: lengthValue },
  { weight: 1, arbitrary: fc.constantFrom('upgrade', 'chunked', 'caf\u00e9', 'a\u0000b', '', '100-continue') },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom('a', ' ', '\t', ':', '\u007f', '\u00ff', ',', ';', '"'), maxLength: 6 }) },
);
const separator = fc.oneof({ weight: 15, arbitrary: fc.constant(': ') }, { weight: 1, arbitrary: fc.constantFrom(':', ':\t', ' :', '::') });
const field = fc.tuple(name, separator, ows, value, ows, lineEnd).map(([n, sep, o1, v, o2, end]) => `${n}${sep}${o1}${v}${o2}${end}`);
const requestLine = fc
  .tuple(
    fc.oneof({ weight: 20, arbitrary: fc.constant('POST') }, { weight: 1, arbitrary: fc.constantFrom('post', 'PUT', 'GET', 'POST ') }),
    fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom('/v1/streams/a', '/v1/streams/shop/orders', '/v1/streams/a%20b', '/v1/streams/a?x=1') },
      { weight: 1, arbitrary: fc.constantFrom('/v1/streams/\u00e9', '/v1/streams/a b', '*', 'http://h/v1/streams/a', '/v1/streams/a\u007f') },
    ),
    fc.oneof({ weight: 20, arbitrary: fc.constant('HTTP/1.1') }, { weight: 1, arbitrary: fc.constantFrom('HTTP/1.0', 'HTTP/1.10', 'http/1.1', 'HTTP/1.1 ') }),
    lineEnd,
  )
  .map(([m, t, v, end]) => `${m} ${t} ${v}${end}`);
/**
 * Mostly near-plain heads: a Host and a declared length (with generated white space around it),
 * then generated fields, then the blank line.
 */
const head = fc
  .tuple(requestLine, ows, lengthValue, ows, fc.array(field, { maxLength: 3 }), fc.oneof({ weight: 8, arbitrary: fc.constant('\r\n') }, { weight: 1, arbitrary: fc.constant('\n') }))
  .map(([line, o1, length, o2, fields, end]) => Buffer.from(`${line}Host: h\r\nContent-Length:${o1}${length}${o2}\r\n${fields.join('')}${end}`, 'latin1'));

describe('readRequestHead against node:http', () => {
  it('every head the front calls plain, node:http accepts and frames the same way', async () => {
    let plain = 0;
    await fc.assert(
      fc.asyncProperty(head, async (bytes) => {
        const verdict = readRequestHead(bytes, { maxBodyBytes: 1000, accepts: () => true });
        if (typeof verdict === 'string') return;
        plain++;
        const body = Buffer.alloc(verdict.contentLength, 'b');
        // After "Connection: close" node:http reads no further request: nothing is pipelined then.
        const parsed = await nodeHttp(bytes.subarray(0, verdict.headBytes), body, !verdict.close);
        const context = `${JSON.stringify(bytes.toString('latin1'))} → ${JSON.stringify(parsed.answer.slice(0, 80))}`;
        expect(parsed.refused, `node:http refused what the front calls plain: ${context}`).toBe(false);
        expect(parsed.requests, context).toEqual([
          { method: 'POST', url: verdict.target, contentLength: verdict.fields.get('content-length'), body: verdict.contentLength },
          ...(verdict.close ? [] : [{ method: 'GET', url: '/next', contentLength: undefined, body: 0 }]),
        ]);
      }),
      { numRuns: 1500 },
    );
    // The generator must reach the plain form often, or the property says little. About 21 % of
    // heads are plain (≈320 of 1500, standard deviation ≈16): 300 failed one run in ten, 200 is
    // seven deviations below.
    expect(plain).toBeGreaterThan(200);
  });

  it("the reported attack: 'Content-Length: 5<TAB>' is not plain, so node:http decides it", async () => {
    const bytes = Buffer.from('POST /v1/streams/a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\t\r\n\r\n', 'latin1');
    expect(readRequestHead(bytes, { maxBodyBytes: 1000, accepts: () => true })).toBe('other');
    const parsed = await nodeHttp(bytes, Buffer.from('hello'));
    // Node 20's llhttp refuses the tab; later ones take it as optional whitespace and read 5 bytes.
    // Either way the front did not frame it on its own reading.
    if (Number(process.versions.node.split('.')[0]) <= 20) expect(parsed.refused).toBe(true);
    else expect(parsed.refused || parsed.requests[0]?.body === 5, JSON.stringify(parsed.requests)).toBe(true);
  });
});
