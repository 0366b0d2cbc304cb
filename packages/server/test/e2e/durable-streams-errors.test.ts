/**
 * End-to-end over real HTTP: every refusal of the Durable Streams routes, with its status and its
 * message (docs/durable-streams.md). Each case sets up what it needs on a stream of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

const ALPHA = 'alpha-token-000000000000';
const ZERO = '0000000000000000_0000000000000000';

let server: TestServer;
let n = 0;

beforeAll(async () => {
  server = await startTestServer({ tokens: new Map([[ALPHA, 'alpha']]), maxBodyBytes: 65_536 });
});

afterAll(async () => {
  await server?.close();
});

type Init = RequestInit & { token?: string | null };

function ds(path: string, init: Init = {}): Promise<Response> {
  const { token = ALPHA, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (token !== null) headers.set('authorization', `Bearer ${token}`);
  return fetch(`${server.url}/v1/stream/${path}`, { ...rest, headers });
}

const text = { 'content-type': 'text/plain' };
const json = { 'content-type': 'application/json' };
const put = (path: string, headers: Record<string, string> = text, body?: string) => ds(path, { method: 'PUT', headers, ...(body !== undefined ? { body } : {}) });
const post = (path: string, headers: Record<string, string>, body?: string) => ds(path, { method: 'POST', headers, ...(body !== undefined ? { body } : {}) });
const producer = (epoch: number, seq: number, id = 'p') => ({ 'producer-id': id, 'producer-epoch': String(epoch), 'producer-seq': String(seq) });

interface Case {
  what: string;
  /** Runs the request on a fresh stream name (`s`), after any setup. */
  run(s: string): Promise<Response>;
  status: number;
  message: string | RegExp;
}

/** A text stream `s` with one message. */
async function made(s: string, headers: Record<string, string> = text, body = 'x'): Promise<void> {
  expect((await put(s, headers, body)).status).toBe(201);
}

/** `s` deleted while its fork `s-fork` still reads it. */
async function softDeleted(s: string): Promise<void> {
  await made(s);
  expect((await put(`${s}-fork`, { 'stream-forked-from': `/v1/stream/${s}` })).status).toBe(201);
  expect((await ds(s, { method: 'DELETE' })).status).toBe(204);
}

