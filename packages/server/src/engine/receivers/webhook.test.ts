/**
 * The webhook receiver against a scripted outbound port: the request it builds (envelope, Standard
 * Webhooks headers that the standardwebhooks package verifies) and how every kind of answer is
 * classified (protocol §17.3).
 */
import { EventType, type CommittedEvent, type OutboundEntry } from '@rivulet/contract';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { webhookSecretOf } from '../../core/webhook-signature.js';
import type { OutboundAnswer, OutboundHttp, OutboundPost } from '../../ports/outbound.js';
import type { DeliveryContext, DeliveryOutcome } from './receiver.js';
import { classifyWebhookAnswer, classifyWebhookError, WEBHOOK_USER_AGENT, webhookReceiver } from './webhook.js';

const SECRET = webhookSecretOf(new Uint8Array(32).map((_, i) => i * 7));
const NOW = Date.parse('2026-11-30T10:00:05.250Z');

const configured: CommittedEvent = {
  path: '/s',
  offset: 2,
  createdAt: '2026-11-30T09:00:00.000Z',
  type: EventType.subscriptionConfigured,
  payload: { subscriptionKey: 'k' },
};
const event: CommittedEvent = { path: '/s', offset: 5, createdAt: '2026-11-30T10:00:00.000Z', type: 'app/x', payload: { n: 1 } };

const entry: OutboundEntry = {
  configuration: {
    subscriptionKey: 'k',
    receiver: { action: 'webhook-post', url: 'https://hooks.example.com/in?x=1', delivery: { start: 'now', onFailingEvent: 'skip' } },
  },
  configuredAtOffset: 2,
  configuredAt: configured.createdAt,
};

function context(overrides: Partial<DeliveryContext> = {}): DeliveryContext {
  return {
    projectId: 'p',
    path: '/s',
    streamId: 'sid',
    streamCreatedAt: '2026-11-30T08:00:00.000Z',
    subscriptionKey: 'k',
    cursorChangedAtSourceOffset: 2,
    deliveryId: 'delivery:["sid","k",2,5,5]',
    attempt: 1,
    streamMaxOffset: 9,
    entry,
    sourceEvent: (offset) => (offset === 2 ? configured : undefined),
    signal: new AbortController().signal,
    ...overrides,
  };
}

class ScriptedHttp implements OutboundHttp {
  readonly posts: Array<{ url: string; request: OutboundPost }> = [];
  constructor(private readonly answer: (request: OutboundPost) => Promise<OutboundAnswer>) {}
  post(url: string, request: OutboundPost): Promise<OutboundAnswer> {
    this.posts.push({ url, request });
    return this.answer(request);
  }
}

const answer = (status: number, statusText = '', body = ''): Promise<OutboundAnswer> => Promise.resolve({ status, statusText, body });

async function deliverWith(http: OutboundHttp, ctx = context()): Promise<DeliveryOutcome> {
  return webhookReceiver({ http, secret: SECRET, clock: { now: () => NOW } }).deliver(ctx, [{ event, shaped: { type: 'app/x', payload: { n: 1 } } }]);
}

