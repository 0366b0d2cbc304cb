/**
 * The JSON text of a webhook body (protocol §17.1), written from the parts' own texts instead of
 * serialising a freshly built envelope: the configure event and, when no transform changed it, the
 * delivered event are spliced in as the text they were stored as (engine/event-json.ts), and only
 * the stamp's few values are serialised here. Reads of the stream answer the same stored texts.
 *
 * It equals `JSON.stringify(webhookEnvelope(…))` of core/webhook-envelope.ts byte for byte
 * (webhook-body.test.ts compares them, unicode and large payloads included): the keys in the
 * envelope's order, and an event the transform left alone stored by the append path as
 * `JSON.stringify` of its fields in the order `shapedCommittedEvent` copies them
 * (core/decide-append.ts `buildEvent`). An event the transform shaped is serialised as before.
 */
import type { CommittedEvent } from '@rivulet/contract';
import type { ShapedEvent } from '../../core/filter.js';
import { headerSafeId, shapedCommittedEvent, type WebhookStamp } from '../../core/webhook-envelope.js';
import { committedJson } from '../event-json.js';

/** The delivered event as the envelope carries it: the stored text when type, payload and metadata are the stored ones. */
export function envelopeEventJson(event: CommittedEvent, shaped: ShapedEvent): string {
  if (shaped.type === event.type && shaped.payload === event.payload && shaped.metadata === event.metadata) return committedJson(event);
  return JSON.stringify(shapedCommittedEvent(event, shaped));
}

/** The body of one webhook request and the header-safe delivery id it carries (`webhook-id`). */
export function webhookBody(stamp: WebhookStamp, configuredEvent: CommittedEvent, event: CommittedEvent, shaped: ShapedEvent): { body: string; id: string } {
  const id = headerSafeId(stamp.deliveryId);
  const body =
    `{"projectId":${JSON.stringify(stamp.projectId)},"path":${JSON.stringify(stamp.path)},"streamId":${JSON.stringify(stamp.streamId)}` +
    `,"streamCreatedAt":${JSON.stringify(stamp.streamCreatedAt)},"subscriptionKey":${JSON.stringify(stamp.subscriptionKey)}` +
    `,"cursorChangedAtSourceOffset":${JSON.stringify(stamp.cursorChangedAtSourceOffset)},"deliveryId":${JSON.stringify(id)}` +
    `,"attempt":${JSON.stringify(stamp.attempt)},"configuredEvent":${committedJson(configuredEvent)}` +
    `,"event":${envelopeEventJson(event, shaped)}}`;
  return { body, id };
}
