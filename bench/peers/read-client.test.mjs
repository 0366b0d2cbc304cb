import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { catchUpRead, pageEnds, randomAfters, randomPagesRead, readHead, seededRandom } from './read-client.mjs';

const page = (offsets) => Buffer.from(`{"streamId":"s","streamMaxOffset":9,"events":[${offsets.map((o) => `{"path":"/p","offset":${o},"payload":{"n":${o}}}`).join(',')}]}`);

describe('pageEnds', () => {
  test('first and last offsets, not streamMaxOffset', () => {
    expect(pageEnds(page([4, 5, 6]))).toEqual({ first: 4, last: 6 });
    expect(pageEnds(page([12]))).toEqual({ first: 12, last: 12 });
  });
  test('an empty page has none; a key without a number is refused', () => {
    expect(pageEnds(page([]))).toBeNull();
    expect(() => pageEnds(Buffer.from('[{"offset":"x"}]'))).toThrow(/not followed by a number/);
  });
});

describe('randomAfters', () => {
  test('every page full: afterOffset from firstOffset - 1 to lastOffset - page, both ends reached', () => {
    const afters = randomAfters({ firstOffset: 1, lastOffset: 23, page: 10, pages: 2000, random: seededRandom(7) });
    expect(afters).toHaveLength(2000);
    expect(afters.every((a) => Number.isInteger(a) && a >= 0 && a <= 13)).toBe(true);
    expect(new Set(afters).size).toBe(14);
    // The ends of the generator's range map to the ends of the offsets'.
    expect(randomAfters({ firstOffset: 5, lastOffset: 23, page: 10, pages: 2, random: ((v) => () => v.shift())([0, 0.999999]) })).toEqual([4, 13]);
  });
  test('the same seed repeats a run, another does not; a stream shorter than a page is refused', () => {
    const run = (seed) => randomAfters({ firstOffset: 1, lastOffset: 200001, page: 500, pages: 50, random: seededRandom(seed) });
    expect(run(19)).toEqual(run(19));
    expect(run(19)).not.toEqual(run(20));
    expect(() => randomAfters({ firstOffset: 1, lastOffset: 9, page: 10, pages: 1, random: Math.random })).toThrow(/no full page/);
  });
  test('seededRandom answers [0, 1), spread over it', () => {
    const r = seededRandom(1);
    const v = Array.from({ length: 10000 }, r);
    expect(v.every((x) => x >= 0 && x < 1)).toBe(true);
    const mean = v.reduce((a, b) => a + b) / v.length;
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.02);
  });
});

describe('readHead', () => {
  test('Content-Length framing only', () => {
    expect(readHead('HTTP/1.1 200 OK\r\ncontent-length: 12\r\nconnection: keep-alive')).toEqual({ status: 200, length: 12, close: false });
    expect(() => readHead('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked')).toThrow(/Content-Length only/);
    expect(() => readHead('HTTP/1.1 200 OK\r\nx: y')).toThrow(/no Content-Length/);
  });
});

describe('catchUpRead against a stub stream of 1..23', () => {
  let server;
  let url;
  /** What the stub answers for a page: dense offsets unless `skip` drops one. */
  let skip = null;
  const asked = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      const q = new URL(req.url, 'http://x').searchParams;
      const after = Number(q.get('afterOffset'));
      const limit = Number(q.get('limit'));
      asked.push(after);
      const offsets = [];
      for (let o = after + 1; o <= 23 && offsets.length < limit; o++) if (o !== skip) offsets.push(o);
      // Split the body over several writes, so the reader joins chunks.
      const body = page(offsets);
      res.writeHead(200, { 'content-length': body.length });
      res.write(body.subarray(0, 7));
      setImmediate(() => res.end(body.subarray(7)));
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${server.address().port}`;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  test('reads every page once, each after the last offset of the one before', async () => {
    asked.length = 0;
    skip = null;
    const r = await catchUpRead({ url, path: '/s', firstOffset: 1, lastOffset: 23, page: 10 });
    expect(asked).toEqual([0, 10, 20]);
    expect(r).toMatchObject({ pages: 3, events: 23 });
    const range = (a, b) => Array.from({ length: b - a + 1 }, (_, i) => a + i);
    expect(r.bytes).toBe(page(range(1, 10)).length + page(range(11, 20)).length + page(range(21, 23)).length);
  });

  test('random pages: each afterOffset asked once, in order, every byte of each full page counted', async () => {
    asked.length = 0;
    skip = null;
    const r = await randomPagesRead({ url, path: '/s', afters: [13, 0, 7, 13], page: 10 });
    expect(asked).toEqual([13, 0, 7, 13]);
    expect(r).toMatchObject({ pages: 4, events: 40 });
    const range = (a) => Array.from({ length: 10 }, (_, i) => a + 1 + i);
    expect(r.bytes).toBe([13, 0, 7, 13].reduce((n, a) => n + page(range(a)).length, 0));
  });

  test('random pages: a short or gapped page fails the read', async () => {
    skip = null;
    await expect(randomPagesRead({ url, path: '/s', afters: [14], page: 10 })).rejects.toThrow(/after 14: events 15…23, expected 15…24/);
    skip = 5;
    await expect(randomPagesRead({ url, path: '/s', afters: [0], page: 10 })).rejects.toThrow(/after 0: events 1…11, expected 1…10/);
  });

  test('a page that does not end where the range says fails the read', async () => {
    skip = 15;
    await expect(catchUpRead({ url, path: '/s', firstOffset: 1, lastOffset: 23, page: 10 })).rejects.toThrow(/after 10: events 11…21, expected 11…20/);
  });
});
