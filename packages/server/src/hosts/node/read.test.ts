/**
 * The native page read of the Node host (append.ts `nativeRead`, http/read-route.ts): which
 * requests it takes, and that it answers exactly like the app. Every case is sent twice to one
 * server, once as is (the native path) and once with a `Content-Length: 0` header (which the native
 * path leaves to the Hono app), and both answers must be the same: status, content type, tag and
 * body, apart from the events' times.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Limits } from '@rivulet/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamService } from '../../engine/service.js';
import { plainReadTarget, readAnswerer } from '../../http/read-route.js';
import { nativeRead } from './append.js';
import { startNodeServer, type RunningServer } from './serve.js';

describe('which requests the native read takes', () => {
  const logger = { error: () => undefined };
  const take = nativeRead(readAnswerer({ service: {} as StreamService, tokens: null, logger }), logger);
  // The predicate is decided before any await: a request it refuses is never touched.
  const probe = (method: string, url: string, headers: Record<string, string> = {}): boolean => {
    const incoming = { method, url, headers: { host: '127.0.0.1:1', ...headers } };
    const outgoing = { destroyed: true, destroy: () => undefined };
    return take(incoming as unknown as IncomingMessage, outgoing as unknown as ServerResponse);
  };

  it('takes a GET of a stream path with at most afterOffset, beforeOffset and limit, as digits in range', () => {
    expect(probe('GET', '/v1/streams/a/b')).toBe(true);
    expect(probe('GET', '/v1/streams/a/b?')).toBe(true);
    expect(probe('GET', '/v1/streams/a/b?afterOffset=0&limit=500')).toBe(true);
    expect(probe('GET', '/v1/streams/a/b?beforeOffset=9&afterOffset=3&limit=1')).toBe(true);
    expect(probe('GET', `/v1/streams/a%20b/c?limit=${Limits.readPageMax}`)).toBe(true);
  });

  it('leaves everything else to the app', () => {
    expect(probe('HEAD', '/v1/streams/a')).toBe(false);
    expect(probe('POST', '/v1/streams/a')).toBe(false);
    expect(probe('GET', '/v1/streams/a:state')).toBe(false);
    expect(probe('GET', '/v1/streams/a\\b')).toBe(false);
    expect(probe('GET', '/v1/streamsx')).toBe(false);
    expect(probe('GET', '/v1/streams/a?eventTypes=t/x')).toBe(false);
    expect(probe('GET', '/v1/streams/a?includeEphemeral=true')).toBe(false);
    expect(probe('GET', '/v1/streams/a?live=sse')).toBe(false);
    expect(probe('GET', '/v1/streams/a?limit=1&limit=2')).toBe(false);
    expect(probe('GET', '/v1/streams/a?limit=0')).toBe(false);
    expect(probe('GET', `/v1/streams/a?limit=${Limits.readPageMax + 1}`)).toBe(false);
    expect(probe('GET', '/v1/streams/a?beforeOffset=0')).toBe(false);
    expect(probe('GET', '/v1/streams/a?afterOffset=-1')).toBe(false);
    expect(probe('GET', '/v1/streams/a?afterOffset=1%30')).toBe(false);
    expect(probe('GET', '/v1/streams/a?afterOffset')).toBe(false);
    expect(probe('GET', '/v1/streams/a?afterOffset=12345678901234567')).toBe(false);
    expect(probe('GET', '/v1/streams/a', { 'content-length': '0' })).toBe(false);
    expect(probe('GET', '/v1/streams/a', { 'transfer-encoding': 'chunked' })).toBe(false);
    expect(probe('GET', '/v1/streams/a', { host: 'a b' })).toBe(false);
  });

  it('reads the query as the schema would: numbers, and nothing it does not name', () => {
    expect(plainReadTarget('/v1/streams/a?afterOffset=007&limit=3')).toEqual({ path: '/v1/streams/a', query: { afterOffset: 7, limit: 3 } });
    expect(plainReadTarget('/v1/streams/a')).toEqual({ path: '/v1/streams/a', query: {} });
    expect(plainReadTarget('/v1/streams/a?=1')).toBeUndefined();
    expect(plainReadTarget('/v1/streams/a?&limit=1')).toBeUndefined();
  });
});

describe('the native read answers like the app', () => {
  let server: RunningServer;
  let dir: string;
  const TOKEN = 'tok-0123456789abcdef';
  const auth = { authorization: `Bearer ${TOKEN}` };
  let fullTag = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rivulet-native-read-'));
    server = await startNodeServer({ port: 0, data: dir, tokens: new Map([[TOKEN, 'p1']]), logger: { error: () => undefined } });
    const events = Array.from({ length: 6 }, (_, i) => ({ type: 't/x', payload: { i, text: 'é😀' } }));
    const r = await fetch(`${server.url}/v1/streams/a/b`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(events) });
    expect(r.status).toBe(200);
    const page = await fetch(`${server.url}/v1/streams/a/b?afterOffset=1&limit=3`, { headers: auth });
    fullTag = page.headers.get('etag') ?? '';
    expect(fullTag).toMatch(/^W\/"/);
  });

  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function get(path: string, headers: Record<string, string>, toApp: boolean): Promise<string> {
    return new Promise((resolve, reject) => {
      const h: Record<string, string> = { ...headers };
      if (toApp) h['content-length'] = '0';
      const req = httpRequest({ host: '127.0.0.1', port: server.port, method: 'GET', path, headers: h }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve(`${res.statusCode} ${res.headers['content-type']} ${res.headers.etag} ${text.replace(/"createdAt":"[^"]*"/g, '"createdAt":_')}`));
      });
      req.on('error', reject);
      req.end();
    });
  }

  const cases: Array<[string, string, () => Record<string, string>]> = [
    ['a full page (tagged)', '/v1/streams/a/b?afterOffset=1&limit=3', () => auth],
    ['the page at the head (no tag)', '/v1/streams/a/b', () => auth],
    ['a closed range (tagged)', '/v1/streams/a/b?afterOffset=2&beforeOffset=5', () => auth],
    ['past the head', '/v1/streams/a/b?afterOffset=100', () => auth],
    ['a stream that does not exist', '/v1/streams/nothing/here', () => auth],
    ['If-None-Match naming the tag: 304', '/v1/streams/a/b?afterOffset=1&limit=3', () => ({ ...auth, 'if-none-match': fullTag })],
    ['If-None-Match naming another tag', '/v1/streams/a/b?afterOffset=1&limit=3', () => ({ ...auth, 'if-none-match': 'W/"other"' })],
    ['no token', '/v1/streams/a/b', () => ({})],
    ['another project', '/v1/streams/a/b', () => ({ ...auth, 'x-project-id': 'p2' })],
    ['an encoded slash', '/v1/streams/a/%2F', () => auth],
    ['an empty segment', '/v1/streams/a//b', () => auth],
    ['a dot segment', '/v1/streams/a/./b', () => auth],
  ];

  it.each(cases)('%s', async (_name, path, headers) => {
    const native = await get(path, headers(), false);
    const app = await get(path, headers(), true);
    expect(native).toBe(app);
  });

  it('counts its requests under the same route label as the app', () => {
    const series = [...server.metrics.httpDuration.series.keys()];
    expect(series.some((key) => key === 'method="GET",route="/v1/streams/{path}",status="200"')).toBe(true);
    expect(series.some((key) => key === 'method="GET",route="/v1/streams/{path}",status="304"')).toBe(true);
  });
});