describe('the request', () => {
  it('POSTs the envelope with Standard Webhooks headers that verify', async () => {
    const http = new ScriptedHttp(() => answer(204, 'No Content'));
    expect(await deliverWith(http, context({ attempt: 2 }))).toEqual({ ok: true, status: 204, responseExcerpt: '' });
    expect(http.posts).toHaveLength(1);
    const { url, request } = http.posts[0]!;
    expect(url).toBe('https://hooks.example.com/in?x=1');
    expect(request.headers).toEqual({
      'content-type': 'application/json',
      'user-agent': WEBHOOK_USER_AGENT,
      'webhook-id': 'delivery:["sid","k",2,5,5]',
      'webhook-timestamp': String(Math.floor(NOW / 1000)),
      'webhook-signature': expect.stringMatching(/^v1,[A-Za-z0-9+/]{43}=$/),
    });
    expect(WEBHOOK_USER_AGENT).toMatch(/^Rivulet/);
    expect(JSON.parse(request.body)).toEqual({
      projectId: 'p',
      path: '/s',
      streamId: 'sid',
      streamCreatedAt: '2026-11-30T08:00:00.000Z',
      subscriptionKey: 'k',
      cursorChangedAtSourceOffset: 2,
      deliveryId: 'delivery:["sid","k",2,5,5]',
      attempt: 2,
      configuredEvent: configured,
      event,
    });
    // standardwebhooks checks the timestamp against the real clock: sign the same content "now".
    const lib = new Webhook(SECRET);
    const ts = new Date(Math.floor(NOW / 1000) * 1000);
    expect(lib.sign(request.headers['webhook-id']!, ts, request.body)).toBe(request.headers['webhook-signature']);
  });

  it('a call prepared ahead is signed once, and again only when it leaves in another second', async () => {
    const http = new ScriptedHttp(() => answer(204));
    let now = NOW;
    const signed: number[] = [];
    const lib = new Webhook(SECRET);
    const receiver = webhookReceiver({
      http,
      secret: SECRET,
      clock: { now: () => now },
      sign: (id, t, body) => {
        signed.push(t);
        return lib.sign(id, new Date(t * 1000), body);
      },
    });
    const { signal, ...ctx } = context();
    const delivered = [{ event, shaped: { type: 'app/x', payload: { n: 1 } } }];
    const second = Math.floor(NOW / 1000);

    const same = receiver.prepare(ctx, delivered);
    expect(signed).toEqual([second]);
    now = NOW + 700; // still the same second
    expect(await same.send(signal)).toMatchObject({ ok: true });
    expect(signed).toEqual([second]);
    expect(http.posts[0]!.request.headers['webhook-timestamp']).toBe(String(second));

    const later = receiver.prepare(ctx, delivered);
    expect(signed).toEqual([second, second]);
    now = NOW + 1_000; // the next second
    expect(await later.send(signal)).toMatchObject({ ok: true });
    expect(signed).toEqual([second, second, second + 1]);
    const headers = http.posts[1]!.request.headers;
    expect(headers['webhook-timestamp']).toBe(String(second + 1));
    expect(lib.sign(headers['webhook-id']!, new Date((second + 1) * 1000), http.posts[1]!.request.body)).toBe(headers['webhook-signature']);
  });

  it('passes the delivery signal to the port', async () => {
    const signal = new AbortController().signal;
    const http = new ScriptedHttp(() => answer(200));
    await deliverWith(http, context({ signal }));
    expect(http.posts[0]!.request.signal).toBe(signal);
  });

  it('a webhook-id of a non-ASCII key is header-safe and equals the envelope deliveryId', async () => {
    const http = new ScriptedHttp(() => answer(200));
    await deliverWith(http, context({ subscriptionKey: 'ü', deliveryId: 'delivery:["sid","ü",2,5,5]' }));
    const { request } = http.posts[0]!;
    expect(request.headers['webhook-id']).toBe('delivery:["sid","\\u00fc",2,5,5]');
    expect((JSON.parse(request.body) as { deliveryId: string }).deliveryId).toBe(request.headers['webhook-id']);
  });

  it('refuses an invalid secret when it is built, not at the first delivery', () => {
    const http = new ScriptedHttp(() => answer(200));
    expect(() => webhookReceiver({ http, secret: 'whsec_short', clock: { now: () => NOW } })).toThrow(/webhook secret/);
  });

  it('a batch of more than one event is an internal error that halts at once (fatal)', async () => {
    const http = new ScriptedHttp(() => answer(200));
    const receiver = webhookReceiver({ http, secret: SECRET, clock: { now: () => NOW } });
    const shaped = { type: 'app/x' };
    const outcome = await receiver.deliver(context(), [
      { event, shaped },
      { event: { ...event, offset: 6 }, shaped },
    ]);
    expect(outcome).toMatchObject({ ok: false, kind: 'fatal' });
    expect(http.posts).toHaveLength(0);
  });
});

