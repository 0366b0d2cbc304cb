/**
 * End-to-end over real HTTP: path canonicalisation (protocol §2.3, §2.4) and the stream listing
 * (§6.1) `GET /v1/streams?prefix=` with its paging. Paths the WHATWG URL parser would rewrite
 * ("..", ".", "%2E") are sent raw with node:http so that the server sees them as written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListResponse } from '@rivulet/contract';
import { expectError, rawRequest, type Api, type ApiResponse } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const EMPTY = { streamId: null, streamMaxOffset: 0, events: [] };

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer();
  api = server.api;
});

afterAll(async () => {
  await server?.close();
});

const raw = (method: string, rawPath: string, body?: unknown): Promise<ApiResponse> =>
  rawRequest(server.url, method, rawPath, body === undefined ? {} : { body: JSON.stringify(body) });

async function list(query: string): Promise<ListResponse> {
  const res = await api.request<ListResponse>('GET', `/v1/streams${query}`);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

describe('paths are canonicalised', () => {
  it('dot segments in the URL are resolved by the server: every spelling reaches one stream', async () => {
    const spellings = [
      '/v1/streams/s9/dots/b',
      '/v1/streams/s9/./dots/b',
      '/v1/streams/./s9/dots/b/.',
      '/v1/streams/s9/x/../dots/b',
      '/v1/streams/s9/dots/c/d/../../b',
    ];
    const streamIds = new Set<string>();
    for (const [i, spelling] of spellings.entries()) {
      const res = await raw('POST', spelling, { type: 'x', payload: { i } });
      expect(res.status, `${spelling}: ${res.text}`).toBe(200);
      const [event] = (res.body as { events: { path: string; offset: number }[] }).events;
      expect(event).toMatchObject({ path: '/s9/dots/b', offset: i + 2 });
      const read = await raw('GET', spelling);
      expect(read.status).toBe(200);
      streamIds.add((read.body as { streamId: string }).streamId);
    }
    expect(streamIds.size).toBe(1);
    const read = await api.read('/s9/dots/b');
    expect(read.events.map((e) => e.path)).toEqual(Array(6).fill('/s9/dots/b'));
    expect((await list('?prefix=/s9/x')).streams).toEqual([]);
  });

  it('paths in URLs are percent-decoded segment by segment', async () => {
    const [event] = (
      (await raw('POST', '/v1/streams/s9/hello%20world/caf%C3%A9', { type: 'x' })).body as { events: { path: string }[] }
    ).events;
    expect(event!.path).toBe('/s9/hello world/café');
    // The same stream through the fetch-encoded route and through encoded dot segments.
    expect((await api.read('/s9/hello world/café')).streamMaxOffset).toBe(2);
    const viaDots = await raw('GET', '/v1/streams/s9/hello%20world/%2E/x/%2e%2E/caf%c3%a9');
    expect(viaDots.status, viaDots.text).toBe(200);
    expect((viaDots.body as { streamMaxOffset: number }).streamMaxOffset).toBe(2);
    const viaLetters = await raw('GET', '/v1/streams/%73%39/hello%20world/caf%C3%A9');
    expect((viaLetters.body as { streamMaxOffset: number }).streamMaxOffset).toBe(2);
    // Characters that need no encoding may be sent either way.
    const [plus] = await api.append('/s9/a+b=c&d@e', { type: 'x' });
    expect(plus!.path).toBe('/s9/a+b=c&d@e');
    const same = await raw('GET', '/v1/streams/s9/a%2Bb%3Dc%26d%40e');
    expect((same.body as { streamMaxOffset: number }).streamMaxOffset).toBe(2);
  });

  it('the root stream is /v1/streams/', async () => {
    const [event] = await api.append('/', { type: 'root' });
    expect(event!.path).toBe('/');
    const read = await raw('GET', '/v1/streams/');
    expect((read.body as { events: { path: string }[] }).events.map((e) => e.path)).toEqual(['/', '/']);
    const viaDots = await raw('GET', '/v1/streams/a/..');
    expect(viaDots.body).toEqual(read.body);
    const state = await api.state('/');
    expect(state.core).toMatchObject({ path: '/', eventCount: 2 });
  });

  it('".." that escapes the root is INVALID_INPUT, for every method, and creates nothing', async () => {
    const escapes = [
      '/v1/streams/a/../../x',
      '/v1/streams/..',
      '/v1/streams/../x',
      '/v1/streams/a/b/../../../x',
      '/v1/streams/a/%2E%2E/%2e%2e/x',
    ];
    for (const path of escapes) {
      const shown = path.slice('/v1/streams'.length);
      const message = `stream path "${shown}" uses ".." to escape the root`;
      expectError(await raw('POST', path, { type: 'x' }), 'INVALID_INPUT', message);
      expectError(await raw('GET', path), 'INVALID_INPUT', message);
      expectError(await raw('GET', `${path}?live=sse`), 'INVALID_INPUT', message);
      expectError(await raw('GET', `${path}:state`), 'INVALID_INPUT', message);
      expectError(await raw('DELETE', path), 'INVALID_INPUT', message);
    }
    expect((await list('?prefix=/x')).streams).toEqual([]);
    expect(await api.read('/x')).toEqual(EMPTY);
    expectError(await api.request('GET', '/v1/streams?prefix=/a/../..'), 'INVALID_INPUT', 'uses ".." to escape the root');
  });

  it('"?", "#", "\\" and ":" (and control characters) in a path are INVALID_INPUT', async () => {
    const message = 'contains a character that paths may not use (?, #, \\, : or a control character)';
    const bad = [
      '/s9/a%3Fb',
      '/s9/a%23b',
      '/s9/a%5Cb',
      '/s9/a%3Ab',
      '/s9/a:b/c',
      '/s9/%3F',
      '/s9/a%00b',
      '/s9/a%0Ab',
      '/s9/a%7F',
    ];
    for (const path of bad) {
      expectError(await raw('POST', `/v1/streams${path}`, { type: 'x' }), 'INVALID_INPUT', message);
      expectError(await raw('GET', `/v1/streams${path}`), 'INVALID_INPUT', message);
    }
    // Through fetch too: the encoded characters survive the WHATWG URL parser.
    expectError(await api.post('/s9/a?b', { type: 'x' }), 'INVALID_INPUT', message);
    expectError(await api.post('/s9/a#b', { type: 'x' }), 'INVALID_INPUT', message);
    expectError(await api.post('/s9/a\\b', { type: 'x' }), 'INVALID_INPUT', message);
    expectError(await api.post('/s9/a:b/c', { type: 'x' }), 'INVALID_INPUT', message);
    // ":" after the last segment selects a method instead.
    expectError(await raw('POST', '/v1/streams/s9/a:b', { type: 'x' }), 'NOT_FOUND', 'unknown stream method ":b"');
    expect((await list('?prefix=/s9/a')).streams).toEqual([]);
  });

  // An encoded "/" separates segments (encoded-slash.test.ts).
  it('an empty segment and bad percent-encoding are INVALID_INPUT', async () => {
    expectError(await raw('POST', '/v1/streams/s9/a//b', { type: 'x' }), 'INVALID_INPUT', 'stream path "/s9/a//b" has an empty segment');
    expectError(await raw('POST', '/v1/streams/s9/a/', { type: 'x' }), 'INVALID_INPUT', 'stream path "/s9/a/" has an empty segment');
    expectError(await raw('POST', '/v1/streams/s9/%E0%A4%A', { type: 'x' }), 'INVALID_INPUT', 'stream path segment "%E0%A4%A" is not valid percent-encoding');
    expectError(await raw('POST', '/v1/streams/s9/%', { type: 'x' }), 'INVALID_INPUT', 'is not valid percent-encoding');
    expect((await list('?prefix=/s9/a')).streams).toEqual([]);
  });

  it('a path of 1024 characters is accepted, 1025 is INVALID_INPUT', async () => {
    const longest = `/${'p'.repeat(1023)}`;
    const [event] = await api.append(longest, { type: 'x' });
    expect(event!.path).toBe(longest);
    expectError(await api.post(`/${'p'.repeat(1024)}`, { type: 'x' }), 'INVALID_INPUT', 'stream path is longer than 1024 characters');
  });
});

describe('GET /v1/streams listing', () => {
  const paths = ['/l', '/l/a', '/l/a/b', '/l/ab', '/l/a-b', '/l/a.b', '/l/a0', '/l/b', '/lx'];

  beforeAll(async () => {
    for (const path of paths) await api.append(path, { type: 'x' });
    await api.append('/l/a', [{ type: 'y' }, { type: 'z', ephemeral: true }]);
  });

  it('lists streams below a prefix segment-wise: /l/a matches /l/a and /l/a/b, not /l/ab', async () => {
    const { streams, nextAfter } = await list('?prefix=/l/a');
    expect(streams.map((s) => s.path)).toEqual(['/l/a', '/l/a/b']);
    expect(nextAfter).toBeUndefined();
    const read = await api.read('/l/a');
    expect(streams[0]).toEqual({
      path: '/l/a',
      streamId: read.streamId,
      createdAt: read.events[0]!.createdAt,
      maxOffset: 4,
    });
    // Plain string order of the canonical paths ("-" and "." sort before "/").
    expect((await list('?prefix=/l')).streams.map((s) => s.path)).toEqual([
      '/l',
      '/l/a',
      '/l/a-b',
      '/l/a.b',
      '/l/a/b',
      '/l/a0',
      '/l/ab',
      '/l/b',
    ]);
    expect((await list('?prefix=/l/a/b')).streams.map((s) => s.path)).toEqual(['/l/a/b']);
    expect((await list('?prefix=/l/nothing')).streams).toEqual([]);
  });

  it('the prefix is canonicalised like a path', async () => {
    const expected = ['/l/a', '/l/a/b'];
    for (const prefix of ['l/a', ' /l/./a ', '/l/b/../a', '/l/a/b/..']) {
      expect((await list(`?prefix=${encodeURIComponent(prefix)}`)).streams.map((s) => s.path)).toEqual(expected);
    }
    expectError(await api.request('GET', '/v1/streams?prefix=%2Fl%2Fa%3Fb'), 'INVALID_INPUT', 'contains a character');
    expectError(await api.request('GET', '/v1/streams?prefix='), 'INVALID_INPUT', 'prefix');
  });

  it('without a prefix (or with "/") every stream is listed in path order', async () => {
    const all = (await list('')).streams.map((s) => s.path);
    expect(all).toEqual([...all].sort());
    for (const path of paths) expect(all).toContain(path);
    expect((await list('?prefix=/')).streams.map((s) => s.path)).toEqual(all);
  });

  it('pages with limit / after / nextAfter', async () => {
    const expected = (await list('?prefix=/l')).streams;
    expect(expected).toHaveLength(8);
    const seen: string[] = [];
    let after: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await list(`?prefix=/l&limit=3${after === undefined ? '' : `&after=${encodeURIComponent(after)}`}`);
      pages++;
      expect(page.streams.length).toBeLessThanOrEqual(3);
      seen.push(...page.streams.map((s) => s.path));
      if (page.nextAfter === undefined) break;
      expect(page.nextAfter).toBe(page.streams[page.streams.length - 1]!.path);
      after = page.nextAfter;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(expected.map((s) => s.path));

    // A page that holds exactly the rest has no nextAfter.
    const whole = await list('?prefix=/l&limit=8');
    expect(whole.streams).toEqual(expected);
    expect(whole.nextAfter).toBeUndefined();
    const partial = await list('?prefix=/l&limit=7');
    expect(partial.nextAfter).toBe('/l/ab');
    const rest = await list('?prefix=/l&limit=7&after=/l/ab');
    expect(rest.streams.map((s) => s.path)).toEqual(['/l/b']);
    expect(rest.nextAfter).toBeUndefined();
    // after is exclusive and need not name an existing stream.
    expect((await list('?prefix=/l&after=/l/a.a')).streams.map((s) => s.path)).toEqual([
      '/l/a.b',
      '/l/a/b',
      '/l/a0',
      '/l/ab',
      '/l/b',
    ]);

    expectError(await api.request('GET', '/v1/streams?limit=0'), 'INVALID_INPUT', 'query.limit: limit must be at least 1');
    expectError(await api.request('GET', '/v1/streams?limit=10001'), 'INVALID_INPUT', 'limit must be at most 10000');
    expectError(await api.request('GET', '/v1/streams?limit=x'), 'INVALID_INPUT', 'limit must be a non-negative integer');
  });

  it('a destroyed stream is not listed', async () => {
    await api.append('/ld/gone', { type: 'x' });
    await api.append('/ld/kept', { type: 'x' });
    await api.destroy('/ld/gone');
    expect((await list('?prefix=/ld')).streams.map((s) => s.path)).toEqual(['/ld/kept']);
  });
});
