/**
 * The Durable Streams wire vocabulary (docs/durable-streams.md "Wire"): header names, the offset
 * form, the long-poll cursor and content-type rules. Pure: no I/O, time comes in as an argument.
 *
 * An offset is the position of the last event a reader has seen, as 16 decimal digits, then `_`
 * and 16 zeros (a half kept for later, the shape other servers of the protocol use), so offsets
 * compare as strings exactly as positions compare as numbers; `-1` is the start and `now` the
 * tail.
 */

export const DS_PREFIX = '/v1/stream/';

export const H = {
  nextOffset: 'Stream-Next-Offset',
  upToDate: 'Stream-Up-To-Date',
  cursor: 'Stream-Cursor',
  closed: 'Stream-Closed',
  seq: 'Stream-Seq',
  ttl: 'Stream-TTL',
  expiresAt: 'Stream-Expires-At',
  producerId: 'Producer-Id',
  producerEpoch: 'Producer-Epoch',
  producerSeq: 'Producer-Seq',
  expectedSeq: 'Producer-Expected-Seq',
  receivedSeq: 'Producer-Received-Seq',
  forkedFrom: 'Stream-Forked-From',
  forkOffset: 'Stream-Fork-Offset',
  forkSubOffset: 'Stream-Fork-Sub-Offset',
  sseEncoding: 'Stream-SSE-Data-Encoding',
} as const;

/** The request fields an append reads, by their lower-case names (how header readers take them). */
export const LOWER = {
  closed: H.closed.toLowerCase(),
  seq: H.seq.toLowerCase(),
  producerId: H.producerId.toLowerCase(),
  producerEpoch: H.producerEpoch.toLowerCase(),
  producerSeq: H.producerSeq.toLowerCase(),
} as const;

const OFFSET_DIGITS = 16;
const RESERVED = '_0000000000000000';
const OFFSET_PATTERN = /^\d{16}_0{16}$/;

export function formatOffset(offset: number): string {
  return String(offset).padStart(OFFSET_DIGITS, '0') + RESERVED;
}

/** A position in offset form, or null. */
export function parsePosition(text: string): number | null {
  if (!OFFSET_PATTERN.test(text)) return null;
  const offset = Number(text.slice(0, OFFSET_DIGITS));
  return Number.isSafeInteger(offset) ? offset : null;
}

/** What an `offset` query parameter asks for, or null when it is not an offset of this server. */
export type OffsetQuery = { kind: 'start' } | { kind: 'now' } | { kind: 'at'; offset: number };

export function parseOffset(text: string): OffsetQuery | null {
  if (text === '-1') return { kind: 'start' };
  if (text === 'now') return { kind: 'now' };
  const offset = parsePosition(text);
  return offset === null ? null : { kind: 'at', offset };
}

const JSON_MEDIA_TYPE = 'application/json';

/** The media type without parameters, lower case (`Text/Plain; charset=x` → `text/plain`). */
export function mediaType(contentType: string | null | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

export function isJsonType(contentType: string): boolean {
  return contentType === JSON_MEDIA_TYPE || mediaType(contentType) === JSON_MEDIA_TYPE;
}

/** SSE carries text and JSON as they are; any other content type as base64 (one frame per message). */
export function isTextType(contentType: string): boolean {
  const type = mediaType(contentType);
  return type.startsWith('text/') || type === 'application/json';
}

/** A content type worth keeping (`type/subtype`, optional parameters); anything else is the default. */
export function validContentType(contentType: string | null): boolean {
  return contentType !== null && /^[\w.+-]+\/[\w.+-]+/.test(contentType.trim());
}

export const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

/** Strict non-negative decimal integers, without signs, leading zeros or exponents. */
export function parseCount(text: string): number | null {
  if (!/^(0|[1-9]\d*)$/.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : null;
}

const CURSOR_EPOCH_MS = Date.UTC(2024, 0, 1);
const CURSOR_INTERVAL_MS = 20_000;

/**
 * The cursor a live answer carries: the current 20-second interval since a fixed epoch, or, when
 * the client already sent that interval or a later one, one past what it sent, so that a cache in
 * front never answers two successive polls from one entry.
 */
export function responseCursor(nowMs: number, clientCursor: string | null): string {
  const current = Math.floor((nowMs - CURSOR_EPOCH_MS) / CURSOR_INTERVAL_MS);
  const sent = clientCursor !== null && /^\d{1,15}$/.test(clientCursor) ? Number(clientCursor) : -1;
  return String(sent >= current ? sent + 1 : current);
}
