/**
 * End-to-end: CORS (protocol §1.4) on the Node host. Every entrance answers with the same fields:
 * the connection front (a connection's first plain append), node:http's native append path (an
 * append after the connection was handed over), and the app (a chunked append, every other route).
 * Preflights are answered for every path before authentication; a disallowed origin, method or
 * header field is refused and its answer carries no CORS field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNodeServer } from '../../src/hosts/node/serve.js';
import { expectError, type ApiResponse } from '../helpers/http.js';
import { appendRequest, getRequest } from '../helpers/http1-requests.js';
import { rawAnswers, type RawAnswer } from '../helpers/raw-answers.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';

const APP = 'https://app.example';
const OTHER = 'https://other.example';
const TOKEN = 'cors-admin-token-0123';
const ALLOWED_HEADERS = 'authorization, content-type, x-project-id, last-event-id, if-none-match, idempotency-key';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ tokens: new Map([[TOKEN, '*']]), cors: { origins: [APP, 'http://localhost:5173'] } });
});

afterAll(async () => {
  await server?.close();
});

async function call(method: string, route: string, headers: Record<string, string>, body?: string): Promise<ApiResponse> {
  const res = await fetch(`${server.url}${route}`, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  const json = res.headers.get('content-type')?.startsWith('application/json') === true;
  return { status: res.status, headers: res.headers, text, body: json ? (JSON.parse(text) as unknown) : undefined };
}

const auth = { authorization: `Bearer ${TOKEN}` };
/** The CORS fields of an answer, in name order (node:http and the web Headers order them differently). */
const corsFields = (a: RawAnswer) =>
  a.fields.filter(([name]) => name.startsWith('access-control-') || name === 'vary').sort(([x], [y]) => x.localeCompare(y));

describe('answers to an allowed origin', () => {
  const expected: Array<[string, string]> = [
    ['access-control-allow-origin', APP],
    ['access-control-expose-headers', 'etag'],
    ['vary', 'origin'],
  ];

  it('a plain append answered by the connection front carries the fields, byte for byte', async () => {
    const [answer] = await rawAnswers(server.url, appendRequest('c1/front', '{"type":"x"}', [`Origin: ${APP}`, `Authorization: Bearer ${TOKEN}`]), 1);
    expect(answer!.status, answer!.body).toBe(200);
    expect(corsFields(answer!)).toEqual(expected);
    expect(server.server.front.handedOver).toBe(0);
  });

  it('an append on node:http after the hand-over, and a chunked one the app answers, carry the same', async () => {
    const handedOver = server.server.front.handedOver;
    const chunked = [
      'POST /v1/streams/c1/app HTTP/1.1',
      'Host: 127.0.0.1',
      'Content-Type: application/json',
      'Transfer-Encoding: chunked',
      `Origin: ${APP}`,
      `Authorization: Bearer ${TOKEN}`,
      '',
      'c\r\n{"type":"x"}\r\n0\r\n\r\n',
    ].join('\r\n');
    const answers = await rawAnswers(
      server.url,
      getRequest('/healthz', [`Origin: ${APP}`]) + appendRequest('c1/native', '{"type":"x"}', [`Origin: ${APP}`, `Authorization: Bearer ${TOKEN}`]) + chunked,
      3,
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    for (const answer of answers) expect(corsFields(answer)).toEqual(expected);
    expect(JSON.parse(answers[1]!.body)).toMatchObject({ events: [{ path: '/c1/native' }] });
    expect(JSON.parse(answers[2]!.body)).toMatchObject({ events: [{ path: '/c1/app' }] });
    expect(server.server.front.handedOver).toBe(handedOver + 1);
  });

  it('through fetch: appends, reads, errors and unknown routes all carry them', async () => {
    const answers = [
      await call('POST', '/v1/streams/c2/a', { ...auth, origin: APP, 'content-type': 'application/json' }, '{"type":"x"}'),
      await call('GET', '/v1/streams/c2/a', { ...auth, origin: APP }),
      await call('GET', '/v1/streams/c2/a', { origin: APP }),
      await call('GET', '/v1/nothing-here', { ...auth, origin: APP }),
      await call('GET', '/v1/openapi.json', { origin: 'http://localhost:5173' }),
    ];
    // A live SSE answer too (an EventSource on another origin needs it), ended once its head is here.
    const controller = new AbortController();
    const sse = await fetch(`${server.url}/v1/streams/c2/a?live=sse`, { headers: { ...auth, origin: APP }, signal: controller.signal });
    expect(sse.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(sse.headers.get('access-control-allow-origin')).toBe(APP);
    controller.abort();
    await sse.body?.cancel().catch(() => undefined);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 401, 404, 200]);
    for (const [i, answer] of answers.entries()) {
      expect(answer.headers.get('access-control-allow-origin')).toBe(i === 4 ? 'http://localhost:5173' : APP);
      expect(answer.headers.get('vary')).toBe('origin');
      expect(answer.headers.get('access-control-expose-headers')).toBe('etag');
    }
  });
});

