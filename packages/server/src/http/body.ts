/**
 * Reading a JSON request body at the edge: content type, a byte cap enforced while reading, strict
 * UTF-8, a nesting bound checked before JSON.parse (deep input overflows recursive code later,
 * protocol §1.1), and clear INVALID_INPUT / PAYLOAD_TOO_LARGE answers instead of crashes.
 */
import { Limits, RivuletError } from '@rivulet/contract';
import { ClientAborted } from './errors.js';
import type { HeaderReader } from './request-headers.js';

export function requireJsonContentType(contentType: string | null | undefined): void {
  // What clients nearly always send, checked before any string work.
  if (contentType === 'application/json' || contentType === 'application/json; charset=utf-8') return;
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new RivuletError(
      'INVALID_INPUT',
      `request body must be JSON: send content-type: application/json (got ${contentType ? `"${contentType}"` : 'none'})`,
    );
  }
}

export function tooLarge(limit: number): RivuletError {
  return new RivuletError('PAYLOAD_TOO_LARGE', `request body is larger than ${limit} bytes`, { limit });
}

/** Refuses a body whose declared length is over the cap before any of it is read. */
export function checkDeclaredLength(headers: HeaderReader, maxBytes: number): void {
  const declared = headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes);
}

const EMPTY = new Uint8Array(0);

/**
 * The body's bytes, for a request whose declared length (if any) is already within the cap. A
 * chunked body is counted while it is read and refused as soon as it passes `maxBytes`; the caller
 * still checks the length of what was read.
 */
export async function readBodyBytes(request: Request, headers: HeaderReader, maxBytes: number): Promise<Uint8Array> {
  // A declared length is read in one go. On Node this must not touch `request.body`, which would
  // build the web stream machinery, the largest cost of a small append.
  try {
    if (headers.get('content-length') !== null) return new Uint8Array(await request.arrayBuffer());
    if (request.body) return await readCapped(request.body, maxBytes);
    return EMPTY;
  } catch (error) {
    if (error instanceof RivuletError) throw error;
    // Reading a request's own body fails only when its client went away mid-body.
    throw new ClientAborted(error);
  }
}

export async function readBodyText(request: Request, headers: HeaderReader, maxBytes: number): Promise<string> {
  checkDeclaredLength(headers, maxBytes);
  const bytes = await readBodyBytes(request, headers, maxBytes);
  if (bytes.byteLength > maxBytes) throw tooLarge(maxBytes);
  return decodeBody(bytes);
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Strict UTF-8: a malformed body is INVALID_INPUT, never replacement characters. */
export function decodeBody(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new RivuletError('INVALID_INPUT', 'request body is not valid UTF-8');
  }
}

async function readCapped(body: ReadableStream<Uint8Array>, maxBytes: number): Promise<Uint8Array> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return bytes;
}

/** Deepest array/object nesting of a JSON text (strings skipped), or -1 as soon as it passes `limit`. */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * Whether a text has at most `limit` opening brackets, strings included: then it cannot nest deeper
 * than `limit`. Counted with indexOf, several times cheaper than the walk of jsonDepthExceeds, which
 * is left for texts with more brackets.
 */
function fewOpenings(text: string, limit: number): boolean {
  let n = 0;
  for (let i = text.indexOf('{'); i !== -1; i = text.indexOf('{', i + 1)) if (++n > limit) return false;
  for (let i = text.indexOf('['); i !== -1; i = text.indexOf('[', i + 1)) if (++n > limit) return false;
  return true;
}

/** Whether every number in a parsed JSON value is finite (its nesting is already bounded). */
function allFinite(value: unknown): boolean {
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || value === null) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!allFinite(value[i])) return false;
    return true;
  }
  const object = value as Record<string, unknown>;
  for (const key of Object.keys(object)) if (!allFinite(object[key])) return false;
  return true;
}

export function parseJsonText(text: string): unknown {
  if (text.trim() === '') throw new RivuletError('INVALID_INPUT', 'request body is empty; expected JSON');
  if (!fewOpenings(text, Limits.jsonMaxDepth) && jsonDepthExceeds(text, Limits.jsonMaxDepth)) {
    throw new RivuletError('INVALID_INPUT', `request body nests JSON deeper than ${Limits.jsonMaxDepth} levels`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new RivuletError('INVALID_INPUT', `request body is not valid JSON: ${detail}`);
  }
  // Numbers too large for a double parse as Infinity and would be stored as null: refuse them.
  // JSON.parse yields no other non-finite number, so the walk finds exactly those.
  if (!allFinite(value)) {
    throw new RivuletError('INVALID_INPUT', 'request body holds a number too large to represent (JSON numbers must be finite doubles)');
  }
  return value;
}

export async function readJsonBody(request: Request, headers: HeaderReader, maxBytes: number): Promise<unknown> {
  requireJsonContentType(headers.get('content-type'));
  return parseJsonText(await readBodyText(request, headers, maxBytes));
}
