/**
 * The append request and answer (API.md §3 POST /v1/streams/{path}), shared by the Hono route and
 * the Node host's native append path so that both validate and answer alike.
 */
import { EventBatchSchema, EventInputSchema, parseOrThrow, type CommittedEvent, type EventInput } from '@rivulet/contract';
import { committedJson } from '../engine/event-json.js';

/** One event or an array; judged by shape first, so that a failure names the field. */
export function parseAppendBody(body: unknown): EventInput[] {
  return Array.isArray(body) ? parseOrThrow(EventBatchSchema, body, 'events') : [parseOrThrow(EventInputSchema, body, 'event')];
}

/** `{"events": [...]}` built from the JSON text each fresh event was stored as. */
export function appendAnswer(events: readonly CommittedEvent[]): string {
  return `{"events":[${events.map(committedJson).join(',')}]}`;
}