describe('answers to another origin, or without one', () => {
  it('carry no CORS field but Vary: Origin, on every entrance', async () => {
    const front = await rawAnswers(server.url, appendRequest('c3/a', '{"type":"x"}', [`Origin: ${OTHER}`, `Authorization: Bearer ${TOKEN}`]), 1);
    const none = await rawAnswers(server.url, appendRequest('c3/a', '{"type":"x"}', [`Authorization: Bearer ${TOKEN}`]), 1);
    for (const answer of [...front, ...none]) {
      expect(answer.status, answer.body).toBe(200);
      expect(corsFields(answer)).toEqual([['vary', 'origin']]);
    }
    const read = await call('GET', '/v1/streams/c3/a', { ...auth, origin: OTHER });
    expect(read.status).toBe(200);
    expect(read.headers.get('access-control-allow-origin')).toBeNull();
    expect(read.headers.get('vary')).toBe('origin');
  });

  it('an origin that differs only in scheme, port or a trailing part is another origin', async () => {
    for (const origin of ['http://app.example', 'https://app.example:8443', 'https://app.example.evil', 'null']) {
      const res = await call('GET', '/healthz', { origin });
      expect(res.headers.get('access-control-allow-origin'), origin).toBeNull();
    }
  });
});

describe('preflights', () => {
  const preflight = (route: string, origin: string, method: string, headers?: string) =>
    call('OPTIONS', route, {
      origin,
      'access-control-request-method': method,
      ...(headers === undefined ? {} : { 'access-control-request-headers': headers }),
    });

  it('are answered 204 for every route, without a token, with the methods, headers and max age', async () => {
    const routes = ['/v1/streams/c4/a', '/v1/streams/', '/v1/streams/c4/a:state', '/v1/streams/c4%2Fa:waitForEvent', '/v1/streams', '/v1/openapi.json', '/healthz', '/metrics', '/v1/not-a-route'];
    for (const route of routes) {
      const res = await preflight(route, APP, 'POST', 'Authorization, Content-Type, X-Project-Id');
      expect(res.status, `${route}: ${res.text}`).toBe(204);
      expect(res.text).toBe('');
      expect(res.headers.get('access-control-allow-origin')).toBe(APP);
      expect(res.headers.get('access-control-allow-methods')).toBe('GET, HEAD, POST, DELETE');
      expect(res.headers.get('access-control-allow-headers')).toBe(ALLOWED_HEADERS);
      expect(res.headers.get('access-control-max-age')).toBe('7200');
      expect(res.headers.get('vary')).toBe('origin');
    }
    for (const method of ['GET', 'HEAD', 'DELETE']) expect((await preflight('/v1/streams/c4/a', APP, method)).status).toBe(204);
    // Safelisted fields need no permission but may be named.
    expect((await preflight('/v1/streams/c4/a', APP, 'GET', 'accept, accept-language, content-language, last-event-id')).status).toBe(204);
  });

  it('from an origin that is not allowed: FORBIDDEN, and no CORS field', async () => {
    const res = await preflight('/v1/streams/c4/a', OTHER, 'POST', 'content-type');
    expectError(res, 'FORBIDDEN', 'cross-origin requests from "https://other.example" are not allowed on this server');
    expect([...res.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([]);
  });

  it('for a method or a header field the API does not take: FORBIDDEN, naming what is allowed', async () => {
    expectError(await preflight('/v1/streams/c4/a', APP, 'PUT'), 'FORBIDDEN', 'method "PUT" is not allowed cross-origin (allowed: GET, HEAD, POST, DELETE)');
    expectError(await preflight('/v1/streams/c4/a', APP, 'patch'), 'FORBIDDEN', 'method "patch" is not allowed cross-origin');
    expectError(
      await preflight('/v1/streams/c4/a', APP, 'POST', 'content-type, x-evil'),
      'FORBIDDEN',
      `request header "x-evil" is not allowed cross-origin (allowed: ${ALLOWED_HEADERS})`,
    );
  });

  it('OPTIONS that is not a preflight goes to the routes (NOT_FOUND), and is counted under its own label', async () => {
    expectError(await call('OPTIONS', '/v1/streams/c4/a', { ...auth, origin: APP }), 'NOT_FOUND', 'OPTIONS is not a method of /v1/streams/{path}');
    const metrics = await call('GET', '/metrics', auth);
    expect(metrics.text).toContain('method="OPTIONS",route="{preflight}",status="204"');
    expect(metrics.text).toContain('method="OPTIONS",route="{preflight}",status="403"');
  });
});

describe('configuration', () => {
  it('without --cors-origin there is no CORS at all: no field, and a preflight is not answered', async () => {
    const plain = await startTestServer();
    try {
      const res = await fetch(`${plain.url}/v1/streams/a`, { headers: { origin: APP } });
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('vary')).toBeNull();
      const pre = await fetch(`${plain.url}/v1/streams/a`, { method: 'OPTIONS', headers: { origin: APP, 'access-control-request-method': 'GET' } });
      expect(pre.status).toBe(404);
      expect(pre.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await plain.close();
    }
  });

  it('* in open mode allows every origin, without Vary', async () => {
    const any = await startTestServer({ cors: { origins: ['*'] } });
    try {
      const [front] = await rawAnswers(any.url, appendRequest('a', '{"type":"x"}', [`Origin: ${OTHER}`]), 1);
      expect(corsFields(front!)).toEqual([
        ['access-control-allow-origin', '*'],
        ['access-control-expose-headers', 'etag'],
      ]);
      const pre = await fetch(`${any.url}/v1/streams/a`, { method: 'OPTIONS', headers: { origin: 'null', 'access-control-request-method': 'GET' } });
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe('*');
    } finally {
      await any.close();
    }
  });

  it('* with tokens is refused at start unless allowed explicitly', async () => {
    const { dir, remove } = await tempDir();
    try {
      const tokens = new Map([[TOKEN, '*']]);
      await expect(startNodeServer({ port: 0, data: dir, tokens, cors: { origins: ['*'] } })).rejects.toThrow(
        '--cors-origin * with tokens would let any web page call this server with a token it holds',
      );
      const allowed = await startNodeServer({ port: 0, data: dir, tokens, cors: { origins: ['*'], allowAnyOriginWithTokens: true } });
      try {
        const res = await fetch(`${allowed.url}/healthz`, { headers: { origin: OTHER } });
        expect(res.headers.get('access-control-allow-origin')).toBe('*');
      } finally {
        await allowed.close();
      }
    } finally {
      await remove();
    }
  });
});
