/** The CORS settings (cors.ts): parsing `--cors-origin`, the `*`-with-tokens rule, route families. */
import { RivuletError } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { API_CORS, checkCorsConfig, corsHook, parseCorsOrigins } from './cors.js';
import { plainHeaders } from './request-headers.js';
import { composeRequestHooks, type AnsweredRequest } from './request-hooks.js';

function refusal(fn: () => unknown): [string, string] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(RivuletError);
    return [(error as RivuletError).code, (error as RivuletError).message];
  }
  throw new Error('expected a refusal');
}

const answered: AnsweredRequest = { method: 'GET', route: 'GET /healthz', status: 200, durationMs: 0 };

describe('parseCorsOrigins', () => {
  it('normalises origins as browsers send them and drops repeats', () => {
    expect(parseCorsOrigins('https://App.Example, http://localhost:5173,https://app.example/,https://b.example:443')).toEqual([
      'https://app.example',
      'http://localhost:5173',
      'https://b.example',
    ]);
    expect(parseCorsOrigins(' * ')).toEqual(['*']);
  });

  it('refuses what is not an origin, naming the entry', () => {
    for (const entry of ['app.example', 'ftp://app.example', 'https://app.example/path', 'https://u:p@app.example', 'https://app.example?x', 'https://']) {
      expect(refusal(() => parseCorsOrigins(entry))).toEqual([
        'INVALID_INPUT',
        `--cors-origin "${entry}" is not an origin: write scheme://host[:port], e.g. https://app.example`,
      ]);
    }
    expect(refusal(() => parseCorsOrigins('https://a.example,,https://b.example'))).toEqual([
      'INVALID_INPUT',
      '--cors-origin has an empty entry in "https://a.example,,https://b.example": give origins separated by commas, or *',
    ]);
    expect(refusal(() => parseCorsOrigins('*,https://a.example'))).toEqual([
      'INVALID_INPUT',
      '--cors-origin * allows every origin: give it alone, not with other origins',
    ]);
  });
});

describe('checkCorsConfig', () => {
  it('refuses * with tokens unless allowed explicitly; a list of origins is always fine', () => {
    const [code, message] = refusal(() => checkCorsConfig({ origins: ['*'] }, true));
    expect(code).toBe('INVALID_INPUT');
    expect(message).toContain('pass --cors-allow-any-origin-with-tokens');
    expect(() => checkCorsConfig({ origins: ['*'], allowAnyOriginWithTokens: true }, true)).not.toThrow();
    expect(() => checkCorsConfig({ origins: ['*'] }, false)).not.toThrow();
    expect(() => checkCorsConfig({ origins: ['https://a.example'] }, true)).not.toThrow();
  });
});

