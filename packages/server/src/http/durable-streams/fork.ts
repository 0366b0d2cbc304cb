/**
 * `PUT` with `Stream-Forked-From`: a fork (docs/durable-streams.md "Forks"). A fork is a stream of
 * its own that first reads its source's messages up to the fork offset, then its own. It keeps
 * only where it forked in its settings; the source keeps the set of its forks, and is only marked
 * deleted while any fork still reads it. A sub-offset forks inside the next message: on a JSON
 * stream it counts whole messages (each JSON value is one event here), on any other stream the
 * first bytes of the next message, which the fork keeps as its own first message.
 */
import { RivuletError, canonicalizePath, type EventInput, type JsonObject } from '@rivulet/contract';
import type { HeaderReader } from '../request-headers.js';
import { empty, refuse, type Fields } from './answer.js';
import { messagesOf } from './bodies.js';
import { CLOSED_TYPE, CONFIGURED_TYPE, FORK_ADDED_TYPE, bytePayload, messageBytes, messageInput } from './messages.js';
import { collect } from './read.js';
import type { DsStreams } from './store.js';
import { configOf, headOf, type DsConfig, type DsState, type ForkOrigin } from './state.js';
import { DS_PREFIX, H, isJsonType, mediaType, formatOffset, parseCount, parsePosition, validContentType } from './wire.js';

export interface ForkRequest {
  projectId: string | null;
  path: string;
  headers: HeaderReader;
  body: () => Promise<Uint8Array>;
  url: string;
  asked: { config: DsConfig; closed: boolean };
}

/** The source's Rivulet path from `Stream-Forked-From` (a URL path under /v1/stream/, or a name). */
function sourcePath(header: string): string {
  const trimmed = header.trim();
  const name = trimmed.startsWith(DS_PREFIX) ? trimmed.slice(DS_PREFIX.length - 1) : trimmed;
  return canonicalizePath(name, { decode: true });
}

function fieldsOf(state: DsState): Fields {
  const fields: Fields = { 'content-type': configOf(state).contentType, [H.nextOffset]: formatOffset(headOf(state)) };
  if (state.closed) fields[H.closed] = 'true';
  return fields;
}

function sameFork(existing: DsState, wanted: DsConfig, closed: boolean): boolean {
  const have = configOf(existing);
  const a = have.fork;
  const b = wanted.fork!;
  if (a === undefined || a.from !== b.from || a.subOffset !== b.subOffset) return false;
  if (b.askedOffset !== null && a.offset !== b.offset && a.askedOffset !== b.askedOffset) return false;
  return (
    mediaType(have.contentType) === mediaType(wanted.contentType) &&
    have.ttlSeconds === wanted.ttlSeconds &&
    have.expiresAt === wanted.expiresAt &&
    existing.closed === closed
  );
}

export async function handleFork(streams: DsStreams, request: ForkRequest): Promise<Response> {
  const { headers, projectId } = request;
  let from: string;
  try {
    from = sourcePath(headers.get(H.forkedFrom.toLowerCase())!);
  } catch (error) {
    if (error instanceof RivuletError) return refuse(400, `Stream-Forked-From: ${error.message}`);
    throw error;
  }
  const offsetHeader = headers.get(H.forkOffset.toLowerCase());
  const askedOffset = offsetHeader === null ? null : parsePosition(offsetHeader);
  if (offsetHeader !== null && askedOffset === null) return refuse(400, 'malformed Stream-Fork-Offset: use an offset this server answered');
  const subHeader = headers.get(H.forkSubOffset.toLowerCase());
  const subOffset = subHeader === null ? 0 : parseCount(subHeader);
  if (subOffset === null) return refuse(400, 'Stream-Fork-Sub-Offset must be a non-negative integer');
  if (subOffset > 0 && askedOffset === null) return refuse(400, 'Stream-Fork-Sub-Offset needs Stream-Fork-Offset');

  const source = await streams.load(projectId, from);
  if (source === null) return refuse(404, 'the source stream does not exist');
  if (source.softDeleted) return refuse(409, 'the source stream was deleted (its forks keep it readable, but it cannot be forked)');
  const sourceConfig = configOf(source);
  const given = headers.get('content-type');
  if (validContentType(given) && mediaType(given) !== mediaType(sourceConfig.contentType)) {
    return refuse(409, `a fork has its source's content type ${sourceConfig.contentType}`);
  }
  const json = isJsonType(sourceConfig.contentType);
  const head = headOf(source);
  let offset = askedOffset ?? head;
  if (offset > head) return refuse(400, 'Stream-Fork-Offset is beyond the end of the source stream');
  const prefix: EventInput[] = [];
  if (subOffset > 0) {
    const next = await collect(streams, projectId, from, source, offset);
    if (json) {
      if (subOffset > next.messages.length) return refuse(400, 'Stream-Fork-Sub-Offset is past the messages of the source');
      offset = next.messages[subOffset - 1]!.position!;
    } else {
      const first = next.messages[0];
      if (first === undefined) return refuse(400, 'Stream-Fork-Sub-Offset needs a message after Stream-Fork-Offset');
      const bytes = messageBytes(first);
      if (subOffset > bytes.length) return refuse(400, 'Stream-Fork-Sub-Offset is past the end of the message');
      prefix.push(messageInput(bytePayload(bytes.subarray(0, subOffset))));
    }
  }
  const origin: ForkOrigin = { from, offset, askedOffset, subOffset };
  const config: DsConfig = { contentType: sourceConfig.contentType, fork: origin };
  const ttl = request.asked.config.ttlSeconds ?? (request.asked.config.expiresAt === undefined ? sourceConfig.ttlSeconds : undefined);
  const expiresAt = request.asked.config.expiresAt ?? (request.asked.config.ttlSeconds === undefined ? sourceConfig.expiresAt : undefined);
  if (ttl !== undefined) config.ttlSeconds = ttl;
  if (expiresAt !== undefined) config.expiresAt = expiresAt;

  const body = await request.body();
  const messages = messagesOf(body, json, true);
  if (!messages.ok) return refuse(400, messages.message);
  let created = false;
  const answer = await streams.write(projectId, request.path, (state) => {
    if (state !== null) {
      if (state.softDeleted) return { answer: refuse(409, 'a deleted stream that forks still read cannot be created again') };
      return { answer: sameFork(state, config, request.asked.closed) ? empty(200, fieldsOf(state)) : refuse(409, 'the stream exists with other settings') };
    }
    const settings: JsonObject = { contentType: config.contentType, fork: { ...origin } };
    if (config.ttlSeconds !== undefined) settings.ttlSeconds = config.ttlSeconds;
    if (config.expiresAt !== undefined) settings.expiresAt = config.expiresAt;
    const inputs: EventInput[] = [{ type: CONFIGURED_TYPE, payload: settings }, ...prefix, ...messages.inputs];
    if (request.asked.closed) inputs.push({ type: CLOSED_TYPE, payload: {} });
    return {
      inputs,
      done: (fork) => {
        created = true;
        return empty(201, { ...fieldsOf(fork), location: request.url });
      },
    };
  });
  if (created) await streams.service.append(projectId, from, [{ type: FORK_ADDED_TYPE, payload: { path: request.path } }]);
  return answer;
}

