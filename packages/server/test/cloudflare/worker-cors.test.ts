/**
 * CORS on the Worker host (protocol §1.4, docs/cloudflare.md): RIVULET_CORS_ORIGIN gives the same
 * answers as `--cors-origin` on Node (the same hook, cors.ts), and `*` with tokens is refused
 * (every request `UNAVAILABLE`, naming the variable) unless RIVULET_CORS_ALLOW_ANY_ORIGIN_WITH_TOKENS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, type ApiResponse } from '../helpers/http.js';
import { startWorkerHost, type WorkerTestHost } from '../helpers/worker-host.js';

const APP = 'https://app.example';
const TOKEN = 'worker-cors-token-0123';

let host: WorkerTestHost;

beforeAll(async () => {
  host = await startWorkerHost({ tokens: new Map([[TOKEN, '*']]), cors: { origins: [APP] } });
});

afterAll(async () => {
  await host?.close();
});

async function call(url: string, method: string, route: string, headers: Record<string, string>, body?: string): Promise<ApiResponse> {
  const res = await fetch(`${url}${route}`, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  const json = res.headers.get('content-type')?.startsWith('application/json') === true;
  return { status: res.status, headers: res.headers, text, body: json ? (JSON.parse(text) as unknown) : undefined };
}

describe('CORS on the Worker host', () => {
  it('an append and a read from an allowed origin carry the fields; another origin gets Vary only', async () => {
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', origin: APP };
    const append = await call(host.url, 'POST', '/v1/streams/w%2Fcors', headers, '{"type":"x"}');
    expect(append.status, append.text).toBe(200);
    const read = await call(host.url, 'GET', '/v1/streams/w/cors', headers);
    for (const res of [append, read]) {
      expect(res.headers.get('access-control-allow-origin')).toBe(APP);
      expect(res.headers.get('access-control-expose-headers')).toBe('etag');
      expect(res.headers.get('vary')).toBe('origin');
    }
    const other = await call(host.url, 'GET', '/v1/streams/w/cors', { ...headers, origin: 'https://other.example' });
    expect(other.status).toBe(200);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(other.headers.get('vary')).toBe('origin');
  });

  it('answers a preflight without a token, and refuses one from another origin', async () => {
    const ok = await call(host.url, 'OPTIONS', '/v1/streams/w/cors:state', { origin: APP, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' });
    expect(ok.status, ok.text).toBe(204);
    expect(ok.headers.get('access-control-allow-methods')).toBe('GET, HEAD, POST, DELETE');
    expect(ok.headers.get('access-control-max-age')).toBe('7200');
    const refused = await call(host.url, 'OPTIONS', '/v1/streams/w/cors', { origin: 'https://other.example', 'access-control-request-method': 'GET' });
    expectError(refused, 'FORBIDDEN', 'cross-origin requests from "https://other.example" are not allowed on this server');
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('* with tokens makes every request UNAVAILABLE, naming the variable; allowed explicitly it serves *', async () => {
    const refused = await startWorkerHost({ tokens: new Map([[TOKEN, '*']]), cors: { origins: ['*'] } });
    try {
      const res = await call(refused.url, 'GET', '/v1/streams/a', { authorization: `Bearer ${TOKEN}` });
      expectError(res, 'UNAVAILABLE', 'RIVULET_CORS_ORIGIN: --cors-origin * with tokens would let any web page call this server');
    } finally {
      await refused.close();
    }
    const allowed = await startWorkerHost({ tokens: new Map([[TOKEN, '*']]), cors: { origins: ['*'], allowAnyOriginWithTokens: true } });
    try {
      const res = await call(allowed.url, 'GET', '/v1/streams/a', { authorization: `Bearer ${TOKEN}`, origin: 'https://any.example' });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
    } finally {
      await allowed.close();
    }
  });
});