describe('corsHook', () => {
  it('answers the union of the route families it was given', () => {
    const streamsFamily = { methods: ['PUT', 'GET'], requestHeaders: ['stream-seq'], exposedHeaders: ['stream-next-offset'] };
    const hooks = composeRequestHooks([corsHook({ origins: ['https://a.example'] }, [API_CORS, streamsFamily])], { error: () => undefined });
    const request = plainHeaders({ origin: 'https://a.example', 'access-control-request-method': 'PUT', 'access-control-request-headers': 'stream-seq' });
    expect(hooks.preflight!(request)).toEqual({
      headers: [
        ['access-control-allow-methods', 'GET, HEAD, POST, DELETE, PUT'],
        ['access-control-allow-headers', 'authorization, content-type, x-project-id, last-event-id, if-none-match, idempotency-key, stream-seq'],
        ['access-control-max-age', '7200'],
      ],
    });
    expect(hooks.answerHeaders!(answered, request)).toEqual([
      ['access-control-allow-origin', 'https://a.example'],
      ['vary', 'origin'],
      ['access-control-expose-headers', 'etag, stream-next-offset'],
    ]);
  });

  it('a family with a path prefix governs its paths alone, by path for preflights and by route for answers', () => {
    const prefixed = { pathPrefix: '/v1/stream/', methods: ['PUT'], requestHeaders: ['stream-seq'], exposedHeaders: ['stream-next-offset'] };
    const hook = corsHook({ origins: ['https://a.example'] }, [API_CORS, prefixed]);
    const asking = (method: string, headers = '') =>
      plainHeaders({ origin: 'https://a.example', 'access-control-request-method': method, 'access-control-request-headers': headers });
    expect(hook.preflight!(asking('PUT', 'stream-seq'), '/v1/stream/a')).toEqual({
      headers: [
        ['access-control-allow-methods', 'PUT'],
        ['access-control-allow-headers', 'stream-seq'],
        ['access-control-max-age', '7200'],
      ],
    });
    // The other families do not reach under the prefix, nor the prefixed one outside it.
    expect(hook.preflight!(asking('GET'), '/v1/stream/a')).toMatchObject({ refused: { code: 'FORBIDDEN', message: 'method "GET" is not allowed cross-origin (allowed: PUT)' } });
    expect(hook.preflight!(asking('PUT'), '/v1/streams/a')).toMatchObject({ refused: { code: 'FORBIDDEN' } });
    expect(hook.preflight!(asking('PUT'))).toMatchObject({ refused: { code: 'FORBIDDEN' } });
    expect(hook.preflight!(asking('POST', 'idempotency-key'), '/v1/streams/a')).toMatchObject({ headers: expect.anything() });
    const request = plainHeaders({ origin: 'https://a.example' });
    const exposed = (route: string, method = 'GET') => hook.answerHeaders!({ ...answered, method, route }, request)?.find(([name]) => name === 'access-control-expose-headers');
    expect(exposed('GET /v1/stream/{name}')).toEqual(['access-control-expose-headers', 'stream-next-offset']);
    expect(exposed('POST /v1/stream/{name}', 'POST')).toEqual(['access-control-expose-headers', 'stream-next-offset']);
    expect(exposed('GET /v1/streams/{path}')).toEqual(['access-control-expose-headers', 'etag']);
    expect(exposed('OPTIONS {preflight}', 'OPTIONS')).toEqual(['access-control-expose-headers', 'etag']);
  });

  it('the server families by default: the API and the Durable Streams routes', () => {
    const hook = corsHook({ origins: ['*'] });
    const put = plainHeaders({ origin: 'https://x.example', 'access-control-request-method': 'PUT', 'access-control-request-headers': 'producer-id' });
    expect(hook.preflight!(put, '/v1/stream/a')).toMatchObject({ headers: [['access-control-allow-methods', 'GET, HEAD, POST, PUT, DELETE'], expect.anything(), expect.anything()] });
    expect(hook.preflight!(put, '/v1/streams/a')).toMatchObject({ refused: { code: 'FORBIDDEN' } });
  });

  it('leaves OPTIONS without Origin or Access-Control-Request-Method to the routes', () => {
    const hook = corsHook({ origins: ['https://a.example'] });
    expect(hook.preflight!(plainHeaders({ 'access-control-request-method': 'GET' }))).toBeUndefined();
    expect(hook.preflight!(plainHeaders({ origin: 'https://a.example' }))).toBeUndefined();
  });

  it('a preflight hook that throws is logged and skipped', () => {
    const errors: string[] = [];
    const hooks = composeRequestHooks(
      [
        {
          preflight: () => {
            throw new Error('broken hook');
          },
        },
        { preflight: () => ({ headers: [['bad name', 'x']] }) },
        corsHook({ origins: ['*'] }),
      ],
      { error: (message) => errors.push(message) },
    );
    expect(hooks.preflight!(plainHeaders({ origin: 'https://x.example', 'access-control-request-method': 'GET' }))).toMatchObject({
      headers: [['access-control-allow-methods', 'GET, HEAD, POST, DELETE'], expect.anything(), expect.anything()],
    });
    expect(errors).toEqual(['rivulet: a request hook failed', 'rivulet: a request hook gave header fields that cannot be written']);
    expect(composeRequestHooks([], { error: () => undefined }).preflight).toBeUndefined();
  });
});
