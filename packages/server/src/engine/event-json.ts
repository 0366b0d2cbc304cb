/**
 * The JSON text of a committed event. The actor keeps the text each fresh event was stored as, so
 * that answering an append or a live reader does not serialise the event a second time; events
 * read back or repeated are serialised on demand.
 *
 * The text rides on the event under a symbol, as a non-enumerable property: what JSON.stringify,
 * spreads, Object.assign, structuredClone and deep equality see of the event is unchanged (a copy
 * of an event is serialised on demand, as before). This replaced a WeakMap, whose set was one of
 * the larger costs of an append (about 0.7 µs, much of it in the collector).
 *
 * A delivery that changes nothing of an event cuts its payload and metadata out of that text
 * (`storedFieldsJson`) instead of serialising them again: a copy's text is spliced from them
 * (core/copy-builder.ts), and the delivery's size is measured on them (delivery/prepare.ts). A
 * copy batch's source events read with SQL carry no text: collect.ts hands their texts over beside
 * them, given to `storedFieldsJson` as its second argument.
 */
import type { CommittedEvent } from '@rivulet/contract';

const TEXT = Symbol('rivulet.committedJson');

type WithText = CommittedEvent & { [TEXT]?: string };

export function rememberJson(event: CommittedEvent, json: string): void {
  Object.defineProperty(event, TEXT, { value: json, writable: true });
}

export function committedJson(event: CommittedEvent): string {
  return (event as WithText)[TEXT] ?? JSON.stringify(event);
}

/**
 * The stored text of an event's payload and metadata members, `,"payload":…,"metadata":…` (each
 * present only when the event has it; '' when neither), cut from the text it was stored as. The
 * append path stores `JSON.stringify` of core/decide-append.ts `buildEvent`: path, offset,
 * createdAt, type, payload, metadata, idempotencyKey, ephemeral, source, in that order, so the
 * members sit between a head and a tail rebuilt here from the event's other fields. Undefined (the
 * caller serialises instead) when the event has no stored text, is ephemeral or carries a source,
 * has members other than these, or when the text does not begin, end and continue as that order
 * says (a row stored in another order is serialised as before).
 *
 * The cut equals what serialising the parsed members again would write: `JSON.stringify` of
 * `JSON.parse` of its own output is the same text (stored-fields-json.test.ts holds it on generated events).
 */
export function storedFieldsJson(event: CommittedEvent, text: string | undefined = (event as WithText)[TEXT]): string | undefined {
  if (text === undefined || event.source !== undefined || event.ephemeral !== undefined) return undefined;
  // The head, member by member where it stands (no head string built): `{"path":…,"offset":…,
  // "createdAt":…,"type":…`. Path, time and type repeat from event to event: their JSON is cached.
  let at = 0;
  const path = jsonOf(paths, event.path);
  if (!text.startsWith(path, at)) return undefined;
  at += path.length;
  const offset = `,"offset":${event.offset},"createdAt":`;
  if (!text.startsWith(offset, at)) return undefined;
  at += offset.length;
  const createdAt = jsonOf(times, event.createdAt);
  if (!text.startsWith(createdAt, at)) return undefined;
  at += createdAt.length;
  const type = jsonOf(types, event.type);
  if (!text.startsWith(type, at)) return undefined;
  at += type.length;
  // The tail: `,"idempotencyKey":…}` or `}`.
  const key = event.idempotencyKey === undefined ? '' : JSON.stringify(event.idempotencyKey);
  const end = text.length - 1 - (key === '' ? 0 : KEY.length + key.length);
  if (end < at || text.charCodeAt(text.length - 1) !== 0x7d) return undefined;
  if (key !== '' && !(text.startsWith(KEY, end) && text.startsWith(key, end + KEY.length))) return undefined;
  // Between them only payload and metadata, payload first: the event has no other member.
  const members = 4 + (event.payload !== undefined ? 1 : 0) + (event.metadata !== undefined ? 1 : 0) + (key === '' ? 0 : 1);
  if (Object.keys(event).length !== members) return undefined;
  const fields = text.slice(at, end);
  const first = event.payload !== undefined ? PAYLOAD : event.metadata !== undefined ? METADATA : '';
  if (first === '' ? fields !== '' : !fields.startsWith(first)) return undefined;
  return fields;
}

/** A head member's lead-in and the JSON of its string, kept for the last string asked. */
function jsonOf(cache: { lead: string; last: string; json: string }, value: string): string {
  if (cache.last !== value || cache.json === '') {
    cache.last = value;
    cache.json = `${cache.lead}${JSON.stringify(value)}`;
  }
  return cache.json;
}

const paths = { lead: '{"path":', last: '', json: '' };
const times = { lead: '', last: '', json: '' };
const types = { lead: ',"type":', last: '', json: '' };
const KEY = ',"idempotencyKey":';
const PAYLOAD = ',"payload":';
const METADATA = ',"metadata":';
