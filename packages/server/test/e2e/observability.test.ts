/**
 * End-to-end over real HTTP: /metrics (Prometheus text, protocol §15.2), /v1/openapi.json (§15.3)
 * and /healthz (§15.1).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { openTail } from '../helpers/sse.js';

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer();
  api = server.api;
});

afterAll(async () => {
  await server?.close();
});

async function scrape(): Promise<string> {
  const res = await api.request('GET', '/metrics');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text;
}

/** One sample line of the text format: name, optional {label="value",…}, value. */
const SAMPLE = /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*\})? (-?[0-9.]+(e[+-]?[0-9]+)?|NaN|[+-]Inf)$/;

/** The value of an unlabelled sample, or undefined when the metric has no sample yet. */
function sample(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

/** Polls /metrics until `name` reads `value`; fails with the last value after the deadline. */
async function waitForSample(name: string, value: number, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: number | undefined;
  while (Date.now() < deadline) {
    last = sample(await scrape(), name) ?? 0;
    if (last === value) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`${name} stayed at ${String(last)} for ${timeoutMs} ms; expected ${value}`);
}

describe('/metrics', () => {
  it('answers Prometheus text with HELP and TYPE lines and every sample well-formed', async () => {
    await api.append('/metrics/x', { type: 'x' });
    const text = await scrape();
    expect(text.endsWith('\n')).toBe(true);
    const typed = new Map<string, string>();
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
      if (type) {
        typed.set(type[1]!, type[2]!);
        continue;
      }
      if (line.startsWith('# HELP ')) continue;
      expect(line, 'sample line').toMatch(SAMPLE);
    }
    expect(typed.get('rivulet_appends_total')).toBe('counter');
    expect(typed.get('rivulet_sse_readers')).toBe('gauge');
  });

  it('rivulet_appends_total counts committed append requests (not rejected ones)', async () => {
    const before = sample(await scrape(), 'rivulet_appends_total') ?? 0;
    await api.append('/metrics/count', { type: 'a' });
    await api.append('/metrics/count', [{ type: 'b' }, { type: 'c' }]);
    await api.append('/metrics/count', { type: 'd' });
    const rejected = await api.post('/metrics/count', { type: 'x', nope: true });
    expect(rejected.status).toBe(400);
    expect(sample(await scrape(), 'rivulet_appends_total')).toBe(before + 3);
  });

  it('the SSE reader gauge goes up while a reader is open and down after', async () => {
    await api.append('/metrics/sse', { type: 'x' });
    const base = sample(await scrape(), 'rivulet_sse_readers') ?? 0;
    expect(base).toBe(0);
    const first = await openTail(api, '/metrics/sse');
    const second = await openTail(api, '/metrics/sse', { afterOffset: 2 });
    try {
      expect(sample(await scrape(), 'rivulet_sse_readers')).toBe(2);
      first.close();
      // The server notices the closed connection asynchronously: poll with a deadline.
      await waitForSample('rivulet_sse_readers', 1);
    } finally {
      first.close();
      second.close();
    }
    await waitForSample('rivulet_sse_readers', 0);
    // A reader ended by the server (destroy) is counted down as well.
    const third = await openTail(api, '/metrics/sse');
    expect(sample(await scrape(), 'rivulet_sse_readers')).toBe(1);
    await api.destroy('/metrics/sse');
    await third.eventsThrough(2);
    expect((await third.next())?.event).toBe('destroyed');
    expect(await third.next()).toBeNull();
    await waitForSample('rivulet_sse_readers', 0);
  });
});

describe('/v1/openapi.json', () => {
  it('is an OpenAPI 3.1 document listing the stream routes', async () => {
    const res = await api.request<Record<string, unknown>>('GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const doc = res.body as {
      openapi: string;
      info: { title: string; version: string };
      paths: Record<string, Record<string, { responses: Record<string, unknown>; parameters?: { name: string; in: string }[]; requestBody?: unknown }>>;
      components: { schemas: Record<string, unknown> };
    };
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.info.title).toBe('Rivulet');
    expect(doc.info.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(Object.keys(doc.paths['/v1/streams/{path}'] ?? {}).sort()).toEqual(['delete', 'get', 'post']);
    expect(Object.keys(doc.paths['/v1/streams/{path}:state'] ?? {})).toEqual(['get']);
    expect(Object.keys(doc.paths['/v1/streams'] ?? {})).toEqual(['get']);
    for (const [route, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        expect(operation.responses, `${method} ${route}`).toHaveProperty('200');
        if (route.includes('{path}')) {
          expect(operation.parameters, `${method} ${route}`).toContainEqual(expect.objectContaining({ name: 'path', in: 'path' }));
        }
      }
    }
    const post = doc.paths['/v1/streams/{path}']!.post!;
    expect(post.requestBody).toBeDefined();
    expect(Object.keys(post.responses)).toEqual(expect.arrayContaining(['200', '400', '403', '409', '412', '413', '422']));
    const readParams = (doc.paths['/v1/streams/{path}']!.get!.parameters ?? []).map((p) => p.name);
    expect(readParams).toEqual(expect.arrayContaining(['afterOffset', 'beforeOffset', 'limit', 'eventTypes', 'includeEphemeral', 'live']));
    expect(doc.components.schemas).toHaveProperty('CommittedEvent');
    expect(doc.components.schemas).toHaveProperty('Error');
    // Every $ref points at a schema the document defines.
    const text = res.text;
    for (const [, ref] of text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) {
      expect(doc.components.schemas, `dangling $ref ${ref}`).toHaveProperty(ref!);
    }
  });
});

describe('/healthz', () => {
  it('answers 200 {"ok":true} once ready', async () => {
    const res = await api.request('GET', '/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
  });
});
