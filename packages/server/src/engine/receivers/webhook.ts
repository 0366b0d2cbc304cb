/**
 * webhook-post, the sending half (protocol §17): one signed POST per
 * event through the outbound port. The body is the envelope of core/webhook-envelope.ts, its text
 * written by webhook-body.ts (the same bytes as serialising that envelope). The headers follow
 * Standard Webhooks: `webhook-id` = the delivery id (stable across retries of one event in one
 * run, new for a new run), `webhook-timestamp` in unix seconds, `webhook-signature`.
 *
 * Outcomes (protocol §17.3). Any 2xx is success. The receiver's status decides the rest:
 * - 408, 429, 502, 503, 504 and everything that is not an answer at all (refused destination,
 *   DNS, connection refused or reset, TLS, the delivery timeout) are *unavailable*: the receiver or
 *   the way to it is down or overloaded, which says nothing about the event, so it backs off and
 *   counts towards the halt but never towards a skip (protocol §12.4, §17.3: counting outages as
 *   failing events skips good events);
 * - any other status (4xx, 500, 501, 3xx — redirects are never followed) is *failing*: the
 *   receiver answered and refused this event, which may be skipped under `onFailingEvent: "skip"`.
 * The kind is chosen from the status code and from whether an answer arrived, never from text.
 */
import { EventType } from '@rivulet/contract';
import { importWebhookKey, signWebhook, webhookSecretKey } from '../../core/webhook-signature.js';
import type { Clock } from '../../ports/clock.js';
import type { OutboundAnswer, OutboundHttp } from '../../ports/outbound.js';
import { VERSION } from '../../version.js';
import { webhookBody } from './webhook-body.js';
import { errorText, type DeliveredEvent, type DeliveryContext, type DeliveryOutcome, type Receiver } from './receiver.js';

export const WEBHOOK_USER_AGENT = `Rivulet-Webhooks/${VERSION}`;

/** Statuses that mean "not now" rather than "not this event". */
const UNAVAILABLE_STATUSES = new Set([408, 429, 502, 503, 504]);
const SNIPPET_CHARS = 200;

export interface WebhookReceiverDeps {
  http: OutboundHttp;
  /**
   * The webhook secret, `whsec_<base64 key>` (validated here; an invalid one throws at once). A
   * host that may run without one (the Worker, until its secret is set) passes undefined: every
   * delivery is then *unavailable*, with `missingSecret` saying how to set one.
   */
  secret: string | undefined;
  missingSecret?: string;
  clock: Clock;
  /**
   * Signs `id.timestamp.body` into a `webhook-signature` value. Defaults to WebCrypto, which runs
   * everywhere; a host may bring a faster one of the same result (the Node host uses node:crypto,
   * whose synchronous HMAC avoids a thread-pool round trip per delivery).
   */
  sign?: (id: string, timestampSeconds: number, body: string) => string | Promise<string>;
}

/** The outcome of an answered POST. */
export function classifyWebhookAnswer(answer: OutboundAnswer): DeliveryOutcome {
  const facts = { status: answer.status, responseExcerpt: answer.body };
  if (answer.status >= 200 && answer.status <= 299) return { ok: true, ...facts };
  const snippet = answer.body.replace(/\s+/g, ' ').trim().slice(0, SNIPPET_CHARS);
  const status = `${answer.status}${answer.statusText ? ` ${answer.statusText}` : ''}`;
  const redirect = answer.status >= 300 && answer.status <= 399 ? ' (redirects are not followed)' : '';
  const error = `webhook responded ${status}${redirect}${snippet ? `: ${snippet}` : ''}`;
  return { ok: false, kind: UNAVAILABLE_STATUSES.has(answer.status) ? 'unavailable' : 'failing', error, ...facts };
}

/** The outcome of a POST that got no answer: never the event's fault. */
export function classifyWebhookError(error: unknown, signal: AbortSignal): DeliveryOutcome {
  if (signal.aborted) return { ok: false, kind: 'unavailable', error: 'webhook call aborted: the delivery timed out' };
  return { ok: false, kind: 'unavailable', error: `webhook not delivered: ${errorText(error)}` };
}

