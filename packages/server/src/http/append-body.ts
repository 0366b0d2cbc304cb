/**
 * The append request and answer (protocol §4, POST /v1/streams/{path}), shared by the Hono route and
 * the Node host's native append path so that both validate and answer alike.
 */
import {
  EventBatchSchema,
  EventInputSchema,
  parseOrThrow,
  plainEventBatch,
  plainEventInput,
  type CommittedEvent,
  type EventInput,
} from '@rivulet/contract';
import { committedJson } from '../engine/event-json.js';

/**
 * One event or an array; judged by shape first, so that a failure names the field. The common
 * events are checked by hand (plainEventInput); anything else, and every failure, is the schema's.
 */
export function parseAppendBody(body: unknown): EventInput[] {
  if (Array.isArray(body)) return plainEventBatch(body) ?? parseOrThrow(EventBatchSchema, body, 'events');
  return [plainEventInput(body) ?? parseOrThrow(EventInputSchema, body, 'event')];
}

/** `{"events": [...]}` built from the JSON text each fresh event was stored as. */
export function appendAnswer(events: readonly CommittedEvent[]): string {
  return `{"events":[${events.map(committedJson).join(',')}]}`;
}
