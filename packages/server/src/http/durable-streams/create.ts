/**
 * `PUT /v1/stream/{name}`: create a stream (docs/durable-streams.md "Create"). A new stream
 * answers 201; the same settings again answer 200 and write nothing; other settings answer 409.
 * The settings are one `durable-streams/configured` event, then the body's messages, then the
 * closure when `Stream-Closed: true` asks for it, in one atomic append.
 */
import type { EventInput, JsonObject } from '@rivulet/contract';
import type { HeaderReader } from '../request-headers.js';
import { empty, refuse, type Fields } from './answer.js';
import { messagesOf } from './bodies.js';
import { handleFork } from './fork.js';
import { CLOSED_TYPE, CONFIGURED_TYPE } from './messages.js';
import type { DsStreams } from './store.js';
import { configOf, headOf, type DsConfig, type DsState } from './state.js';
import { DEFAULT_CONTENT_TYPE, H, formatOffset, isJsonType, mediaType, parseCount, validContentType } from './wire.js';

export interface CreateRequest {
  projectId: string | null;
  path: string;
  headers: HeaderReader;
  body: () => Promise<Uint8Array>;
  /** Where the new stream is, for `Location`. */
  url: string;
}

/** The settings a PUT asks for, or the refusal of its header fields. */
export function requestedConfig(headers: HeaderReader): { config: DsConfig; closed: boolean } | Response {
  const given = headers.get('content-type');
  const config: DsConfig = { contentType: validContentType(given) ? given!.trim() : DEFAULT_CONTENT_TYPE };
  const ttl = headers.get(H.ttl.toLowerCase());
  const expiresAt = headers.get(H.expiresAt.toLowerCase());
  if (ttl !== null && expiresAt !== null) return refuse(400, 'Stream-TTL and Stream-Expires-At cannot both be given');
  if (ttl !== null) {
    const seconds = parseCount(ttl);
    if (seconds === null) return refuse(400, 'Stream-TTL must be a whole number of seconds');
    config.ttlSeconds = seconds;
  }
  if (expiresAt !== null) {
    if (!Number.isFinite(Date.parse(expiresAt))) return refuse(400, 'Stream-Expires-At must be a timestamp such as 2030-01-01T00:00:00Z');
    config.expiresAt = expiresAt;
  }
  return { config, closed: headers.get(H.closed.toLowerCase()) === 'true' };
}

function sameConfig(a: DsConfig, b: DsConfig): boolean {
  return mediaType(a.contentType) === mediaType(b.contentType) && a.ttlSeconds === b.ttlSeconds && a.expiresAt === b.expiresAt;
}

function fieldsOf(state: DsState): Fields {
  const fields: Fields = { 'content-type': configOf(state).contentType, [H.nextOffset]: formatOffset(headOf(state)) };
  if (state.closed) fields[H.closed] = 'true';
  return fields;
}

export async function handleCreate(streams: DsStreams, request: CreateRequest): Promise<Response> {
  const asked = requestedConfig(request.headers);
  if (asked instanceof Response) return asked;
  if (request.headers.get(H.forkedFrom.toLowerCase()) !== null) return handleFork(streams, { ...request, asked });
  if (request.headers.get(H.forkSubOffset.toLowerCase()) !== null) return refuse(400, 'Stream-Fork-Sub-Offset needs Stream-Forked-From');
  const body = await request.body();
  const messages = messagesOf(body, isJsonType(asked.config.contentType), true);
  if (!messages.ok) return refuse(400, messages.message);
  return streams.write(request.projectId, request.path, (state) => {
    if (state !== null) {
      if (state.softDeleted) return { answer: refuse(409, 'a deleted stream that forks still read cannot be created again') };
      const same = configOf(state).fork === undefined && sameConfig(configOf(state), asked.config) && state.closed === asked.closed;
      return { answer: same ? empty(200, fieldsOf(state)) : refuse(409, 'the stream exists with other settings') };
    }
    const settings: JsonObject = { contentType: asked.config.contentType };
    if (asked.config.ttlSeconds !== undefined) settings.ttlSeconds = asked.config.ttlSeconds;
    if (asked.config.expiresAt !== undefined) settings.expiresAt = asked.config.expiresAt;
    const inputs: EventInput[] = [{ type: CONFIGURED_TYPE, payload: settings }, ...messages.inputs];
    if (asked.closed) inputs.push({ type: CLOSED_TYPE, payload: {} });
    return {
      inputs,
      done: (created) => empty(201, { ...fieldsOf(created), location: request.url }),
    };
  });
}
