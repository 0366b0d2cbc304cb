/**
 * The request hooks (request-hooks.ts): how a host's hooks are composed, and that the Hono app
 * (the entrance of both hosts; the Worker host serves this same app) tells them every request it
 * answers, appends included, and writes their header fields on every answer.
 */
import { describe, expect, it } from 'vitest';
import { createServerMetrics } from '../engine/metrics.js';
import type { StreamService } from '../engine/service.js';
import { createApp } from './app.js';
import { plainHeaders } from './request-headers.js';
import { composeRequestHooks, metricsHook, type AnsweredRequest, type RequestHook } from './request-hooks.js';

const answered: AnsweredRequest = { method: 'POST', route: 'POST /v1/streams/{path}', status: 200, durationMs: 1.5 };
const noHeaders = plainHeaders({});

function recordingLogger() {
  const errors: string[] = [];
  return { errors, logger: { error: (message: string) => errors.push(message) } };
}

describe('composing request hooks', () => {
  it('tells every hook, in order, and goes on past a hook that throws (logging it)', () => {
    const seen: string[] = [];
    const { errors, logger } = recordingLogger();
    const hooks = composeRequestHooks(
      [
        { onAnswered: (a) => seen.push(`first ${a.route} ${a.status}`) },
        {
          onAnswered: () => {
            throw new Error('broken hook');
          },
        },
        { onAnswered: (a) => seen.push(`third ${a.durationMs}`) },
      ],
      logger,
    );
    hooks.onAnswered(answered);
    expect(seen).toEqual(['first POST /v1/streams/{path} 200', 'third 1.5']);
    expect(errors).toEqual(['rivulet: a request hook failed']);
  });

  it('has no header step when no hook adds fields, and joins the fields of those that do', () => {
    const { logger } = recordingLogger();
    expect(composeRequestHooks([{ onAnswered: () => undefined }], logger).answerHeaders).toBeUndefined();
    const hooks = composeRequestHooks(
      [
        { answerHeaders: () => [['x-one', '1']] },
        { answerHeaders: () => undefined },
        { answerHeaders: (_a, request) => [['x-origin', request.get('origin') ?? 'none']] },
      ],
      logger,
    );
    expect(hooks.answerHeaders!(answered, plainHeaders({ origin: 'https://a.example' }))).toEqual([
      ['x-one', '1'],
      ['x-origin', 'https://a.example'],
    ]);
  });

  it('refuses fields the answer frames itself or that cannot be written, and a headers hook that throws', () => {
    const { errors, logger } = recordingLogger();
    const refused: RequestHook[] = [
      { answerHeaders: () => [['Content-Length', '3']] },
      { answerHeaders: () => [['connection', 'close']] },
      { answerHeaders: () => [['x-bad', 'a\r\nInjected: yes']] },
      { answerHeaders: () => [['bad name', 'x']] },
      {
        answerHeaders: () => {
          throw new Error('broken hook');
        },
      },
    ];
    const hooks = composeRequestHooks([...refused, { answerHeaders: () => [['x-kept', 'yes']] }], logger);
    expect(hooks.answerHeaders!(answered, noHeaders)).toEqual([['x-kept', 'yes']]);
    expect(errors).toHaveLength(5);
  });

  it('metricsHook records the duration in seconds under method, route template and status, as separate labels', () => {
    const metrics = createServerMetrics();
    composeRequestHooks([metricsHook(metrics)], recordingLogger().logger).onAnswered(answered);
    const series = metrics.httpDuration.series.get('method="POST",route="/v1/streams/{path}",status="200"');
    expect(series?.count).toBe(1);
    expect(series?.sum).toBeCloseTo(0.0015, 9);
    expect(metrics.httpDuration.series.size).toBe(1);
  });

  it('metricsHook: an uncommon method is labelled other; a route that does not start with its method is kept whole', () => {
    const metrics = createServerMetrics();
    const hooks = composeRequestHooks([metricsHook(metrics)], recordingLogger().logger);
    hooks.onAnswered({ ...answered, method: 'PROPFIND', route: 'PROPFIND /*', status: 404 });
    hooks.onAnswered({ ...answered, method: 'GET', route: 'GETX /odd', status: 404 });
    hooks.onAnswered({ ...answered, method: 'HEAD', route: 'HEAD /v1/streams/{path}', status: 200 });
    expect([...metrics.httpDuration.series.keys()]).toEqual([
      'method="other",route="/*",status="404"',
      'method="GET",route="GETX /odd",status="404"',
      'method="HEAD",route="/v1/streams/{path}",status="200"',
    ]);
  });

  it('metricsHook keeps one series per method, route and status across answers, whatever it remembers between them', () => {
    const metrics = createServerMetrics();
    const hooks = composeRequestHooks([metricsHook(metrics)], recordingLogger().logger);
    // A route that does not start with its method is the same text for two methods: two series.
    for (const method of ['GET', 'POST', 'GET']) hooks.onAnswered({ ...answered, method, route: '{unmatched}', status: 404 });
    for (const status of [200, 200, 409, 200]) hooks.onAnswered({ ...answered, status, durationMs: status === 409 ? 4 : 1 });
    const count = (key: string) => metrics.httpDuration.series.get(key)?.count;
    expect(count('method="GET",route="{unmatched}",status="404"')).toBe(2);
    expect(count('method="POST",route="{unmatched}",status="404"')).toBe(1);
    expect(count('method="POST",route="/v1/streams/{path}",status="200"')).toBe(3);
    expect(metrics.httpDuration.series.get('method="POST",route="/v1/streams/{path}",status="409"')?.sum).toBeCloseTo(0.004, 9);
    expect(metrics.httpDuration.series.size).toBe(4);
  });
});

