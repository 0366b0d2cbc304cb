/**
 * Addressing under /v1/streams (protocol §2.4): the stream path follows the prefix
 * directly (the root stream is "/v1/streams/"), and ":method" after the last segment selects a
 * custom method. Segments are percent-decoded one by one, before canonicalisation.
 *
 * An encoded slash (`%2F`, what OpenAPI generators send for `{path}`) separates segments like "/":
 * no segment can hold a "/", so it can mean nothing else. A path that uses one may have no "." or
 * ".." segment, so an encoded slash can never climb out of the segments it was sent in. `%252F`
 * is the three characters "%2F" inside a segment (decoded once, never twice).
 */
import { RivuletError, canonicalizePath } from '@rivulet/contract';

export const STREAMS_PREFIX = '/v1/streams';

export interface StreamAddress {
  path: string;
  method: string | null;
}

/**
 * Addresses of recently seen raw paths: a client usually appends to the same streams again and
 * again, and decoding and canonicalising a path is a visible share of a small append. Bounded;
 * refused paths are never stored (they throw every time).
 */
const recent = new Map<string, Readonly<StreamAddress>>();
const RECENT_LIMIT = 1024;

/** `rawPath` is the request's path as sent (percent-encoded), starting with "/v1/streams/". */
export function parseStreamAddress(rawPath: string): Readonly<StreamAddress> {
  let address = recent.get(rawPath);
  if (address === undefined) {
    address = Object.freeze(parseFresh(rawPath));
    if (recent.size >= RECENT_LIMIT) recent.clear();
    recent.set(rawPath, address);
  }
  return address;
}

/**
 * Whether a raw stream path selects a custom method (":method" after its last segment), as
 * parseStreamAddress would judge it; without one, a POST to it is the append route.
 */
export function hasMethodSuffix(rawPath: string): boolean {
  const colon = rawPath.lastIndexOf(':');
  return colon !== -1 && colon > lastSeparator(rawPath);
}

const ENCODED_SLASH = /%2f/i;
const ENCODED_SLASHES = /%2f/gi;
/** A "." or ".." segment, its dots written plainly or percent-encoded. */
const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;

/** Index of the last "/" or encoded slash ("%2F", any case). */
function lastSeparator(raw: string): number {
  return Math.max(raw.lastIndexOf('/'), raw.lastIndexOf('%2F'), raw.lastIndexOf('%2f'));
}

/** `rest` with every encoded slash as "/"; refused when the path also has a dot segment. */
function withPlainSlashes(rest: string): string {
  if (!ENCODED_SLASH.test(rest)) return rest;
  const plain = rest.replace(ENCODED_SLASHES, '/');
  if (plain.split('/').some((segment) => DOT_SEGMENT.test(segment))) {
    throw new RivuletError(
      'INVALID_INPUT',
      `stream path "${rest}" has an encoded "/" (%2F) and a "." or ".." segment: a path that uses %2F may not use dot segments`,
      { path: rest },
    );
  }
  return plain;
}

function parseFresh(rawPath: string): StreamAddress {
  let rest = rawPath.slice(STREAMS_PREFIX.length);
  let method: string | null = null;
  const colon = rest.lastIndexOf(':');
  if (colon !== -1 && colon > lastSeparator(rest)) {
    method = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  return { path: canonicalizePath(withPlainSlashes(rest), { decode: true }), method };
}
