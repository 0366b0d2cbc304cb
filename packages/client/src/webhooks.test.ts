import { RivuletError } from '@rivulet/contract';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verifyWebhook, WEBHOOK_TOLERANCE_SECONDS, type WebhookEnvelope } from './webhooks.js';

/**
 * The published test vector of the Standard Webhooks reference libraries: repository
 * standard-webhooks/standard-webhooks, libraries/javascript/src/webhook.test.ts, test "sign
 * function works" (the same values appear in the Python library's test_sign_function).
 */
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

const envelope: WebhookEnvelope = {
  projectId: null,
  path: '/s',
  streamId: 'sid',
  streamCreatedAt: '2026-11-30T08:00:00.000Z',
  subscriptionKey: 'k',
  cursorChangedAtSourceOffset: 2,
  deliveryId: 'delivery:["sid","k",2,5,5]',
  attempt: 1,
  configuredEvent: { path: '/s', offset: 2, createdAt: '2026-11-30T09:00:00.000Z', type: 'events.iterate.com/stream/subscription-configured' },
  event: { path: '/s', offset: 5, createdAt: '2026-11-30T10:00:00.000Z', type: 'app/x', payload: { text: 'grüße 🌊' } },
};

const secret = `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))}`;

/** A request signed by the standardwebhooks package, as Rivulet would send it. */
function signedByLibrary(body = JSON.stringify(envelope), at = new Date()) {
  const id = envelope.deliveryId;
  const timestamp = Math.floor(at.getTime() / 1000);
  const signature = new Webhook(secret).sign(id, new Date(timestamp * 1000), body);
  return { headers: { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature }, body };
}

async function refusal(promise: Promise<unknown>): Promise<RivuletError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(RivuletError);
    return error as RivuletError;
  }
  throw new Error('expected verifyWebhook to throw');
}

describe('verifyWebhook', () => {
  it('accepts the Standard Webhooks test vector (at its own time)', async () => {
    // The vector's body is JSON but not an envelope: the signature verifies, the shape does not.
    const request = { headers: { 'webhook-id': VECTOR.id, 'webhook-timestamp': String(VECTOR.timestamp), 'webhook-signature': VECTOR.signature }, body: VECTOR.body };
    const error = await refusal(verifyWebhook(request, VECTOR.secret, { now: () => VECTOR.timestamp * 1000 }));
    expect([error.code, error.message]).toEqual(['INVALID_INPUT', 'the webhook body is not a Rivulet webhook envelope']);
    const tampered = { ...request, body: VECTOR.body.replace('2432232314', '2432232315') };
    expect((await refusal(verifyWebhook(tampered, VECTOR.secret, { now: () => VECTOR.timestamp * 1000 }))).code).toBe('UNAUTHENTICATED');
  });

  it('accepts what the standardwebhooks package signs and answers the envelope', async () => {
    expect(await verifyWebhook(signedByLibrary(), secret)).toEqual(envelope);
  });

  it('takes a WHATWG Request, header names in any case, and the secret without its prefix', async () => {
    const { headers, body } = signedByLibrary();
    const request = new Request('http://127.0.0.1/hook', { method: 'POST', headers, body });
    expect(await verifyWebhook(request, secret)).toEqual(envelope);
    const shouting = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    expect(await verifyWebhook({ headers: shouting, body }, secret.slice('whsec_'.length))).toEqual(envelope);
  });

  it('accepts one matching signature among several (key rotation), ignoring other versions', async () => {
    const { headers, body } = signedByLibrary();
    const bogus = 'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=';
    const multi = { ...headers, 'webhook-signature': `${bogus} v2,${headers['webhook-signature'].slice(3)} ${headers['webhook-signature']}` };
    expect(await verifyWebhook({ headers: multi, body }, secret)).toEqual(envelope);
  });

  it('refuses a changed body, id, timestamp or signature, and another secret (UNAUTHENTICATED)', async () => {
    const { headers, body } = signedByLibrary();
    const other = `whsec_${btoa('x'.repeat(32))}`;
    const cases = [
      { headers, body: body.replace('grüße', 'grusse') },
      { headers: { ...headers, 'webhook-id': `${headers['webhook-id']} ` }, body },
      { headers: { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) }, body },
      { headers: { ...headers, 'webhook-signature': 'v1,dawfeoifkpqwoekfpqoekf' }, body },
      { headers: { ...headers, 'webhook-signature': 'v1,' }, body },
      { headers: { ...headers, 'webhook-signature': headers['webhook-signature'].replace('v1,', 'v2,') }, body },
    ];
    for (const request of cases) expect((await refusal(verifyWebhook(request, secret))).code).toBe('UNAUTHENTICATED');
    expect((await refusal(verifyWebhook({ headers, body }, other))).message).toBe('webhook not verified: no v1 signature matches this secret');
  });

  it('refuses missing headers and a timestamp outside the tolerance either way', async () => {
    const { headers, body } = signedByLibrary();
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const) {
      const partial: Record<string, string> = { ...headers };
      delete partial[name];
      expect((await refusal(verifyWebhook({ headers: partial, body }, secret))).message).toContain('are required');
    }
    const now = Date.now();
    const old = signedByLibrary(JSON.stringify(envelope), new Date(now - (WEBHOOK_TOLERANCE_SECONDS + 5) * 1000));
    expect((await refusal(verifyWebhook(old, secret, { now: () => now }))).message).toMatch(/tolerance 300 s/);
    const future = signedByLibrary(JSON.stringify(envelope), new Date(now + (WEBHOOK_TOLERANCE_SECONDS + 5) * 1000));
    expect((await refusal(verifyWebhook(future, secret, { now: () => now }))).code).toBe('UNAUTHENTICATED');
    // Within a custom tolerance it passes.
    expect(await verifyWebhook(old, secret, { now: () => now, toleranceSeconds: 3600 })).toEqual(envelope);
    const garbled = { headers: { ...headers, 'webhook-timestamp': 'soon' }, body };
    expect((await refusal(verifyWebhook(garbled, secret))).message).toContain('is not unix seconds');
  });

  it('refuses a secret that is not base64 (INVALID_INPUT) and a signed body that is not JSON', async () => {
    expect((await refusal(verifyWebhook(signedByLibrary(), 'whsec_***'))).code).toBe('INVALID_INPUT');
    const error = await refusal(verifyWebhook(signedByLibrary('not json'), secret));
    expect([error.code, error.message]).toEqual(['INVALID_INPUT', 'the webhook body is not JSON']);
  });
});
