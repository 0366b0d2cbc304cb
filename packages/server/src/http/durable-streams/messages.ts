/**
 * How Durable Streams messages live in a Rivulet stream (docs/durable-streams.md "One namespace"):
 * each message is one ordinary event of type `durable-streams/message`; the stream's settings and
 * its closure are events of their own. Bytes that are valid UTF-8 are kept as `{"text"}`, any other
 * bytes as `{"base64"}`, a JSON message as `{"value"}`, so every byte reads back exactly.
 *
 * Any other event reads back in a documented form: the committed event as a JSON value on a JSON
 * stream, or its JSON text and a newline on a byte stream. The core control events of Rivulet
 * (`events.iterate.com/stream/*`) and this module's own bookkeeping events are not messages.
 */
import type { EventInput, JsonObject } from '@rivulet/contract';
import type { RawEvent } from '../../engine/stream-store.js';

export const MESSAGE_TYPE = 'durable-streams/message';
export const CONFIGURED_TYPE = 'durable-streams/configured';
export const CLOSED_TYPE = 'durable-streams/closed';
/** On a source stream: a fork of it was created, or removed (docs/durable-streams.md "Forks"). */
export const FORK_ADDED_TYPE = 'durable-streams/fork-added';
export const FORK_REMOVED_TYPE = 'durable-streams/fork-removed';
/** A source deleted while forks still read it: gone for its own clients, kept for the forks. */
export const DELETED_TYPE = 'durable-streams/deleted';
const OWN_NAMESPACE = 'durable-streams/';
const CORE_NAMESPACE = 'events.iterate.com/stream/';

/** Who wrote an append, kept in the metadata of its last event (docs/durable-streams.md "Producers"). */
export interface ProducerStamp {
  id: string;
  epoch: number;
  seq: number;
}

/** The part of an event this layer reads: enough to fold its state and to answer reads. */
export interface ParsedEvent {
  offset: number;
  type: string;
  createdAt: string;
  payload: Record<string, unknown> | undefined;
  metadata: Record<string, unknown> | undefined;
  json: string;
  /** The reader's offset of this event (a fork's own events are shifted, state.ts `baseOf`). */
  position?: number;
}

export function parseRaw(raw: RawEvent): ParsedEvent {
  const event = JSON.parse(raw.json) as {
    type: string;
    createdAt: string;
    payload?: Record<string, unknown>;
    metadata?: Record<string, unknown>;
  };
  return { offset: raw.offset, type: event.type, createdAt: event.createdAt, payload: event.payload, metadata: event.metadata, json: raw.json };
}

/** Whether an event is a message to Durable Streams readers (see the header). */
export function isMessage(type: string): boolean {
  if (type === MESSAGE_TYPE) return true;
  return !type.startsWith(OWN_NAMESPACE) && !type.startsWith(CORE_NAMESPACE);
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

/** Base64 without node:buffer (the Worker host has none): through a binary string, in slices. */
export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function bytePayload(bytes: Uint8Array): JsonObject {
  try {
    return { text: strictUtf8.decode(bytes) };
  } catch {
    return { base64: toBase64(bytes) };
  }
}

/** The bytes a message carries on a byte stream. */
export function messageBytes(event: ParsedEvent): Uint8Array {
  if (event.type === MESSAGE_TYPE && event.payload !== undefined) {
    const { text, base64, value } = event.payload;
    if (typeof text === 'string') return encoder.encode(text);
    if (typeof base64 === 'string') return fromBase64(base64);
    if (value !== undefined) return encoder.encode(JSON.stringify(value));
  }
  return encoder.encode(`${event.json}\n`);
}

/** The JSON text of a message on a JSON stream. */
export function messageJson(event: ParsedEvent): string {
  if (event.type === MESSAGE_TYPE && event.payload !== undefined) {
    const { text, base64, value } = event.payload;
    if (value !== undefined) return JSON.stringify(value);
    if (typeof text === 'string') return JSON.stringify(text);
    if (typeof base64 === 'string') return JSON.stringify(base64);
  }
  return event.json;
}

export function messageInput(payload: JsonObject, metadata?: JsonObject): EventInput {
  return metadata === undefined ? { type: MESSAGE_TYPE, payload } : { type: MESSAGE_TYPE, payload, metadata };
}

/** The metadata key under which this layer stamps its bookkeeping on an event. */
export const STAMP_KEY = 'durableStreams';

export interface Stamp {
  producer?: ProducerStamp;
  seq?: string;
}

export function stampJson(stamp: Stamp): JsonObject {
  const json: JsonObject = {};
  if (stamp.producer !== undefined) json.producer = { ...stamp.producer };
  if (stamp.seq !== undefined) json.seq = stamp.seq;
  return json;
}

export function stampOf(event: { metadata?: Record<string, unknown> | undefined }): Stamp | undefined {
  const stamp = event.metadata?.[STAMP_KEY];
  return stamp !== null && typeof stamp === 'object' ? (stamp as Stamp) : undefined;
}
