/**
 * Standard Webhooks signatures (protocol §17.2, §17.5): the secret has the form
 * `whsec_<base64 key>`, and `webhook-signature` is `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`
 * under that key. HMAC comes from WebCrypto (`crypto.subtle`), global on Node 20 and in Workers,
 * so this stays host-free. Deterministic: the same key, id, timestamp and body sign the same way.
 */

export const WEBHOOK_SECRET_PREFIX = 'whsec_';
/** Key sizes the Standard Webhooks specification asks for (24 to 64 bytes). */
export const WEBHOOK_KEY_MIN_BYTES = 24;
export const WEBHOOK_KEY_MAX_BYTES = 64;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function base64Encode(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Strict standard base64 (padding required); undefined when `text` is not that. */
export function base64Decode(text: string): Uint8Array | undefined {
  if (text.length === 0 || !BASE64.test(text)) return undefined;
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** The key of a `whsec_…` secret; throws an Error saying what is wrong (never echoing the secret). */
export function webhookSecretKey(secret: string): Uint8Array {
  if (!secret.startsWith(WEBHOOK_SECRET_PREFIX)) {
    throw new Error(`a webhook secret has the form ${WEBHOOK_SECRET_PREFIX}<base64 key>; this one does not start with "${WEBHOOK_SECRET_PREFIX}"`);
  }
  const key = base64Decode(secret.slice(WEBHOOK_SECRET_PREFIX.length));
  if (!key) throw new Error(`a webhook secret has the form ${WEBHOOK_SECRET_PREFIX}<base64 key>; the part after the prefix is not base64`);
  if (key.length < WEBHOOK_KEY_MIN_BYTES || key.length > WEBHOOK_KEY_MAX_BYTES) {
    throw new Error(`a webhook secret's key must be ${WEBHOOK_KEY_MIN_BYTES}–${WEBHOOK_KEY_MAX_BYTES} bytes; this one has ${key.length}`);
  }
  return key;
}

/** A `whsec_…` secret for `key` (the host brings the random bytes). */
export function webhookSecretOf(key: Uint8Array): string {
  return `${WEBHOOK_SECRET_PREFIX}${base64Encode(key)}`;
}

export function importWebhookKey(key: Uint8Array): Promise<CryptoKey> {
  return crypto.subtle.importKey('raw', key as Uint8Array<ArrayBuffer>, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
}

/** The `webhook-signature` header value: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`. */
export async function signWebhook(key: CryptoKey, id: string, timestampSeconds: number, body: string): Promise<string> {
  const content = new TextEncoder().encode(`${id}.${timestampSeconds}.${body}`);
  const mac = await crypto.subtle.sign('HMAC', key, content);
  return `v1,${base64Encode(new Uint8Array(mac))}`;
}
