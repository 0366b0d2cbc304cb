/**
 * Addressing under /v1/streams (protocol §2.4): the stream path follows the prefix
 * directly (the root stream is "/v1/streams/"), and ":method" after the last segment selects a
 * custom method. Segments are percent-decoded one by one, before canonicalisation.
 */
import { canonicalizePath } from '@rivulet/contract';

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
  return colon !== -1 && colon > rawPath.lastIndexOf('/');
}

function parseFresh(rawPath: string): StreamAddress {
  let rest = rawPath.slice(STREAMS_PREFIX.length);
  let method: string | null = null;
  const colon = rest.lastIndexOf(':');
  if (colon !== -1 && colon > rest.lastIndexOf('/')) {
    method = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  return { path: canonicalizePath(rest, { decode: true }), method };
}
