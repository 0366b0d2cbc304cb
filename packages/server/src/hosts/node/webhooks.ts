/**
 * webhook-post for the Node host, composed in one place so that hosts/node.ts adds one receiver
 * and one close call: the outbound adapter with the server's private-destination policy and the
 * engine's webhook receiver signing with the server's secret (hosts/webhook-secret.ts).
 */
import { createHmac, createSecretKey } from 'node:crypto';
import { webhookSecretKey } from '../../core/webhook-signature.js';
import { webhookReceiver } from '../../engine/receivers/webhook.js';
import type { Receiver } from '../../engine/receivers/receiver.js';
import type { Clock } from '../../ports/clock.js';
import type { MetricsRegistry } from '../../engine/metrics.js';
import { nodeOutbound, type HostResolver, type WebhookProxy } from './outbound.js';

export interface NodeWebhookOptions {
  /** The secret in use (loadWebhookSecret). */
  secret: string;
  allowPrivate: boolean;
  clock: Clock;
  resolve?: HostResolver | undefined;
  /** An egress proxy for webhooks (protocol §17.4). */
  proxy?: WebhookProxy | undefined;
  /** Where connection counters go (the Node host's /metrics). */
  metrics?: MetricsRegistry;
}

export interface NodeWebhooks {
  receiver: Receiver;
  close(): Promise<void>;
}

export function nodeWebhooks(options: NodeWebhookOptions): NodeWebhooks {
  const connections = options.metrics?.counter('rivulet_webhook_connections_total', 'Connections opened to webhook receivers, by scheme');
  const resent = options.metrics?.counter(
    'rivulet_webhook_resent_total',
    'Webhook requests sent again because the kept-alive connection they went out on was found closed',
  );
  const http = nodeOutbound({
    allowPrivate: options.allowPrivate,
    ...(options.resolve ? { resolve: options.resolve } : {}),
    proxy: options.proxy,
    ...(connections ? { onConnection: (scheme: 'http' | 'https') => connections.inc({ scheme }) } : {}),
    ...(resent ? { onResend: () => resent.inc() } : {}),
  });
  // A KeyObject made once: given raw bytes, createHmac would turn them into a key on every delivery.
  const key = createSecretKey(webhookSecretKey(options.secret));
  // The same signature as the engine's WebCrypto default (tests check both against the
  // standardwebhooks package), without a thread-pool round trip per delivery.
  const sign = (id: string, timestamp: number, body: string) =>
    `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
  return { receiver: webhookReceiver({ http, secret: options.secret, clock: options.clock, sign }), close: () => http.close() };
}
