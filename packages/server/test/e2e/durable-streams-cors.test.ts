/**
 * End-to-end, on both hosts: CORS of the Durable Streams routes is the server's (docs/durable-streams.md
 * "Browsers"). `--cors-origin` governs /v1/stream/ as it governs the rest: an allowed origin gets
 * its preflights answered with this protocol's methods and header fields and its answers exposed;
 * any other origin gets nothing; without the option no answer carries a CORS field. The security
 * fields the protocol asks for are on every answer either way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, type ApiResponse } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const APP = 'https://app.example';
const OTHER = 'https://other.example';
const TOKEN = 'ds-cors-token-0123456789';
const DS_METHODS = 'GET, HEAD, POST, PUT, DELETE';
const DS_REQUEST_HEADERS =
  'authorization, content-type, x-project-id, if-none-match, stream-seq, stream-ttl, stream-expires-at, stream-closed, ' +
  'producer-id, producer-epoch, producer-seq, stream-forked-from, stream-fork-offset, stream-fork-sub-offset';
const DS_EXPOSED =
  'stream-next-offset, stream-cursor, stream-up-to-date, stream-closed, stream-ttl, stream-expires-at, producer-epoch, producer-seq, ' +
  'producer-expected-seq, producer-received-seq, stream-sse-data-encoding, etag, location, content-type';

let withCors: TestServer;
let without: TestServer;
let n = 0;
const name = () => `cors-${process.pid}-${++n}`;

beforeAll(async () => {
  [withCors, without] = await Promise.all([
    startTestServer({ tokens: new Map([[TOKEN, '*']]), cors: { origins: [APP] } }),
    startTestServer({ tokens: new Map([[TOKEN, '*']]) }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([withCors?.close(), without?.close()]);
});

async function call(server: TestServer, method: string, route: string, headers: Record<string, string>, body?: string): Promise<ApiResponse> {
  const res = await fetch(`${server.url}${route}`, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  // A JSON stream's HEAD answers its content type without a body.
  const json = text !== '' && res.headers.get('content-type')?.startsWith('application/json') === true;
  return { status: res.status, headers: res.headers, text, body: json ? (JSON.parse(text) as unknown) : undefined };
}

const preflight = (server: TestServer, route: string, origin: string, method: string, headers?: string) =>
  call(server, 'OPTIONS', route, {
    origin,
    'access-control-request-method': method,
    ...(headers === undefined ? {} : { 'access-control-request-headers': headers }),
  });

const corsFieldsOf = (res: ApiResponse) => [...res.headers.keys()].filter((field) => field.startsWith('access-control-'));
const auth = { authorization: `Bearer ${TOKEN}` };

describe('with --cors-origin', () => {
  it('a preflight from an allowed origin is answered 204 without a token, with the protocol methods and fields', async () => {
    for (const method of ['PUT', 'POST', 'GET', 'HEAD', 'DELETE']) {
      const res = await preflight(withCors, `/v1/stream/${name()}`, APP, method, 'Content-Type, Stream-TTL, Producer-Id, Producer-Epoch, Producer-Seq, If-None-Match');
      expect(res.status, `${method}: ${res.text}`).toBe(204);
      expect(res.text).toBe('');
      expect(res.headers.get('access-control-allow-origin')).toBe(APP);
      expect(res.headers.get('access-control-allow-methods')).toBe(DS_METHODS);
      expect(res.headers.get('access-control-allow-headers')).toBe(DS_REQUEST_HEADERS);
      expect(res.headers.get('access-control-max-age')).toBe('7200');
      expect(res.headers.get('vary')).toBe('origin');
    }
  });

  it('the families stay apart: PUT and Stream-* fields are this protocol’s, not /v1/streams/’s', async () => {
    expectError(await preflight(withCors, '/v1/streams/a', APP, 'PUT'), 'FORBIDDEN', 'method "PUT" is not allowed cross-origin (allowed: GET, HEAD, POST, DELETE)');
    expectError(await preflight(withCors, '/v1/streams/a', APP, 'POST', 'producer-id'), 'FORBIDDEN', 'request header "producer-id" is not allowed cross-origin');
    expect((await preflight(withCors, '/v1/streams/a', APP, 'POST', 'idempotency-key')).status).toBe(204);
    expectError(await preflight(withCors, `/v1/stream/${name()}`, APP, 'POST', 'idempotency-key'), 'FORBIDDEN', 'request header "idempotency-key" is not allowed cross-origin');
  });

  it('answers to an allowed origin carry the origin and the exposed fields: create, append, read, HEAD, a refusal', async () => {
    const s = `/v1/stream/${name()}`;
    const origin = { ...auth, origin: APP };
    const answers = [
      [await call(withCors, 'PUT', s, { ...origin, 'content-type': 'application/json' }), 201],
      [await call(withCors, 'POST', s, { ...origin, 'content-type': 'application/json' }, '{"a":1}'), 204],
      [await call(withCors, 'GET', `${s}?offset=-1`, origin), 200],
      [await call(withCors, 'HEAD', s, origin), 200],
      [await call(withCors, 'GET', `/v1/stream/${name()}`, origin), 404],
    ] as const;
    for (const [res, status] of answers) {
      expect(res.status, res.text).toBe(status);
      expect(res.headers.get('access-control-allow-origin')).toBe(APP);
      expect(res.headers.get('access-control-expose-headers')).toBe(DS_EXPOSED);
      expect(res.headers.get('vary')).toBe('origin');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    }
    expect(answers[2][0].text).toBe('[{"a":1}]');
  });

  it('an origin that is not allowed: its preflight is FORBIDDEN with no CORS field, its requests get none', async () => {
    const s = `/v1/stream/${name()}`;
    const refused = await preflight(withCors, s, OTHER, 'PUT', 'content-type');
    expectError(refused, 'FORBIDDEN', 'cross-origin requests from "https://other.example" are not allowed on this server');
    expect(corsFieldsOf(refused)).toEqual([]);
    const created = await call(withCors, 'PUT', s, { ...auth, origin: OTHER, 'content-type': 'text/plain' });
    expect(created.status).toBe(201);
    expect(corsFieldsOf(created)).toEqual([]);
    expect(created.headers.get('vary')).toBe('origin');
    const read = await call(withCors, 'GET', `${s}?offset=-1`, { ...auth, origin: OTHER });
    expect(read.status).toBe(200);
    expect(corsFieldsOf(read)).toEqual([]);
    expect(read.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('a method or field the protocol does not take is FORBIDDEN even from an allowed origin', async () => {
    const s = `/v1/stream/${name()}`;
    expectError(await preflight(withCors, s, APP, 'PATCH'), 'FORBIDDEN', `method "PATCH" is not allowed cross-origin (allowed: ${DS_METHODS})`);
    expectError(await preflight(withCors, s, APP, 'POST', 'content-type, x-evil'), 'FORBIDDEN', `request header "x-evil" is not allowed cross-origin (allowed: ${DS_REQUEST_HEADERS})`);
  });
});

describe('without --cors-origin', () => {
  it('a preflight gets the methods in Allow and no CORS field, so a browser refuses the cross-origin call', async () => {
    const res = await preflight(without, `/v1/stream/${name()}`, APP, 'PUT', 'content-type');
    expect(res.status).toBe(204);
    expect(res.headers.get('allow')).toBe(`${DS_METHODS}, OPTIONS`);
    expect(corsFieldsOf(res)).toEqual([]);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('answers carry no CORS field and no Vary, but the security fields', async () => {
    const s = `/v1/stream/${name()}`;
    const created = await call(without, 'PUT', s, { ...auth, origin: APP, 'content-type': 'text/plain' }, 'hi');
    const read = await call(without, 'GET', `${s}?offset=-1`, { ...auth, origin: APP });
    expect([created.status, read.status, read.text]).toEqual([201, 200, 'hi']);
    for (const res of [created, read]) {
      expect(corsFieldsOf(res)).toEqual([]);
      expect(res.headers.get('vary')).toBeNull();
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    }
  });
});
