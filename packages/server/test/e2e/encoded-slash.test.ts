/**
 * End-to-end: an encoded slash (`%2F`) in a stream URL separates segments (protocol §2.4), as
 * OpenAPI generators send `{path}`; and it cannot be used to reach a stream or a project other
 * than the one the same path with plain slashes names. Raw node:http requests so the server sees
 * the bytes as written; through every entrance (the connection front answers plain appends).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, rawRequest, type ApiResponse } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const ADMIN = 'admin-token-0123456789';
const SHOP = 'shop-token-0123456789a';
const RIVAL = 'rival-token-0123456789';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    tokens: new Map([
      [ADMIN, '*'],
      [SHOP, 'shop'],
      [RIVAL, 'rival'],
    ]),
  });
});

afterAll(async () => {
  await server?.close();
});

function raw(token: string, method: string, rawPath: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return rawRequest(server.url, method, rawPath, {
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    headers: { authorization: `Bearer ${token}`, ...headers },
  });
}

const offsets = (res: ApiResponse) => (res.body as { events: { path: string; offset: number }[] }).events.map((e) => `${e.path}@${e.offset}`);

describe('%2F separates segments', () => {
  it('shop%2Forders is /shop/orders for append, read, :state, SSE and DELETE', async () => {
    expect(offsets(await raw(SHOP, 'POST', '/v1/streams/e1%2Forders', { type: 'x' }))).toEqual(['/e1/orders@2']);
    expect(offsets(await raw(SHOP, 'POST', '/v1/streams/e1%2forders', { type: 'x' }))).toEqual(['/e1/orders@3']);
    expect(offsets(await raw(SHOP, 'POST', '/v1/streams/e1/orders', { type: 'x' }))).toEqual(['/e1/orders@4']);
    const read = await raw(SHOP, 'GET', '/v1/streams/e1%2Forders?afterOffset=1');
    expect(offsets(read)).toEqual(['/e1/orders@2', '/e1/orders@3', '/e1/orders@4']);
    const state = await raw(SHOP, 'GET', '/v1/streams/e1%2Forders:state');
    expect(state.status, state.text).toBe(200);
    expect((state.body as { core: { path: string; eventCount: number } }).core).toMatchObject({ path: '/e1/orders', eventCount: 4 });
    // A POST method after an encoded slash is the method, not an append.
    const waited = await raw(SHOP, 'POST', '/v1/streams/e1%2Forders:waitForEvent', { afterOffset: 3, timeoutMs: 1000 });
    expect(waited.status, waited.text).toBe(200);
    expect((waited.body as { event: { path: string; offset: number } }).event).toMatchObject({ path: '/e1/orders', offset: 4 });
    // Mixed separators, and a deeper path.
    expect(offsets(await raw(SHOP, 'POST', '/v1/streams/e1/a%2Fb/c%2Fd', { type: 'x' }))).toEqual(['/e1/a/b/c/d@2']);
    expect(offsets(await raw(SHOP, 'GET', '/v1/streams/e1%2Fa%2Fb%2Fc%2Fd?afterOffset=1'))).toEqual(['/e1/a/b/c/d@2']);
    const destroyed = await raw(SHOP, 'DELETE', '/v1/streams/e1%2Fa/b%2Fc%2Fd');
    expect(destroyed.body).toEqual({ destroyed: true });
    expect((await raw(SHOP, 'GET', '/v1/streams/e1/a/b/c/d')).body).toMatchObject({ streamId: null });
  });

  it('%252F is the characters "%2F" inside one segment, never a second decoding', async () => {
    expect(offsets(await raw(SHOP, 'POST', '/v1/streams/e2/a%252Fb', { type: 'x' }))).toEqual(['/e2/a%2Fb@2']);
    expect((await raw(SHOP, 'GET', '/v1/streams/e2/a/b')).body).toMatchObject({ streamId: null, streamMaxOffset: 0 });
    expect((await raw(SHOP, 'GET', '/v1/streams/e2%2Fa%2Fb')).body).toMatchObject({ streamId: null, streamMaxOffset: 0 });
  });

  it('a ":" before an encoded slash is inside a segment (INVALID_INPUT), not a method', async () => {
    const message = 'contains a character that paths may not use';
    expectError(await raw(SHOP, 'POST', '/v1/streams/e3/a:state%2Fb', { type: 'x' }), 'INVALID_INPUT', message);
    expectError(await raw(SHOP, 'GET', '/v1/streams/e3/a:state%2Fb'), 'INVALID_INPUT', message);
    // After the last encoded slash it selects the method, as after a plain one.
    expectError(await raw(SHOP, 'GET', '/v1/streams/e3%2Fa:nope'), 'NOT_FOUND', 'unknown stream method ":nope"');
  });

  it('empty segments made of encoded slashes are refused like plain ones', async () => {
    expectError(await raw(SHOP, 'POST', '/v1/streams/e4%2F%2Fb', { type: 'x' }), 'INVALID_INPUT', 'stream path "/e4//b" has an empty segment');
    expectError(await raw(SHOP, 'POST', '/v1/streams/e4%2F', { type: 'x' }), 'INVALID_INPUT', 'stream path "/e4/" has an empty segment');
    expectError(await raw(SHOP, 'POST', '/v1/streams/%2Fe4', { type: 'x' }), 'INVALID_INPUT', 'stream path "//e4" has an empty segment');
  });
});

describe('%2F cannot smuggle a request elsewhere', () => {
  const smuggles = [
    ['/v1/streams/e5%2F..%2Fother', '/e5%2F..%2Fother'],
    ['/v1/streams/e5/..%2Fother', '/e5/..%2Fother'],
    ['/v1/streams/e5%2F%2E%2E/other', '/e5%2F%2E%2E/other'],
    ['/v1/streams/e5%2F.%2Fother', '/e5%2F.%2Fother'],
    ['/v1/streams/e5%2Fx/../other', '/e5%2Fx/../other'],
    ['/v1/streams/..%2F..%2Frival%2Fother', '/..%2F..%2Frival%2Fother'],
  ] as const;

  it.each(smuggles)('%s: a dot segment beside an encoded slash is INVALID_INPUT for every method', async (path, shown) => {
    const message = `stream path "${shown}" has an encoded "/" (%2F) and a "." or ".." segment: a path that uses %2F may not use dot segments`;
    expectError(await raw(SHOP, 'POST', path, { type: 'x' }), 'INVALID_INPUT', message);
    expectError(await raw(SHOP, 'GET', path), 'INVALID_INPUT', message);
    expectError(await raw(SHOP, 'GET', `${path}:state`), 'INVALID_INPUT', message);
    expectError(await raw(SHOP, 'DELETE', path), 'INVALID_INPUT', message);
  });

  it('nothing was written by the refused requests', async () => {
    for (const path of ['/other', '/e5/other', '/rival/other']) {
      expect((await raw(ADMIN, 'GET', `/v1/streams${path}`, undefined, { 'x-project-id': 'shop' })).body).toMatchObject({ streamId: null });
    }
  });

  it('a project token reaches its own project only, however the path is spelled', async () => {
    expect(offsets(await raw(SHOP, 'POST', '/v1/streams/e6%2Fsecret', { type: 'x' }))).toEqual(['/e6/secret@2']);
    // The rival project reads the same path, in every spelling: its own, empty stream.
    for (const path of ['/v1/streams/e6/secret', '/v1/streams/e6%2Fsecret']) {
      expect((await raw(RIVAL, 'GET', path)).body).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    }
    // Naming the shop project from the rival's token stays FORBIDDEN with an encoded path.
    expectError(await raw(RIVAL, 'GET', '/v1/streams/e6%2Fsecret', undefined, { 'x-project-id': 'shop' }), 'FORBIDDEN', 'shop');
    const viaAdmin = await raw(ADMIN, 'GET', '/v1/streams/e6%2Fsecret?afterOffset=1', undefined, { 'x-project-id': 'shop' });
    expect(offsets(viaAdmin)).toEqual(['/e6/secret@2']);
    // Deployment-wide streams (admin without X-Project-Id) are another namespace again.
    expect((await raw(ADMIN, 'GET', '/v1/streams/e6%2Fsecret')).body).toMatchObject({ streamId: null });
  });
});