describe('the Hono app tells the hooks every answered request', () => {
  const TOKEN = 'tok-0123456789abcdef';
  const service = {
    append: async () => [],
    state: async () => ({ exists: false }),
  } as unknown as StreamService;

  function setUp(options: { ready?: () => boolean } = {}) {
    const seen: AnsweredRequest[] = [];
    const hooks = composeRequestHooks(
      [
        { onAnswered: (a) => seen.push(a) },
        // What a CORS hook would do: a field that depends on the request.
        { answerHeaders: (_a, request) => [['access-control-allow-origin', request.get('origin') ?? '*']] },
      ],
      { error: () => undefined },
    );
    const metrics = createServerMetrics();
    const app = createApp({
      service,
      tokens: new Map([[TOKEN, 'p1']]),
      metrics,
      maxBodyBytes: 1000,
      logger: { error: () => undefined },
      hooks,
      ...options,
    });
    const send = (method: string, path: string, init: { body?: string; headers?: Record<string, string> } = {}) =>
      app.fetch(
        new Request(`http://localhost${path}`, {
          method,
          headers: { authorization: `Bearer ${TOKEN}`, origin: 'https://app.example', ...init.headers },
          ...(init.body === undefined ? {} : { body: init.body }),
        }),
      );
    return { seen, send, metrics };
  }

  const json = { 'content-type': 'application/json' };

  it('an append, answered or refused, with the route, status and error code', async () => {
    const { seen, send, metrics } = setUp();
    const ok = await send('POST', '/v1/streams/a/b', { body: '{"type":"t/x"}', headers: json });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('{"events":[]}');
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(ok.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const refused = await send('POST', '/v1/streams/a/b', { body: '{"type":"t/x"}', headers: { 'content-type': 'text/plain' } });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const invalid = await send('POST', '/v1/streams/a/%2F', { body: '{"type":"t/x"}', headers: json });
    expect(invalid.status).toBe(400);
    const stranger = await send('POST', '/v1/streams/a', { body: '{"type":"t/x"}', headers: { ...json, authorization: 'Bearer nope-nope-nope-nope' } });
    expect(stranger.status).toBe(401);
    expect(seen.map(({ method, route, status, errorCode }) => ({ method, route, status, errorCode }))).toEqual([
      { method: 'POST', route: 'POST /v1/streams/{path}', status: 200, errorCode: undefined },
      { method: 'POST', route: 'POST /v1/streams/{path}', status: 400, errorCode: 'INVALID_INPUT' },
      { method: 'POST', route: 'POST /v1/streams/{invalid}', status: 400, errorCode: 'INVALID_INPUT' },
      { method: 'POST', route: 'POST /v1/streams/{path}', status: 401, errorCode: 'UNAUTHENTICATED' },
    ]);
    for (const a of seen) expect(a.durationMs).toBeGreaterThanOrEqual(0);
    // The host gave its own hooks: nothing is recorded behind them.
    expect(metrics.httpDuration.series.size).toBe(0);
  });

  it('every other route: stream methods, health, not found, and errors thrown by handlers', async () => {
    let ready = false;
    const { seen, send } = setUp({ ready: () => ready });
    const answers = [
      await send('GET', '/v1/streams/a:state'),
      await send('POST', '/v1/streams/a:nope', { body: '{}', headers: json }),
      await send('GET', '/healthz'),
      await send('GET', '/nowhere'),
      await send('GET', '/v1/rpc'),
    ];
    ready = true;
    answers.push(await send('GET', '/healthz'));
    expect(answers.map((a) => a.status)).toEqual([200, 404, 503, 404, 400, 200]);
    for (const a of answers) expect(a.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(seen.map(({ route, status, errorCode }) => [route, status, errorCode])).toEqual([
      ['GET /v1/streams/{path}:state', 200, undefined],
      ['POST /v1/streams/{path}:{unknown}', 404, 'NOT_FOUND'],
      ['GET /healthz', 503, 'UNAVAILABLE'],
      ['GET /*', 404, 'NOT_FOUND'],
      ['GET /v1/rpc', 400, 'INVALID_INPUT'],
      ['GET /healthz', 200, undefined],
    ]);
  });

  it('without hooks of the host, records the request-duration metric as before', async () => {
    const metrics = createServerMetrics();
    const app = createApp({ service, tokens: null, metrics, maxBodyBytes: 1000, logger: { error: () => undefined } });
    await app.fetch(new Request('http://localhost/v1/streams/a', { method: 'POST', headers: json, body: '{"type":"t/x"}' }));
    await app.fetch(new Request('http://localhost/healthz'));
    expect([...metrics.httpDuration.series.keys()]).toEqual([
      'method="POST",route="/v1/streams/{path}",status="200"',
      'method="GET",route="/healthz",status="200"',
    ]);
  });
});
