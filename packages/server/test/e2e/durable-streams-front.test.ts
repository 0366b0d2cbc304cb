/**
 * End-to-end on the Node host: Durable Streams appends (`POST /v1/stream/{name}` with a declared
 * length) are answered by the fast entrances, the connection front and then node:http's native
 * path, as Rivulet's own appends are (docs/durable-streams.md "Speed"), and they answer exactly
 * what the app answers: the same status, fields and body, the hooks' CORS fields included.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRequest } from '../helpers/http1-requests.js';
import { rawAnswers, type RawAnswer } from '../helpers/raw-answers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const APP = 'https://app.example';
const TOKEN = 'ds-front-token-0123456789';

let server: TestServer;
let n = 0;

beforeAll(async () => {
  server = await startTestServer({ tokens: new Map([[TOKEN, '*']]), cors: { origins: [APP] } });
});

afterAll(async () => {
  await server?.close();
});

interface Append {
  name: string;
  body: string;
  fields: Record<string, string>;
}

/** A Durable Streams POST, spelled out with its Content-Length. */
function raw({ name, body, fields }: Append): string {
  return [
    `POST /v1/stream/${name} HTTP/1.1`,
    'Host: 127.0.0.1',
    `Authorization: Bearer ${TOKEN}`,
    `Origin: ${APP}`,
    ...Object.entries(fields).map(([field, value]) => `${field}: ${value}`),
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

/** The same POST through fetch with a streamed (chunked) body, which only the app reads. */
async function chunked({ name, body, fields }: Append): Promise<RawAnswer> {
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(body));
      controller.close();
    },
  });
  const res = await fetch(`${server.url}/v1/stream/${name}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, origin: APP, ...fields },
    body: stream,
    duplex: 'half',
  } as RequestInit);
  return { status: res.status, fields: [...res.headers], body: await res.text() };
}

/** Fresh streams, created alike: a JSON one and a text one. */
async function streams(): Promise<{ json: string; text: string }> {
  const id = `front-${process.pid}-${++n}`;
  for (const [name, type] of [
    [`${id}/json`, 'application/json'],
    [`${id}/text`, 'text/plain'],
  ]) {
    const res = await fetch(`${server.url}/v1/stream/${name}`, { method: 'PUT', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': type! } });
    expect(res.status).toBe(201);
  }
  return { json: `${id}/json`, text: `${id}/text` };
}

/** The same appends against a pair of fresh streams: each answer of the protocol's kinds. */
function appends({ json, text }: { json: string; text: string }): Append[] {
  const jsonType = { 'content-type': 'application/json' };
  const producer = { ...jsonType, 'producer-id': 'p', 'producer-epoch': '0', 'producer-seq': '0' };
  return [
    { name: json, body: '{"a":1}', fields: jsonType }, // 204
    { name: json, body: '[1,2]', fields: producer }, // 200
    { name: json, body: '[1,2]', fields: producer }, // a duplicate: 204
    { name: json, body: 'x', fields: { 'content-type': 'text/plain' } }, // 409, content type
    { name: json, body: '{"a":', fields: jsonType }, // 400, JSON
    { name: text, body: 'hello', fields: { 'content-type': 'text/plain', 'stream-closed': 'true' } }, // 204, closed
    { name: text, body: 'more', fields: { 'content-type': 'text/plain' } }, // 409, closed
    { name: `${json}-none`, body: '1', fields: jsonType }, // 404
  ];
}

const STATUSES = [204, 200, 204, 409, 400, 204, 409, 404];
const rawAppends = (s: { json: string; text: string }, before = '') => rawAnswers(server.url, before + appends(s).map(raw).join(''), STATUSES.length + (before === '' ? 0 : 1));

/** What an answer says, without the connection's own fields and the body's framing. */
const said = (a: RawAnswer) => ({
  status: a.status,
  body: a.body,
  fields: a.fields
    .filter(([name]) => !['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(name))
    .sort(([x], [y]) => x.localeCompare(y)),
});

describe('Durable Streams appends on the fast entrances', () => {
  it('a connection of appends only stays with the front, and its answers are the app’s', async () => {
    const [first, second] = [await streams(), await streams()];
    // (The PUTs above went to node:http: a connection's first request other than an append hands it over.)
    const handedOver = server.server.front.handedOver;
    const front = await rawAppends(first);
    expect(server.server.front.handedOver).toBe(handedOver);
    const app: RawAnswer[] = [];
    for (const append of appends(second)) app.push(await chunked(append));
    expect(front.map((a) => a.status)).toEqual(STATUSES);
    expect(front.map(said)).toEqual(app.map(said));
  });

  it('after a hand-over node:http’s native path answers them, and answers the same, byte for byte', async () => {
    const native = (await rawAppends(await streams(), getRequest('/healthz'))).slice(1);
    const front = await rawAppends(await streams());
    expect(native.map((a) => a.status)).toEqual(STATUSES);
    const framed = (a: RawAnswer) => ({ ...a, fields: a.fields.filter(([name]) => !['date', 'connection', 'keep-alive'].includes(name)) });
    expect(native.map(framed)).toEqual(front.map(framed));
  });

  it('answers carry the protocol fields, the security fields and the CORS hook’s', async () => {
    const [appended, producer, , refused] = await rawAppends(await streams());
    const field = (a: RawAnswer, name: string) => a.fields.find(([n]) => n === name)?.[1];
    expect(field(appended!, 'stream-next-offset')).toBe('0000000000000003_0000000000000000');
    expect(field(appended!, 'content-length')).toBeUndefined();
    expect(field(appended!, 'content-type')).toBeUndefined();
    expect([field(producer!, 'producer-epoch'), field(producer!, 'producer-seq'), field(producer!, 'content-length')]).toEqual(['0', '0', '0']);
    expect(refused!.body).toBe("content type x does not match the stream's application/json".replace('x', 'text/plain'));
    expect(field(refused!, 'content-type')).toBe('text/plain; charset=utf-8');
    for (const answer of [appended!, producer!, refused!]) {
      expect(field(answer, 'x-content-type-options')).toBe('nosniff');
      expect(field(answer, 'cross-origin-resource-policy')).toBe('cross-origin');
      expect(field(answer, 'access-control-allow-origin')).toBe(APP);
      expect(field(answer, 'access-control-expose-headers')).toContain('stream-next-offset');
    }
    const metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    expect(metrics).toMatch(/rivulet_http_request_duration_seconds_count\{method="POST",route="\/v1\/stream\/\{name\}",status="204"\} [1-9]/);
  });

  it('a target seen before is judged as the first time: refused again, and its aliases name one stream', async () => {
    const { json } = await streams();
    const jsonType = { 'content-type': 'application/json' };
    const [id, leaf] = json.split('/') as [string, string];
    // Percent-encoded and dot segments name the stream the plain target names (every time).
    const aliases = [json, `${id}/./${leaf}`, `${id}/%${leaf.charCodeAt(0).toString(16)}${leaf.slice(1)}`, json];
    const refused = 'bad%zz/x';
    const answers = await rawAnswers(
      server.url,
      [...aliases, refused, refused, ...aliases]
        .map((name, i) => raw({ name, body: String(i), fields: jsonType }))
        .join(''),
      2 * aliases.length + 2,
    );
    const offsets = answers.map((a) => a.fields.find(([n]) => n === 'stream-next-offset')?.[1] ?? a.status);
    expect(offsets).toEqual([3, 4, 5, 6, 400, 400, 7, 8, 9, 10].map((o) => (o === 400 ? 400 : `${String(o).padStart(16, '0')}_0000000000000000`)));
    expect(answers[4]!.body).toBe(answers[5]!.body);
    expect(answers[4]!.body).toContain('not valid percent-encoding');
    const read = await fetch(`${server.url}/v1/stream/${json}?offset=-1`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await read.json()).toEqual([0, 1, 2, 3, 6, 7, 8, 9]);
  });

  it('the messages appended through the front read back', async () => {
    const s = await streams();
    await rawAppends(s);
    const read = await fetch(`${server.url}/v1/stream/${s.json}?offset=-1`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await read.json()).toEqual([{ a: 1 }, 1, 2]);
  });
});
