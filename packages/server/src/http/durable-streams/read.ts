/**
 * `GET /v1/stream/{name}`: catch-up reads and long-poll (docs/durable-streams.md "Read",
 * "Long-poll"), and `HEAD`. A read answers the messages after the reader's offset, at most
 * READ_BUDGET bytes of them, with the offset to read from next; `Stream-Up-To-Date` says it
 * reached the head, and `Stream-Closed` that nothing will ever follow.
 */
import { whenAborted } from '../../core/when-aborted.js';
import type { DsStreams } from './store.js';
import { empty, gone, notFound, refuse, type Fields } from './answer.js';
import { CLOSED_TYPE, isMessage, messageBytes, messageJson, parseRaw, type ParsedEvent } from './messages.js';
import { baseOf, configOf, headOf, type DsState } from './state.js';
import { H, formatOffset, isJsonType, parseOffset, responseCursor, type OffsetQuery } from './wire.js';

const PAGE = 500;
const READ_BUDGET = 1 << 20;

export interface Collected {
  messages: ParsedEvent[];
  /** The offset the reader goes on from: the last event looked at, or the head when caught up. */
  next: number;
  upToDate: boolean;
}

/**
 * Messages after the reader's offset `after`, up to the read budget: on a fork, first what it
 * inherits (docs/durable-streams.md "Forks"), then its own, whose offsets are shifted by its base.
 */
export async function collect(streams: DsStreams, projectId: string | null, path: string, state: DsState, after: number): Promise<Collected> {
  const base = baseOf(state);
  const origin = state.config?.fork;
  const inherited = origin !== undefined && after < base ? await inheritedMessages(streams, projectId, origin.from, after, base) : [];
  const own = await ownMessages(streams, projectId, path, base, Math.max(0, after - base), Number.MAX_SAFE_INTEGER);
  return { messages: [...inherited, ...own.messages], next: base + own.next, upToDate: own.upToDate };
}

/** A source's messages in (after, cap], its own inheritance included, however deep. */
export async function inheritedMessages(streams: DsStreams, projectId: string | null, path: string, after: number, cap: number): Promise<ParsedEvent[]> {
  const source = await streams.load(projectId, path, true);
  if (source === null) return [];
  const base = baseOf(source);
  const origin = source.config?.fork;
  const inherited = origin !== undefined && after < base ? await inheritedMessages(streams, projectId, origin.from, after, Math.min(cap, base)) : [];
  if (cap <= base) return inherited;
  const own = await ownMessages(streams, projectId, path, base, Math.max(0, after - base), cap - base);
  return [...inherited, ...own.messages];
}

/** A stream's own messages in (after, upTo] of its Rivulet offsets, up to the read budget. */
async function ownMessages(streams: DsStreams, projectId: string | null, path: string, base: number, after: number, upTo: number): Promise<Collected> {
  const messages: ParsedEvent[] = [];
  let cursor = after;
  let bytes = 0;
  for (;;) {
    const page = await streams.service.read(projectId, path, {
      afterOffset: cursor,
      beforeOffset: upTo === Number.MAX_SAFE_INTEGER ? undefined : upTo + 1,
      limit: PAGE,
      includeEphemeral: false,
    });
    for (const raw of page.events) {
      cursor = raw.offset;
      const event = parseRaw(raw);
      if (!isMessage(event.type)) continue;
      event.position = base + raw.offset;
      messages.push(event);
      bytes += raw.json.length;
      if (bytes >= READ_BUDGET) return { messages, next: cursor, upToDate: cursor >= page.streamMaxOffset };
    }
    if (page.events.length < PAGE) return { messages, next: Math.max(cursor, Math.min(upTo, page.streamMaxOffset)), upToDate: true };
  }
}

const encoder = new TextEncoder();

