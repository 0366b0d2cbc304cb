/**
 * For webhook receivers: the envelope Rivulet POSTs (protocol §17.1, §17.2) and a verifier of
 * its Standard Webhooks signature. `verifyWebhook` checks `webhook-signature` (`v1,<base64
 * HMAC-SHA256 of "id.timestamp.body">`, several space-separated signatures allowed) against the
 * secret with WebCrypto — constant-time through `crypto.subtle.verify` — and refuses a
 * `webhook-timestamp` more than the tolerance away from now, so a captured request cannot be
 * replayed later. It runs wherever WebCrypto does (Node 20+, browsers, workers).
 *
 * Deliveries are at least once: deduplicate by `webhook-id` (the envelope's `deliveryId`, stable
 * across retries of one event in one run) or by `(streamId, event.offset)`.
 */
import { RivuletError, type WebhookEnvelope } from '@rivulet/contract';

export type { WebhookEnvelope };

/** A request as a framework hands it over: headers (any case) and the raw body text. */
export interface WebhookRequestLike {
  headers: Headers | Record<string, string | readonly string[] | undefined>;
  /** The body exactly as received (re-serialised JSON does not verify). */
  body: string;
}

export interface VerifyWebhookOptions {
  /** Largest distance of `webhook-timestamp` from now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** The current time in ms (default Date.now). */
  now?: () => number;
}

export const WEBHOOK_TOLERANCE_SECONDS = 300;
const SECRET_PREFIX = 'whsec_';

function unauthenticated(message: string): RivuletError {
  return new RivuletError('UNAUTHENTICATED', `webhook not verified: ${message}`);
}

function decodeBase64(text: string): Uint8Array | undefined {
  if (text.length === 0 || text.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined;
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function headerOf(headers: WebhookRequestLike['headers'], name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers as Record<string, string | readonly string[] | undefined>)) {
    if (key.toLowerCase() !== name) continue;
    return typeof value === 'string' ? value : value?.join(', ');
  }
  return undefined;
}

function isRequest(request: Request | WebhookRequestLike): request is Request {
  return typeof (request as Request).text === 'function' && typeof (request as WebhookRequestLike).body !== 'string';
}

/**
 * Verifies a webhook request from Rivulet and answers its envelope. Throws RivuletError
 * UNAUTHENTICATED when a header is missing, the timestamp is outside the tolerance or no
 * signature matches, and INVALID_INPUT for a signed body that is not an envelope. A WHATWG
 * Request's body is read (consumed).
 */
export async function verifyWebhook(
  request: Request | WebhookRequestLike,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<WebhookEnvelope> {
  const key = decodeBase64(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret);
  if (!key) throw new RivuletError('INVALID_INPUT', `the webhook secret must be ${SECRET_PREFIX}<base64 key>`);
  const headers = request.headers;
  const id = headerOf(headers, 'webhook-id');
  const timestampText = headerOf(headers, 'webhook-timestamp');
  const signatures = headerOf(headers, 'webhook-signature');
  if (!id || !timestampText || !signatures) throw unauthenticated('webhook-id, webhook-timestamp and webhook-signature are required');

  if (!/^\d{1,15}$/.test(timestampText.trim())) throw unauthenticated(`webhook-timestamp "${timestampText}" is not unix seconds`);
  const timestamp = Number(timestampText.trim());
  const tolerance = options.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS;
  const now = Math.floor((options.now ?? Date.now)() / 1000);
  if (Math.abs(now - timestamp) > tolerance) {
    throw unauthenticated(`webhook-timestamp ${timestamp} is ${Math.abs(now - timestamp)} s away from now (tolerance ${tolerance} s)`);
  }

  const body = isRequest(request) ? await request.text() : request.body;
  const content = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  const cryptoKey = await crypto.subtle.importKey('raw', key as Uint8Array<ArrayBuffer>, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  let verified = false;
  for (const candidate of signatures.split(' ')) {
    const [version, value] = candidate.split(',', 2);
    if (version !== 'v1' || value === undefined) continue;
    const mac = decodeBase64(value);
    if (mac && (await crypto.subtle.verify('HMAC', cryptoKey, mac as Uint8Array<ArrayBuffer>, content))) {
      verified = true;
      break;
    }
  }
  if (!verified) throw unauthenticated('no v1 signature matches this secret');

  let envelope: unknown;
  try {
    envelope = JSON.parse(body);
  } catch {
    throw new RivuletError('INVALID_INPUT', 'the webhook body is not JSON');
  }
  const e = envelope as Partial<WebhookEnvelope> | null;
  if (typeof e !== 'object' || e === null || typeof e.event !== 'object' || e.event === null || typeof e.deliveryId !== 'string') {
    throw new RivuletError('INVALID_INPUT', 'the webhook body is not a Rivulet webhook envelope');
  }
  return envelope as WebhookEnvelope;
}
