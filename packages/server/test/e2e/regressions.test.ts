/**
 * Regression tests for bugs the end-to-end suite found: each test names what it expects and why.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, rawRequest, streamRoute, type Api } from '../helpers/http.js';
import { TEST_HOST, startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer();
  api = server.api;
});

afterAll(async () => {
  await server?.close();
});

describe('regressions', () => {
  // Protocol §2.3 trims surrounding whitespace of the whole path (`" a/./b "` → `/a/b`), also when
  // the whitespace arrives percent-encoded.
  it('a path whose decoded form has surrounding whitespace is trimmed (" a/./b " → /a/b)', async () => {
    const res = await rawRequest(server.url, 'POST', '/v1/streams/%20s9ws/./b%20', { body: JSON.stringify({ type: 'x' }) });
    expect(res.status, res.text).toBe(200);
    expect((res.body as { events: { path: string }[] }).events[0]!.path).toBe('/s9ws/b');
    const viaFetch = await api.request('POST', '/v1/streams/%20s9ws/b%20', { json: { type: 'y' } });
    expect((viaFetch.body as { events: { path: string; offset: number }[] }).events[0]).toMatchObject({ path: '/s9ws/b', offset: 3 });
  });

  // Protocol §1.3: every failure answers {"error": {code, message}}, also a raw "\" in the request
  // path, which the Node adapter refuses before the app runs.
  // The Workers runtime normalises the URL (a "\" becomes "/") before the Worker sees it (docs/cloudflare.md §4.1).
  it.skipIf(TEST_HOST === 'worker')('a raw backslash in the request path is INVALID_INPUT with the JSON error shape', async () => {
    for (const method of ['GET', 'POST']) {
      const res = await rawRequest(server.url, method, '/v1/streams/s9/a\\b', method === 'POST' ? { body: '{"type":"x"}' } : {});
      expectError(res, 'INVALID_INPUT', 'Backslash in request path');
    }
  });

  // Protocol §7 / contract validation.ts: a schema failure names the offending field, also inside
  // the append body's union (one event | array of events).
  it('append validation messages name the offending field', async () => {
    const path = '/pending/messages';
    const cases: [unknown, string][] = [
      [{ payload: {} }, 'type'],
      [{ type: 'x', ephemeral: false }, 'ephemeral'],
      [{ type: 'x', payload: [1] }, 'payload'],
      [{ type: 'x', metadata: 'm' }, 'metadata'],
      [{ type: 'x', offset: 1.5 }, 'offset'],
      [{ type: 'x', offset: '3' }, 'offset'],
      [[{ type: 'x' }, { type: 'x', ephemeral: false }], '[1].ephemeral'],
      [Array.from({ length: 10_001 }, () => ({ type: 'x' })), '10000'],
      [5, 'object'],
      [null, 'object'],
    ];
    for (const [body, mention] of cases) {
      const res = await api.request('POST', streamRoute(path), { json: body });
      const error = expectError(res, 'INVALID_INPUT', mention);
      expect(error.message).not.toBe('Invalid input');
    }
  });

  // Payload and metadata round-trip (protocol §3.2), including a key named "__proto__" (a rebuilt
  // record would turn it into a prototype assignment and drop it).
  it('a payload key named "__proto__" round-trips (or is rejected), never silently dropped', async () => {
    const path = '/pending/proto';
    const res = await api.request('POST', streamRoute(path), {
      body: '{"type":"x","payload":{"__proto__":{"kept":1},"a":1}}',
      headers: { 'content-type': 'application/json' },
    });
    if (res.status === 200) {
      const [event] = (res.body as { events: { payload: Record<string, unknown> }[] }).events;
      expect(Object.keys(event!.payload).sort()).toEqual(['__proto__', 'a']);
      const read = await api.request('GET', streamRoute(path));
      expect(read.text).toContain('"__proto__":{"kept":1}');
    } else {
      expectError(res, 'INVALID_INPUT', '__proto__');
    }
  });

  // A number beyond a double parses as Infinity and would be stored as null: refused instead.
  it('a number too large for a double is INVALID_INPUT, not stored as null', async () => {
    for (const text of ['{"type":"x","payload":{"n":1e400}}', `{"type":"x","payload":{"n":${'9'.repeat(400)}}}`]) {
      const res = await api.request('POST', streamRoute('/pending/huge'), {
        body: text,
        headers: { 'content-type': 'application/json' },
      });
      expectError(res, 'INVALID_INPUT', 'too large');
    }
    const ok = await api.request('POST', streamRoute('/pending/huge'), {
      body: '{"type":"x","payload":{"n":1e300,"s":"1e999 in a string"}}',
      headers: { 'content-type': 'application/json' },
    });
    expect(ok.status, ok.text).toBe(200);
  });
});
