/**
 * The native append path of the Node host (node-append.ts): which requests it takes, and that it
 * answers exactly like the app. Every case is sent twice to one server, once with a declared
 * length (the native path) and once chunked (which the native path leaves to the Hono app), and
 * both answers must be the same, byte for byte apart from the offsets and times that differ.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServerMetrics } from '../../engine/metrics.js';
import type { StreamService } from '../../engine/service.js';
import { appendAnswerer, nativeAppend } from './append.js';
import { startNodeServer, type RunningServer } from './serve.js';

describe('which requests the native path takes', () => {
  const logger = { error: () => undefined };
  const answer = appendAnswerer({ service: {} as StreamService, tokens: null, metrics: createServerMetrics(), maxBodyBytes: 1000, logger });
  const take = nativeAppend(answer, logger);
  // The predicate is decided before any await: a request it refuses is never touched.
  const probe = (method: string, url: string, headers: Record<string, string>): boolean => {
    const incoming = { method, url, headers: { host: '127.0.0.1:1', ...headers }, on: () => incoming, once: () => incoming };
    const outgoing = { destroyed: true, destroy: () => undefined };
    return take(incoming as unknown as IncomingMessage, outgoing as unknown as ServerResponse);
  };
  const plain = { 'content-type': 'application/json', 'content-length': '2' };

  it('takes a POST to a stream path with a declared length', () => {
    expect(probe('POST', '/v1/streams/a/b', plain)).toBe(true);
    expect(probe('POST', '/v1/streams/', plain)).toBe(true);
    expect(probe('POST', '/v1/streams/a%20b/c', plain)).toBe(true);
  });

  it('leaves everything else to the app', () => {
    expect(probe('GET', '/v1/streams/a', plain)).toBe(false);
    expect(probe('POST', '/v1/streams/a:subscribe', plain)).toBe(false);
    expect(probe('POST', '/v1/streams/a?x=1', plain)).toBe(false);
    expect(probe('POST', '/v1/streams/a\\b', plain)).toBe(false);
    expect(probe('POST', '/v1/streamsx', plain)).toBe(false);
    expect(probe('POST', '/v1/streams/a', { 'content-type': 'application/json' })).toBe(false);
    expect(probe('POST', '/v1/streams/a', { ...plain, 'transfer-encoding': 'chunked' })).toBe(false);
    expect(probe('POST', '/v1/streams/a', { ...plain, host: 'a b' })).toBe(false);
  });
});

describe('the native path answers like the app', () => {
  let server: RunningServer;
  let dir: string;
  const TOKEN = 'tok-0123456789abcdef';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rivulet-native-append-'));
    server = await startNodeServer({
      port: 0,
      data: dir,
      tokens: new Map([[TOKEN, 'p1']]),
      maxBodyBytes: 1000,
      logger: { error: () => undefined },
    });
  });

  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function post(path: string, body: string, headers: Record<string, string>, chunked: boolean): Promise<string> {
    return new Promise((resolve, reject) => {
      const h: Record<string, string> = { ...headers };
      if (chunked) h['transfer-encoding'] = 'chunked';
      else h['content-length'] = String(Buffer.byteLength(body));
      const req = httpRequest({ host: '127.0.0.1', port: server.port, method: 'POST', path, headers: h }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () =>
          resolve(
            `${res.statusCode} ${res.headers['content-type']} ${text.replace(/"(createdAt|offset)":("[^"]*"|\d+)/g, '"$1":_')}`,
          ),
        );
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  const json = { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` };
  const cases: Array<[string, string, string, Record<string, string>]> = [
    ['one event', '/v1/streams/a/b', '{"type":"t/x","payload":{"a":1}}', json],
    ['a batch with an idempotency key', '/v1/streams/a/b', '[{"type":"t/x"},{"type":"t/y","idempotencyKey":"k1"}]', json],
    ['malformed JSON', '/v1/streams/a/b', '{"type":"t/x"', json],
    ['an empty body', '/v1/streams/a/b', '', json],
    ['an unknown field', '/v1/streams/a/b', '{"nope":1}', json],
    ['an empty batch', '/v1/streams/a/b', '[]', json],
    ['a number too large', '/v1/streams/a/b', '{"type":"t/x","payload":1e999}', json],
    ['not JSON', '/v1/streams/a/b', '{"type":"t/x"}', { ...json, 'content-type': 'text/plain' }],
    ['no token', '/v1/streams/a/b', '{"type":"t/x"}', { 'content-type': 'application/json' }],
    ['another project', '/v1/streams/a/b', '{"type":"t/x"}', { ...json, 'x-project-id': 'p2' }],
    ['a body over the limit', '/v1/streams/a/b', `{"type":"t/x","payload":"${'x'.repeat(2000)}"}`, json],
    ['an encoded slash', '/v1/streams/a/%2F', '{"type":"t/x"}', json],
    ['an empty segment', '/v1/streams/a//b', '{"type":"t/x"}', json],
    ['a dot segment', '/v1/streams/a/./b', '{"type":"t/x"}', json],
  ];

  it.each(cases)('%s', async (_name, path, body, headers) => {
    const native = await post(path, body, headers, false);
    const app = await post(path, body, headers, true);
    expect(native).toBe(app);
  });

  it('counts its requests under the same route label as the app', () => {
    const series = [...server.metrics.httpDuration.series.keys()];
    expect(series.some((key) => key === 'method="POST",route="/v1/streams/{path}",status="200"')).toBe(true);
  });
});
