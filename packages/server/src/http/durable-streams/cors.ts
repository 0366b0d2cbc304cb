/**
 * What browsers need of the Durable Streams routes (docs/durable-streams.md "Browsers"):
 *
 * - Their CORS family (`DURABLE_STREAMS_CORS`): the methods and header fields a cross-origin page
 *   may use under /v1/stream/, and the answer fields it may read. The server-wide CORS hook
 *   (http/cors.ts) answers for them, so `--cors-origin` governs these routes as it does the rest.
 * - The security fields the protocol asks of every answer (`addSecurityHeaders`), which are not
 *   CORS and are sent whatever the CORS configuration.
 */
import type { CorsFamily } from '../cors.js';
import { DS_PREFIX, H } from './wire.js';

/** The methods of /v1/stream/{name}, for `Allow` and for CORS. */
export const DS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'] as const;

export const DURABLE_STREAMS_CORS: CorsFamily = {
  pathPrefix: DS_PREFIX,
  methods: DS_METHODS,
  requestHeaders: [
    'authorization',
    'content-type',
    'x-project-id',
    'if-none-match',
    ...[H.seq, H.ttl, H.expiresAt, H.closed, H.producerId, H.producerEpoch, H.producerSeq, H.forkedFrom, H.forkOffset, H.forkSubOffset].map((name) =>
      name.toLowerCase(),
    ),
  ],
  exposedHeaders: [
    ...[
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
    ].map((name) => name.toLowerCase()),
    'etag',
    'location',
    // Not safelisted when it is not one of the three form types (application/json, text/event-stream).
    'content-type',
  ],
};

/** The protocol's security fields, on every answer. */
export const SECURITY_FIELDS: ReadonlyArray<readonly [string, string]> = [
  ['x-content-type-options', 'nosniff'],
  ['cross-origin-resource-policy', 'cross-origin'],
];

/** Adds the protocol's security fields to an answer's headers. */
export function addSecurityHeaders(headers: Headers): void {
  for (const [name, value] of SECURITY_FIELDS) headers.set(name, value);
}
