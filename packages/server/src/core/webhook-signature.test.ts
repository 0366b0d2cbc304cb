import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  base64Decode,
  base64Encode,
  importWebhookKey,
  signWebhook,
  webhookSecretKey,
  webhookSecretOf,
} from './webhook-signature.js';

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

const keyOf = (secret: string) => importWebhookKey(webhookSecretKey(secret));

describe('signWebhook', () => {
  it('reproduces the Standard Webhooks test vector', async () => {
    expect(await signWebhook(await keyOf(VECTOR.secret), VECTOR.id, VECTOR.timestamp, VECTOR.body)).toBe(VECTOR.signature);
  });

  it('signs what the standardwebhooks package verifies, and signs exactly as it does', async () => {
    const secret = webhookSecretOf(crypto.getRandomValues(new Uint8Array(32)));
    const now = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ event: { offset: 7, payload: { text: 'grüße 🌊', nested: [1, { a: null }] } } });
    const id = 'delivery:["3f1c","k",2,7,7]';
    const signature = await signWebhook(await keyOf(secret), id, now, body);
    const lib = new Webhook(secret);
    expect(lib.verify(body, { 'webhook-id': id, 'webhook-timestamp': String(now), 'webhook-signature': signature })).toEqual(JSON.parse(body));
    expect(lib.sign(id, new Date(now * 1000), body)).toBe(signature);
    // A different body, id or timestamp does not verify.
    expect(() => lib.verify(`${body} `, { 'webhook-id': id, 'webhook-timestamp': String(now), 'webhook-signature': signature })).toThrow();
    expect(() => lib.verify(body, { 'webhook-id': `${id}x`, 'webhook-timestamp': String(now), 'webhook-signature': signature })).toThrow();
    expect(() => lib.verify(body, { 'webhook-id': id, 'webhook-timestamp': String(now - 1), 'webhook-signature': signature })).toThrow();
  });
});

describe('webhook secrets', () => {
  it('round-trips a key through whsec_ and base64', () => {
    const key = crypto.getRandomValues(new Uint8Array(32));
    const secret = webhookSecretOf(key);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(webhookSecretKey(secret)).toEqual(key);
  });

  it('accepts keys of 24–64 bytes (the test vector has 24)', () => {
    expect(webhookSecretKey(VECTOR.secret)).toHaveLength(24);
    expect(webhookSecretKey(webhookSecretOf(new Uint8Array(64)))).toHaveLength(64);
  });

  it.each([
    ['no prefix', 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'does not start with "whsec_"'],
    ['empty key', 'whsec_', 'not base64'],
    ['not base64', 'whsec_not*base64*at*all*!!', 'not base64'],
    ['missing padding', `whsec_${base64Encode(new Uint8Array(32)).replace(/=+$/, '')}`, 'not base64'],
    ['too short', webhookSecretOf(new Uint8Array(16)), 'must be 24–64 bytes; this one has 16'],
    ['too long', webhookSecretOf(new Uint8Array(65)), 'must be 24–64 bytes; this one has 65'],
  ])('refuses %s, without echoing the secret', (_name, secret, message) => {
    let error: unknown;
    try {
      webhookSecretKey(secret);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain(message);
    if (secret.length > 10) expect((error as Error).message).not.toContain(secret.slice(6));
  });

  it('base64Decode is strict', () => {
    expect(base64Decode('AAEC')).toEqual(new Uint8Array([0, 1, 2]));
    expect(base64Decode('AAE=')).toEqual(new Uint8Array([0, 1]));
    for (const bad of ['', 'AAE', 'AA=C', 'A A=', 'AAE-', '====']) expect(base64Decode(bad)).toBeUndefined();
  });
});