const cases: Case[] = [
  { what: 'no token', run: (s) => ds(s, { token: null }), status: 401, message: 'missing token: send Authorization: Bearer <token>' },
  { what: 'another project', run: (s) => ds(s, { headers: { 'x-project-id': 'beta' } }), status: 403, message: /belongs to project "alpha"/ },
  { what: 'no name', run: () => ds(''), status: 400, message: 'a Durable Streams stream needs a name after /v1/stream/' },
  { what: 'a name Rivulet refuses', run: () => ds('a:b'), status: 400, message: /path/ },
  { what: 'another method', run: (s) => ds(s, { method: 'PATCH' }), status: 405, message: 'PATCH is not a Durable Streams method' },
  { what: 'TTL and expiry', run: (s) => put(s, { ...text, 'stream-ttl': '5', 'stream-expires-at': '2030-01-01T00:00:00Z' }), status: 400, message: 'Stream-TTL and Stream-Expires-At cannot both be given' },
  { what: 'malformed TTL', run: (s) => put(s, { ...text, 'stream-ttl': '05' }), status: 400, message: 'Stream-TTL must be a whole number of seconds' },
  { what: 'malformed expiry', run: (s) => put(s, { ...text, 'stream-expires-at': 'soon' }), status: 400, message: 'Stream-Expires-At must be a timestamp such as 2030-01-01T00:00:00Z' },
  { what: 'sub-offset without a source', run: (s) => put(s, { ...text, 'stream-fork-sub-offset': '0' }), status: 400, message: 'Stream-Fork-Sub-Offset needs Stream-Forked-From' },
  { what: 'invalid JSON on create', run: (s) => put(s, json, '{'), status: 400, message: 'invalid JSON: the body of a JSON stream must be one JSON value' },
  {
    what: 'other settings',
    run: async (s) => (await made(s), put(s, json)),
    status: 409,
    message: 'the stream exists with other settings',
  },
  { what: 'create over a deleted source', run: async (s) => (await softDeleted(s), put(s)), status: 409, message: 'a deleted stream that forks still read cannot be created again' },
  { what: 'bad source name', run: (s) => put(s, { 'stream-forked-from': '/v1/stream/a:b' }), status: 400, message: /^Stream-Forked-From: / },
  { what: 'malformed fork offset', run: async (s) => (await made(s), put(`${s}-f`, { 'stream-forked-from': s, 'stream-fork-offset': '12' })), status: 400, message: 'malformed Stream-Fork-Offset: use an offset this server answered' },
  { what: 'malformed sub-offset', run: async (s) => (await made(s), put(`${s}-f`, { 'stream-forked-from': s, 'stream-fork-sub-offset': '+1' })), status: 400, message: 'Stream-Fork-Sub-Offset must be a non-negative integer' },
  { what: 'sub-offset without fork offset', run: async (s) => (await made(s), put(`${s}-f`, { 'stream-forked-from': s, 'stream-fork-sub-offset': '1' })), status: 400, message: 'Stream-Fork-Sub-Offset needs Stream-Fork-Offset' },
  { what: 'missing source', run: (s) => put(`${s}-f`, { 'stream-forked-from': s }), status: 404, message: 'the source stream does not exist' },
  { what: 'deleted source', run: async (s) => (await softDeleted(s), put(`${s}-g`, { 'stream-forked-from': s })), status: 409, message: 'the source stream was deleted (its forks keep it readable, but it cannot be forked)' },
  { what: 'fork with another content type', run: async (s) => (await made(s), put(`${s}-f`, { ...json, 'stream-forked-from': s })), status: 409, message: "a fork has its source's content type text/plain" },
  { what: 'fork offset past the end', run: async (s) => (await made(s), put(`${s}-f`, { 'stream-forked-from': s, 'stream-fork-offset': '0000000000000099_0000000000000000' })), status: 400, message: 'Stream-Fork-Offset is beyond the end of the source stream' },
  { what: 'JSON sub-offset past the messages', run: async (s) => (await made(s, json, '[1,2]'), put(`${s}-f`, { 'stream-forked-from': s, 'stream-fork-offset': ZERO, 'stream-fork-sub-offset': '3' })), status: 400, message: 'Stream-Fork-Sub-Offset is past the messages of the source' },
  { what: 'byte sub-offset on an empty source', run: async (s) => (await made(s, text, ''), put(`${s}-f`, { 'stream-forked-from': s, 'stream-fork-offset': ZERO, 'stream-fork-sub-offset': '1' })), status: 400, message: 'Stream-Fork-Sub-Offset needs a message after Stream-Fork-Offset' },
  { what: 'byte sub-offset past the message', run: async (s) => (await made(s, text, 'ab'), put(`${s}-f`, { 'stream-forked-from': s, 'stream-fork-offset': ZERO, 'stream-fork-sub-offset': '3' })), status: 400, message: 'Stream-Fork-Sub-Offset is past the end of the message' },
  { what: 'invalid JSON in a fork body', run: async (s) => (await made(s, json, '1'), put(`${s}-f`, { ...json, 'stream-forked-from': s }, '{')), status: 400, message: 'invalid JSON: the body of a JSON stream must be one JSON value' },
  { what: 'fork over a fork with other settings', run: async (s) => (await made(s), await made(`${s}-f`), put(`${s}-f`, { 'stream-forked-from': s })), status: 409, message: 'the stream exists with other settings' },
  { what: 'fork over a deleted source', run: async (s) => (await softDeleted(s), await made(`${s}-o`), put(s, { 'stream-forked-from': `${s}-o` })), status: 409, message: 'a deleted stream that forks still read cannot be created again' },
  { what: 'producer fields apart', run: (s) => post(s, { ...text, 'producer-id': 'p' }, 'x'), status: 400, message: 'Producer-Id, Producer-Epoch and Producer-Seq must be given together' },
  { what: 'empty producer id', run: (s) => post(s, { ...text, ...producer(0, 0, '') }, 'x'), status: 400, message: 'Producer-Id must not be empty' },
  { what: 'malformed epoch', run: (s) => post(s, { ...text, 'producer-id': 'p', 'producer-epoch': '1e3', 'producer-seq': '0' }, 'x'), status: 400, message: 'Producer-Epoch must be a non-negative integer' },
  { what: 'malformed seq', run: (s) => post(s, { ...text, 'producer-id': 'p', 'producer-epoch': '0', 'producer-seq': '-1' }, 'x'), status: 400, message: 'Producer-Seq must be a non-negative integer' },
  { what: 'empty append', run: (s) => post(s, text), status: 400, message: 'an append needs a body (or Stream-Closed: true to close)' },
  { what: 'append without content type', run: (s) => ds(s, { method: 'POST', body: new Uint8Array([1]) }), status: 400, message: 'an append needs a Content-Type' },
  { what: 'append to nothing', run: (s) => post(s, text, 'x'), status: 404, message: 'stream not found' },
  { what: 'append to a deleted source', run: async (s) => (await softDeleted(s), post(s, text, 'x')), status: 410, message: 'the stream was deleted; only its forks still read it' },
  { what: 'append to a closed stream', run: async (s) => (await made(s), await post(s, { 'stream-closed': 'true' }), post(s, text, 'x')), status: 409, message: 'the stream is closed' },
  { what: 'another content type', run: async (s) => (await made(s), post(s, json, '1')), status: 409, message: "content type application/json does not match the stream's text/plain" },
  { what: 'stale epoch', run: async (s) => (await made(s), await post(s, { ...text, ...producer(2, 0) }, 'a'), post(s, { ...text, ...producer(1, 0) }, 'b')), status: 403, message: 'stale producer epoch' },
  { what: 'new epoch not at 0', run: async (s) => (await made(s), await post(s, { ...text, ...producer(0, 0) }, 'a'), post(s, { ...text, ...producer(1, 1) }, 'b')), status: 400, message: 'a new producer epoch must start at sequence 0' },
  { what: 'sequence gap', run: async (s) => (await made(s), post(s, { ...text, ...producer(0, 2) }, 'a')), status: 409, message: 'producer sequence gap' },
  { what: 'Stream-Seq not after', run: async (s) => (await made(s), await post(s, { ...text, 'stream-seq': 'b' }, 'a'), post(s, { ...text, 'stream-seq': 'a' }, 'b')), status: 409, message: 'Stream-Seq a is not after b' },
  { what: 'invalid JSON append', run: async (s) => (await made(s, json, '1'), post(s, json, 'nope')), status: 400, message: 'invalid JSON: the body of a JSON stream must be one JSON value' },
  { what: 'empty JSON array append', run: async (s) => (await made(s, json, '1'), post(s, json, '[]')), status: 400, message: 'empty arrays are not allowed: an append needs at least one message' },
  { what: 'body over the limit', run: async (s) => (await made(s), post(s, text, 'x'.repeat(70_000))), status: 413, message: 'request body is larger than 65536 bytes' },
  { what: 'repeated offset', run: async (s) => (await made(s), ds(`${s}?offset=-1&offset=-1`)), status: 400, message: 'give one offset parameter' },
  { what: 'malformed offset', run: async (s) => (await made(s), ds(`${s}?offset=7`)), status: 400, message: 'malformed offset "7": use -1, now, or an offset this server answered' },
  { what: 'long-poll without offset', run: async (s) => (await made(s), ds(`${s}?live=long-poll`)), status: 400, message: 'long-poll needs an offset' },
  { what: 'SSE without offset', run: async (s) => (await made(s), ds(`${s}?live=sse`)), status: 400, message: 'SSE needs an offset' },
  { what: 'read nothing', run: (s) => ds(s), status: 404, message: 'stream not found' },
  { what: 'read a deleted source', run: async (s) => (await softDeleted(s), ds(s)), status: 410, message: 'the stream was deleted; only its forks still read it' },
  { what: 'SSE on a deleted source', run: async (s) => (await softDeleted(s), ds(`${s}?offset=-1&live=sse`)), status: 410, message: 'the stream was deleted; only its forks still read it' },
  { what: 'SSE on nothing', run: (s) => ds(`${s}?offset=-1&live=sse`), status: 404, message: 'stream not found' },
  { what: 'delete nothing', run: (s) => ds(s, { method: 'DELETE' }), status: 404, message: 'stream not found' },
  { what: 'delete a deleted source', run: async (s) => (await softDeleted(s), ds(s, { method: 'DELETE' })), status: 410, message: 'the stream was deleted; only its forks still read it' },
];

describe('Durable Streams refusals (docs/durable-streams.md)', () => {
  for (const c of cases) {
    it(`${c.what}: ${c.status}`, async () => {
      const res = await c.run(`err-${process.pid}-${++n}`);
      expect(res.status).toBe(c.status);
      const body = await res.text();
      if (typeof c.message === 'string') expect(body).toBe(c.message);
      else expect(body).toMatch(c.message);
      // No CORS without --cors-origin (durable-streams-cors.test.ts); the security fields always.
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    });
  }

  it('answers HEAD of nothing and of a deleted source without a body', async () => {
    const s = `err-head-${process.pid}`;
    expect((await ds(s, { method: 'HEAD' })).status).toBe(404);
    await softDeleted(s);
    expect((await ds(s, { method: 'HEAD' })).status).toBe(410);
  });
});
