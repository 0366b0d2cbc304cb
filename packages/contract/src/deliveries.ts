/**
 * What receivers get (protocol §17.1, §18.4): the stamp every delivery carries, the
 * itx-call batch and the webhook envelope. Shared by the server that sends them and the SDK that
 * receives them. Events carry the transform's type, payload and metadata; their coordinates (path,
 * offset, createdAt, idempotencyKey, source) stay the source's, so a receiver deduplicates by
 * (streamId, event.offset) whatever the transform does.
 */
import type { CommittedEvent } from './events.js';

export interface DeliveryStamp {
  projectId: string | null;
  /** The source stream's path. */
  path: string;
  streamId: string;
  streamCreatedAt: string;
  subscriptionKey: string;
  cursorChangedAtSourceOffset: number;
  /** `delivery:[streamId, key, cursorChangedAt, firstOffset, lastOffset]`; for webhooks also the `webhook-id` header, stable across retries of one event in one run. */
  deliveryId: string;
  /** 1 for the first try of this batch in this run, then 2, 3, … */
  attempt: number;
}

/** The stamp fields of `from`, and nothing else of it (a sender's context holds much more). */
export function pickDeliveryStamp(from: DeliveryStamp): DeliveryStamp {
  return {
    projectId: from.projectId,
    path: from.path,
    streamId: from.streamId,
    streamCreatedAt: from.streamCreatedAt,
    subscriptionKey: from.subscriptionKey,
    cursorChangedAtSourceOffset: from.cursorChangedAtSourceOffset,
    deliveryId: from.deliveryId,
    attempt: from.attempt,
  };
}

/** The batch an itx-call subscription hands a worker's method (protocol §18.4). */
export interface ItxBatch extends DeliveryStamp {
  streamMaxOffset: number;
  events: CommittedEvent[];
}

/** The body of one webhook request (protocol §17.1). */
export interface WebhookEnvelope extends DeliveryStamp {
  /** The subscription-configured event that configured this delivery run. */
  configuredEvent: CommittedEvent;
  event: CommittedEvent;
}