export function renderBody(messages: readonly ParsedEvent[], json: boolean): Uint8Array<ArrayBuffer> {
  if (json) return encoder.encode(`[${messages.map(messageJson).join(',')}]`);
  const parts = messages.map(messageBytes);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

export interface ReadRequest {
  projectId: string | null;
  path: string;
  query: URLSearchParams;
  ifNoneMatch: string | null;
  longPollTimeoutMs: number;
  now: number;
  signal: AbortSignal | undefined;
}

/** The `offset` of a read, or the refusal of a malformed one. */
export function offsetOf(query: URLSearchParams): OffsetQuery | null | Response {
  const all = query.getAll('offset');
  if (all.length === 0) return null;
  if (all.length > 1) return refuse(400, 'give one offset parameter');
  const parsed = parseOffset(all[0]!);
  return parsed ?? refuse(400, `malformed offset "${all[0]}": use -1, now, or an offset this server answered`);
}

export async function handleRead(streams: DsStreams, request: ReadRequest): Promise<Response> {
  const { projectId, path, query } = request;
  const offset = offsetOf(query);
  if (offset instanceof Response) return offset;
  const live = query.get('live');
  if (live === 'long-poll' && offset === null) return refuse(400, 'long-poll needs an offset');
  const state = await streams.load(projectId, path);
  if (state === null) return notFound();
  if (state.softDeleted) return gone();
  streams.touch(projectId, path);
  const config = configOf(state);
  const json = isJsonType(config.contentType);
  if (offset?.kind === 'now' && live !== 'long-poll') {
    const fields: Fields = { 'content-type': config.contentType, [H.nextOffset]: formatOffset(headOf(state)), [H.upToDate]: 'true', 'cache-control': 'no-store' };
    if (state.closed) fields[H.closed] = 'true';
    return new Response(json ? '[]' : '', { status: 200, headers: fields });
  }
  const after = offset === null || offset.kind === 'start' ? 0 : offset.kind === 'now' ? headOf(state) : offset.offset;
  let found = await collect(streams, projectId, path, state, after);
  let current: DsState = state;
  if (live === 'long-poll') {
    const cursor = responseCursor(request.now, query.get('cursor'));
    if (found.messages.length === 0) {
      const waited = current.closed ? 'closed' : await waitForMore(streams, request, current, found.next);
      if (waited === 'gone') return notFound();
      const reloaded = await streams.load(projectId, path);
      if (reloaded === null) return notFound();
      current = reloaded;
      found = await collect(streams, projectId, path, current, after);
      if (found.messages.length === 0) {
        const fields: Fields = { [H.nextOffset]: formatOffset(found.next), [H.upToDate]: 'true', [H.cursor]: cursor };
        if (current.closed) fields[H.closed] = 'true';
        return empty(204, fields);
      }
    }
    return answerMessages(current, found, json, offset, request.ifNoneMatch, { [H.cursor]: cursor });
  }
  return answerMessages(current, found, json, offset, request.ifNoneMatch, {});
}

function answerMessages(state: DsState, found: Collected, json: boolean, offset: OffsetQuery | null, ifNoneMatch: string | null, extra: Fields): Response {
  const closedHere = state.closed && found.upToDate && found.next >= headOf(state);
  const start = offset === null || offset.kind === 'start' ? '-1' : formatOffset(offset.kind === 'at' ? offset.offset : found.next);
  const etag = `"${state.streamId}:${start}:${formatOffset(found.next)}${closedHere ? ':c' : ''}"`;
  if (ifNoneMatch !== null && ifNoneMatch === etag) return empty(304, { etag });
  const fields: Fields = { 'content-type': configOf(state).contentType, [H.nextOffset]: formatOffset(found.next), etag, ...extra };
  if (found.upToDate) fields[H.upToDate] = 'true';
  if (closedHere) fields[H.closed] = 'true';
  return new Response(renderBody(found.messages, json) as Uint8Array<ArrayBuffer>, { status: 200, headers: fields });
}

/**
 * Waits until a message or the closure is appended after `after`, the long-poll timeout passes,
 * or the stream is destroyed.
 */
export async function waitForMore(
  streams: DsStreams,
  request: { projectId: string | null; path: string; longPollTimeoutMs: number; signal: AbortSignal | undefined },
  state: DsState,
  after: number,
): Promise<'more' | 'timeout' | 'gone' | 'closed'> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), request.longPollTimeoutMs);
  const stopListening = whenAborted(request.signal, () => abort.abort());
  try {
    const own = Math.max(0, after - baseOf(state));
    const items = streams.service.tail(request.projectId, request.path, { afterOffset: own, expectedStreamId: state.streamId, signal: abort.signal });
    try {
      for await (const item of items) {
        if (item.kind === 'destroyed') return 'gone';
        if (item.kind !== 'events') continue;
        for (const raw of item.events) {
          const type = parseRaw(raw).type;
          if (type === CLOSED_TYPE) return 'closed';
          if (isMessage(type)) return 'more';
        }
      }
    } catch (error) {
      // A tail that crosses to another object (the Worker host) fails when it is cut: that is the timeout.
      if (!abort.signal.aborted) throw error;
    }
    return 'timeout';
  } finally {
    clearTimeout(timer);
    stopListening();
  }
}

export async function handleHead(streams: DsStreams, projectId: string | null, path: string): Promise<Response> {
  const state = await streams.load(projectId, path);
  if (state === null) return empty(404, {});
  if (state.softDeleted) return empty(410, {});
  const config = configOf(state);
  const fields: Fields = {
    'content-type': config.contentType,
    [H.nextOffset]: formatOffset(headOf(state)),
    'cache-control': 'no-store',
    etag: `"${state.streamId}:-1:${formatOffset(headOf(state))}${state.closed ? ':c' : ''}"`,
  };
  if (state.closed) fields[H.closed] = 'true';
  if (config.ttlSeconds !== undefined) fields[H.ttl] = String(config.ttlSeconds);
  if (config.expiresAt !== undefined) fields[H.expiresAt] = config.expiresAt;
  return empty(200, fields);
}