describe('classification (protocol §17.3)', () => {
  const kindOf = (status: number) => {
    const outcome = classifyWebhookAnswer({ status, statusText: '', body: '' });
    return outcome.ok ? 'ok' : outcome.kind;
  };

  it('any 2xx is success', () => {
    for (const status of [200, 201, 202, 204, 206, 299]) expect(kindOf(status)).toBe('ok');
  });

  it('408, 429, 502, 503, 504 are unavailable: they never count towards a skip', () => {
    for (const status of [408, 429, 502, 503, 504]) expect(kindOf(status)).toBe('unavailable');
  });

  it('every other status is a failing event, redirects included', () => {
    for (const status of [100, 301, 302, 303, 307, 308, 400, 401, 403, 404, 409, 410, 413, 422, 500, 501, 505, 599]) {
      expect(kindOf(status), String(status)).toBe('failing');
    }
  });

  it('lastError names the status, the reason and the start of the body', () => {
    expect(classifyWebhookAnswer({ status: 503, statusText: 'Service Unavailable', body: '' })).toEqual({
      ok: false,
      kind: 'unavailable',
      error: 'webhook responded 503 Service Unavailable',
      status: 503,
      responseExcerpt: '',
    });
    const long = classifyWebhookAnswer({ status: 500, statusText: 'Internal Server Error', body: `{"error":\n  "boom"}${'x'.repeat(1000)}` });
    expect(long.ok === false && long.error).toMatch(/^webhook responded 500 Internal Server Error: \{"error": "boom"\}x+$/);
    expect(long.ok === false && long.error.length).toBeLessThan(300);
    // The attempt history keeps the body as it came (cut to 1 KiB there, protocol §22).
    expect(long.responseExcerpt).toBe(`{"error":\n  "boom"}${'x'.repeat(1000)}`);
    expect(classifyWebhookAnswer({ status: 302, statusText: 'Found', body: '' })).toMatchObject({
      error: 'webhook responded 302 Found (redirects are not followed)',
    });
  });

  it('no answer at all (refused destination, connection error, abort) is unavailable', async () => {
    const refused = await deliverWith(new ScriptedHttp(() => Promise.reject(new Error('cannot reach http://127.0.0.1:9: ECONNREFUSED'))));
    expect(refused).toEqual({ ok: false, kind: 'unavailable', error: 'webhook not delivered: cannot reach http://127.0.0.1:9: ECONNREFUSED' });
    const aborted = new AbortController();
    aborted.abort();
    expect(classifyWebhookError(new Error('aborted'), aborted.signal)).toEqual({
      ok: false,
      kind: 'unavailable',
      error: 'webhook call aborted: the delivery timed out',
    });
  });

  it('a configure event that cannot be read is unavailable, and nothing is sent', async () => {
    const http = new ScriptedHttp(() => answer(200));
    const outcome = await deliverWith(http, context({ sourceEvent: () => undefined }));
    expect(outcome).toMatchObject({ ok: false, kind: 'unavailable' });
    expect(http.posts).toHaveLength(0);
  });
});

describe('without a secret', () => {
  it('answers every delivery unavailable with the host text and sends nothing', async () => {
    const http = new ScriptedHttp(() => answer(204));
    const receiver = webhookReceiver({ http, secret: undefined, missingSecret: 'set the secret first', clock: { now: () => NOW } });
    const delivered = [{ event, shaped: { type: 'app/x', payload: { n: 1 } } }];
    const expected = { ok: false, kind: 'unavailable', error: 'set the secret first' };
    expect(await receiver.deliver(context(), delivered)).toEqual(expected);
    expect(await receiver.prepare(context(), delivered).send(new AbortController().signal)).toEqual(expected);
    expect(http.posts).toHaveLength(0);
  });
});
