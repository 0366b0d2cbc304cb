/**
 * CORS and the browser security headers of the Durable Streams routes (docs/durable-streams.md
 * "Browsers"). Kept in this one module so that the routes can move to the server-wide CORS hook
 * once there is one; until then every answer under /v1/stream/ gets these fields here.
 */
import { H } from './wire.js';

const ALLOW_HEADERS = [
  'content-type',
  'authorization',
  'x-project-id',
  H.seq,
  H.ttl,
  H.expiresAt,
  H.closed,
  H.producerId,
  H.producerEpoch,
  H.producerSeq,
  H.forkedFrom,
  H.forkOffset,
  H.forkSubOffset,
  'if-none-match',
].join(', ');

const EXPOSE_HEADERS = [
  H.nextOffset,
  H.cursor,
  H.upToDate,
  H.closed,
  H.ttl,
  H.expiresAt,
  H.producerEpoch,
  H.producerSeq,
  H.expectedSeq,
  H.receivedSeq,
  H.sseEncoding,
  'etag',
  'location',
  'content-type',
].join(', ');

/** Adds the CORS and security fields to an answer's headers. */
export function addBrowserHeaders(headers: Headers): void {
  headers.set('access-control-allow-origin', '*');
  headers.set('access-control-allow-methods', 'GET, POST, PUT, DELETE, HEAD, OPTIONS');
  headers.set('access-control-allow-headers', ALLOW_HEADERS);
  headers.set('access-control-expose-headers', EXPOSE_HEADERS);
  headers.set('x-content-type-options', 'nosniff');
  headers.set('cross-origin-resource-policy', 'cross-origin');
}

/** The answer to a CORS preflight. */
export function preflight(): Response {
  const headers = new Headers({ 'access-control-max-age': '86400' });
  addBrowserHeaders(headers);
  return new Response(null, { status: 204, headers });
}
