/**
 * The body of one webhook request (protocol §17.1): the run's stamp,
 * the delivery's identity and attempt, the subscription-configured event that configured the run,
 * and one committed event. A transform shapes only the event's type, payload and metadata; its
 * coordinates (path, offset, createdAt, idempotencyKey, source) stay the source's, so a receiver
 * deduplicates by (streamId, event.offset) whatever the transform does.
 */
import { pickDeliveryStamp, type CommittedEvent, type DeliveryStamp, type WebhookEnvelope } from '@rivulet/contract';
import type { ShapedEvent } from './filter.js';

export type { WebhookEnvelope };
/** The stamp part of an envelope. */
export type WebhookStamp = DeliveryStamp;

/** The committed event with the transform's type, payload and metadata; every other field as stored. */
export function shapedCommittedEvent(event: CommittedEvent, shaped: ShapedEvent): CommittedEvent {
  const out: CommittedEvent = { path: event.path, offset: event.offset, createdAt: event.createdAt, type: shaped.type };
  if (shaped.payload !== undefined) out.payload = shaped.payload;
  if (shaped.metadata !== undefined) out.metadata = shaped.metadata;
  if (event.idempotencyKey !== undefined) out.idempotencyKey = event.idempotencyKey;
  if (event.ephemeral !== undefined) out.ephemeral = event.ephemeral;
  if (event.source !== undefined) out.source = event.source;
  return out;
}

/**
 * An identifier safe in an HTTP header: characters outside printable ASCII are written as JSON
 * `\uXXXX` escapes. A delivery id is `delivery:<JSON array>`, so the escaped form is the same JSON
 * value; ids of ASCII keys (the usual case) are unchanged.
 */
export function headerSafeId(id: string): string {
  return id.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export function webhookEnvelope(stamp: WebhookStamp, configuredEvent: CommittedEvent, event: CommittedEvent, shaped: ShapedEvent): WebhookEnvelope {
  return {
    ...pickDeliveryStamp(stamp),
    deliveryId: headerSafeId(stamp.deliveryId),
    configuredEvent,
    event: shapedCommittedEvent(event, shaped),
  };
}
