/**
 * Turning a request body into message events (docs/durable-streams.md "Messages"): on a JSON
 * stream the body must be JSON and an array is one message per element (an empty array is
 * refused on append and creates nothing on create); on any other stream the body is one message
 * of its exact bytes.
 */
import type { EventInput, JsonValue } from '@rivulet/contract';
import { bytePayload, messageInput } from './messages.js';

export type BodyVerdict = { ok: true; inputs: EventInput[] } | { ok: false; message: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function messagesOf(body: Uint8Array, json: boolean, creating: boolean): BodyVerdict {
  if (body.length === 0) return { ok: true, inputs: [] };
  if (!json) return { ok: true, inputs: [messageInput(bytePayload(body))] };
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(body));
  } catch {
    return { ok: false, message: 'invalid JSON: the body of a JSON stream must be one JSON value' };
  }
  if (!Array.isArray(value)) return { ok: true, inputs: [messageInput({ value: value as JsonValue })] };
  if (value.length === 0 && !creating) return { ok: false, message: 'empty arrays are not allowed: an append needs at least one message' };
  return { ok: true, inputs: (value as JsonValue[]).map((element) => messageInput({ value: element })) };
}
