/**
 * End-to-end over real HTTP: the Durable Streams routes and the seams with Rivulet's own API
 * (docs/durable-streams.md "One namespace", decision 008). The protocol's own rules are judged by
 * the public suite (durable-streams-conformance.test.ts); this file tests what is Rivulet's:
 * where the messages go, how other events read back, projects, and every refusal's message.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommittedEvent } from '@rivulet/contract';
import { startTestServer, type TestServer } from '../helpers/server.js';

const ALPHA = 'alpha-token-000000000000';
const BETA = 'beta-token-0000000000000';

let server: TestServer;
let n = 0;
const name = (what: string) => `ds-${what}-${process.pid}-${++n}`;

beforeAll(async () => {
  server = await startTestServer({ tokens: new Map([[ALPHA, 'alpha'], [BETA, 'beta']]) });
});

afterAll(async () => {
  await server?.close();
});

function ds(path: string, init: RequestInit & { token?: string } = {}): Promise<Response> {
  const { token = ALPHA, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (token !== '') headers.set('authorization', `Bearer ${token}`);
  return fetch(`${server.url}/v1/stream/${path}`, { ...rest, headers });
}

async function rivuletEvents(path: string, token = ALPHA): Promise<CommittedEvent[]> {
  const res = await fetch(`${server.url}/v1/streams/${path}`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { events: CommittedEvent[] }).events;
}

async function rivuletAppend(path: string, events: unknown): Promise<void> {
  const res = await fetch(`${server.url}/v1/streams/${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ALPHA}`, 'content-type': 'application/json' },
    body: JSON.stringify(events),
  });
  expect(res.status).toBe(200);
}

describe('one namespace (docs/durable-streams.md "One namespace")', () => {
  it('stores messages as Rivulet events of the documented types, byte-exact', async () => {
    const stream = name('bytes');
    expect((await ds(stream, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'héllo' })).status).toBe(201);
    const binary = new Uint8Array([0xef, 0xbb, 0xbf, 0x00, 0xff, 0x0a, 0x80]);
    const bom = new Uint8Array([0xef, 0xbb, 0xbf, 0x41]);
    expect((await ds(stream, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: binary })).status).toBe(204);
    expect((await ds(stream, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: bom })).status).toBe(204);
    const events = await rivuletEvents(stream);
    expect(events.map((e) => e.type)).toEqual([
      'events.iterate.com/stream/created',
      'durable-streams/configured',
      'durable-streams/message',
      'durable-streams/message',
      'durable-streams/message',
    ]);
    expect(events[1]!.payload).toEqual({ contentType: 'text/plain' });
    expect(events[2]!.payload).toEqual({ text: 'héllo' });
    expect(events[3]!.payload).toEqual({ base64: Buffer.from(binary).toString('base64') });
    expect(events[4]!.payload).toEqual({ text: '\ufeffA' });
    const read = await ds(stream);
    expect(new Uint8Array(await read.arrayBuffer())).toEqual(new Uint8Array([...Buffer.from('héllo'), ...binary, ...bom]));
    expect(read.headers.get('stream-next-offset')).toBe('0000000000000005_0000000000000000');
  });

  it('keeps each JSON value as one event and stamps producers in metadata', async () => {
    const stream = name('json');
    await ds(stream, { method: 'PUT', headers: { 'content-type': 'application/json' } });
    const res = await ds(stream, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'producer-id': 'p1', 'producer-epoch': '0', 'producer-seq': '0' },
      body: '[{"a":1},[2],null]',
    });
    expect(res.status).toBe(200);
    const events = (await rivuletEvents(stream)).slice(2);
    expect(events.map((e) => e.payload)).toEqual([{ value: { a: 1 } }, { value: [2] }, { value: null }]);
    expect(events[0]!.metadata).toBeUndefined();
    expect(events[2]!.metadata).toEqual({ durableStreams: { producer: { id: 'p1', epoch: 0, seq: 0 } } });
  });

  it('reads events appended by other means in the documented form, and hides control events', async () => {
    const json = name('other-json');
    const bytes = name('other-bytes');
    await ds(json, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '[1]' });
    await ds(bytes, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'x' });
    await rivuletAppend(json, { type: 'shop.example/order', payload: { id: 7 } });
    await rivuletAppend(bytes, [{ type: 'shop.example/order', payload: { id: 8 } }, { type: 'events.iterate.com/stream/paused', payload: {} }]);
    const jsonRead = (await (await ds(json)).json()) as unknown[];
    expect(jsonRead[0]).toBe(1);
    expect(jsonRead[1]).toMatchObject({ path: `/${json}`, offset: 4, type: 'shop.example/order', payload: { id: 7 } });
    expect(jsonRead).toHaveLength(2);
    const text = await (await ds(bytes)).text();
    const order = (await rivuletEvents(bytes))[3]!;
    expect(text).toBe(`x${JSON.stringify(order)}\n`);
    // The pause is a Rivulet control event: it takes an offset but is no message.
    const head = await ds(bytes, { method: 'HEAD' });
    expect(head.headers.get('stream-next-offset')).toBe('0000000000000005_0000000000000000');
  });

  it('treats a stream made through the Rivulet API as a JSON stream', async () => {
    const stream = name('rivulet-made');
    await rivuletAppend(stream, { type: 'shop.example/order', payload: { id: 1 } });
    const head = await ds(stream, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('application/json');
    expect((await ds(stream, { method: 'PUT', headers: { 'content-type': 'application/json' } })).status).toBe(200);
    expect((await ds(stream, { method: 'PUT', headers: { 'content-type': 'text/plain' } })).status).toBe(409);
    const body = (await (await ds(stream)).json()) as { type: string }[];
    expect(body.map((e) => e.type)).toEqual(['shop.example/order']);
  });

  it('lets the Rivulet API append to a closed stream, and reads that back after the closure', async () => {
    const stream = name('closed');
    await ds(stream, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '[1]' });
    expect((await ds(stream, { method: 'POST', headers: { 'stream-closed': 'true' } })).status).toBe(204);
    await rivuletAppend(stream, { type: 'shop.example/late', payload: {} });
    const read = await ds(stream);
    expect(((await read.json()) as unknown[]).length).toBe(2);
    expect(read.headers.get('stream-closed')).toBe('true');
    expect((await ds(stream, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '2' })).status).toBe(409);
  });

  it('scopes names to the caller\'s project', async () => {
    const stream = name('project');
    await ds(stream, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'alpha only' });
    expect((await ds(stream, { token: BETA })).status).toBe(404);
    expect((await rivuletEvents(stream, BETA)).length).toBe(0);
    expect((await rivuletEvents(stream, ALPHA)).length).toBe(3);
  });

  it('answers a destroyed stream as gone, and a new PUT starts a new lifetime', async () => {
    const stream = name('destroyed');
    await ds(stream, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'old' });
    const destroyed = await fetch(`${server.url}/v1/streams/${stream}`, { method: 'DELETE', headers: { authorization: `Bearer ${ALPHA}` } });
    expect(destroyed.status).toBe(200);
    expect((await ds(stream)).status).toBe(404);
    expect((await ds(stream, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'new' })).status).toBe(201);
    expect(await (await ds(stream)).text()).toBe('new');
  });
});

describe('concurrent writers (docs/durable-streams.md "State")', () => {
  it('appends that arrive together on one stream are each answered with their own offset, and all read back', async () => {
    const s = name('together');
    expect((await ds(s, { method: 'PUT', headers: { 'content-type': 'application/json' } })).status).toBe(201);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => ds(s, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ i }) })),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 204));
    // Offsets 3..22: created, configured, then the twenty messages, each answer naming its own end.
    const offsets = answers.map((a) => Number(a.headers.get('stream-next-offset')!.split('_')[0]));
    expect([...offsets].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 3));
    const read = (await (await ds(`${s}?offset=-1`)).json()) as Array<{ i: number }>;
    expect(read.map((m) => m.i).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });
});