/**
 * A receiver call whose per-call work that does not depend on the moment of sending is done: the
 * sender prepares the next webhook while the previous POST is in flight (sender.ts).
 */
export interface PreparedCall {
  /** `onSent` is told once the request is on its way (ports/outbound.ts), if the port can tell. */
  send(signal: AbortSignal, onSent?: () => void): Promise<DeliveryOutcome>;
}

/** A receiver that can prepare its calls ahead (webhook-post). */
export interface PreparingReceiver extends Receiver {
  prepare(ctx: Omit<DeliveryContext, 'signal'>, events: readonly DeliveredEvent[]): PreparedCall;
}

const answered = (outcome: DeliveryOutcome): PreparedCall => ({ send: () => Promise.resolve(outcome) });

export function webhookReceiver(deps: WebhookReceiverDeps): PreparingReceiver {
  const secret = deps.secret;
  if (secret === undefined) {
    const missing: DeliveryOutcome = { ok: false, kind: 'unavailable', error: deps.missingSecret ?? 'this server has no webhook secret' };
    return { prepare: () => answered(missing), deliver: () => Promise.resolve(missing) };
  }
  const sign =
    deps.sign ??
    ((): ((id: string, t: number, body: string) => Promise<string>) => {
      const key = importWebhookKey(webhookSecretKey(secret));
      return async (id, t, body) => signWebhook(await key, id, t, body);
    })();

  /**
   * The envelope and its JSON are built here, and signed with the current second; the POST carries
   * the second it leaves in, so it is signed again only if that second is another one (the sender
   * prepares the next webhook while the previous POST is in flight, which takes the signature off
   * the path between two POSTs).
   */
  function prepare(ctx: Omit<DeliveryContext, 'signal'>, events: readonly DeliveredEvent[]): PreparedCall {
    const receiver = ctx.entry.configuration.receiver;
    if (receiver.action !== 'webhook-post') throw new Error('webhook receiver given another action');
    // The sender sends webhooks one event at a time (protocol §12.3, §17.1); anything else is our bug: halt visibly.
    if (events.length !== 1) return answered({ ok: false, kind: 'fatal', error: `internal error: a webhook delivery carries one event, this one ${events.length}` });
    const delivered = events[0]!;
    const configuredEvent = ctx.sourceEvent(ctx.entry.configuredAtOffset);
    if (!configuredEvent || configuredEvent.type !== EventType.subscriptionConfigured) {
      // The run's own configure event is gone: the stream changed under this delivery; try again.
      return answered({ ok: false, kind: 'unavailable', error: `the subscription-configured event at offset ${ctx.entry.configuredAtOffset} is not readable` });
    }
    const { body, id } = webhookBody(ctx, configuredEvent, delivered.event, delivered.shaped);
    const url = receiver.url;
    const signAt = (timestamp: number): string | Promise<string> => {
      const signature = sign(id, timestamp, body);
      // A call prepared ahead may never be sent: its signing failure must not go unhandled.
      if (typeof signature !== 'string') signature.catch(() => undefined);
      return signature;
    };
    let signedAt = Math.floor(deps.clock.now() / 1000);
    let signed = signAt(signedAt);
    const post = (timestamp: number, signature: string, signal: AbortSignal, onSent: (() => void) | undefined): Promise<DeliveryOutcome> =>
      deps.http
        .post(url, {
          headers: {
            'content-type': 'application/json',
            'user-agent': WEBHOOK_USER_AGENT,
            'webhook-id': id,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': signature,
          },
          body,
          signal,
          ...(onSent ? { onSent } : {}),
        })
        .then(classifyWebhookAnswer, (error: unknown) => classifyWebhookError(error, signal));
    return {
      send(signal, onSent) {
        const timestamp = Math.floor(deps.clock.now() / 1000);
        if (timestamp !== signedAt) {
          signedAt = timestamp;
          signed = signAt(timestamp);
        }
        const signature = signed;
        return typeof signature === 'string' ? post(timestamp, signature, signal, onSent) : signature.then((s) => post(timestamp, s, signal, onSent));
      },
    };
  }

  return {
    prepare,
    deliver: async (ctx, events) => prepare(ctx, events).send(ctx.signal),
  };
}
