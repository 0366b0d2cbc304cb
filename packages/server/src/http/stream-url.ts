/**
 * Addressing under /v1/streams (API.md §3, SEMANTICS §9.3): the stream path follows the prefix
 * directly (the root stream is "/v1/streams/"), and ":method" after the last segment selects a
 * custom method. Segments are percent-decoded one by one, before canonicalisation.
 */
import { canonicalizePath } from '@rivulet/contract';

export const STREAMS_PREFIX = '/v1/streams';

export interface StreamAddress {
  path: string;
  method: string | null;
}

/** `rawPath` is the request's path as sent (percent-encoded), starting with "/v1/streams/". */
export function parseStreamAddress(rawPath: string): StreamAddress {
  let rest = rawPath.slice(STREAMS_PREFIX.length);
  let method: string | null = null;
  const colon = rest.lastIndexOf(':');
  if (colon !== -1 && colon > rest.lastIndexOf('/')) {
    method = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  return { path: canonicalizePath(rest, { decode: true }), method };
}
