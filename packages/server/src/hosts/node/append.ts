/**
 * The Node host answers a plain append (`POST /v1/streams/{path}` with a declared body length)
 * without the Hono app, with the same functions the app's route uses (stream-url, auth, body,
 * append-body, the error mapping) and the same metrics. `appendAnswerer` is that work; it serves
 * the connection front (node-front.ts), which answers connections that only append, and
 * `nativeAppend`, which answers such a request on node:http once a connection was handed over.
 *
 * Why: one sequential client pays every fixed cost of a request once per append, and on this host
 * the web Request/Response objects, the adapter and the middleware chain were a measurable share
 * of that (bench/README, `bench/append`). Everything else, and anything this path is not sure
 * to answer exactly like the app (a method suffix, a query, a chunked body, an unusual Host or
 * path character the adapter would refuse), goes to the app untouched.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StreamService } from '../../engine/service.js';
import type { ServerMetrics } from '../../engine/metrics.js';
import { authenticate, type TokenTable } from '../../http/auth.js';
import { checkDeclaredLength, decodeBody, parseJsonText, requireJsonContentType } from '../../http/body.js';
import { appendAnswer, parseAppendBody } from '../../http/append-body.js';
import { toRivuletError, type ErrorLogger } from '../../http/errors.js';
import { plainHeaders, type HeaderReader } from '../../http/request-headers.js';
import { parseStreamAddress } from '../../http/stream-url.js';

export interface NativeAppendOptions {
  service: StreamService;
  tokens: TokenTable | null;
  metrics: ServerMetrics;
  maxBodyBytes: number;
  logger: ErrorLogger;
}

/** Paths of plain characters only: no query, no ":method", no backslash (the adapter refuses those). */
const PLAIN_APPEND_URL = /^\/v1\/streams\/[A-Za-z0-9\-._~%!$&'()*+,;=@/]*$/;
/** A host name or IPv4/IPv6 literal with an optional port: what the adapter accepts without question. */
const PLAIN_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

export const JSON_TYPE = 'application/json; charset=utf-8';
const ROUTE = 'POST /v1/streams/{path}';
const INVALID_ROUTE = 'POST /v1/streams/{invalid}';

function readBody(incoming: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    // A request cut off before its end is destroyed with an error, so 'error' covers aborts too.
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    incoming.on('error', reject);
  });
}

/** A target this path answers: the append route and nothing that needs the adapter's judgement. */
export function isPlainAppendTarget(url: string): boolean {
  return PLAIN_APPEND_URL.test(url);
}

/** A Host header the adapter takes without question. */
export function isPlainHost(host: string): boolean {
  return PLAIN_HOST.test(host);
}

export interface AppendAnswer {
  status: number;
  /** The JSON body. */
  text: string;
}

/**
 * The append route's work for a request already known to be plain: check the headers, read the
 * body (only once the headers passed, like the app), append, and answer the JSON; errors become
 * their JSON answers (API.md §4). Records the request under the route's metric. Never rejects.
 */
export type AppendAnswerer = (
  url: string,
  headers: HeaderReader,
  body: () => Promise<Uint8Array> | Uint8Array,
  started: number,
) => Promise<AppendAnswer>;

export function appendAnswerer(options: NativeAppendOptions): AppendAnswerer {
  const { service, tokens, metrics, maxBodyBytes, logger } = options;
  return async (url, headers, body, started) => {
    let route = INVALID_ROUTE;
    let status: number;
    let text: string;
    try {
      const address = parseStreamAddress(url);
      route = ROUTE;
      const principal = authenticate(headers, tokens);
      requireJsonContentType(headers.get('content-type'));
      checkDeclaredLength(headers, maxBodyBytes);
      const inputs = parseAppendBody(parseJsonText(decodeBody(await body())));
      text = appendAnswer(await service.append(principal.projectId, address.path, inputs));
      status = 200;
    } catch (error) {
      const e = toRivuletError(error, logger);
      status = e.status;
      text = JSON.stringify(e.toBody());
    }
    metrics.httpDuration.observe((performance.now() - started) / 1000, { route, status: String(status) });
    return { status, text };
  };
}

function send(outgoing: ServerResponse, status: number, text: string): void {
  outgoing.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) });
  outgoing.end(text);
}

/**
 * Answers a listener that takes a request when it is a plain append (and returns true), or leaves
 * it alone (returns false) for the app.
 */
export function nativeAppend(
  answer: AppendAnswerer,
  logger: ErrorLogger,
): (incoming: IncomingMessage, outgoing: ServerResponse) => boolean {
  return (incoming, outgoing) => {
    const url = incoming.url;
    if (
      incoming.method !== 'POST' ||
      url === undefined ||
      !isPlainAppendTarget(url) ||
      incoming.headers['content-length'] === undefined ||
      incoming.headers['transfer-encoding'] !== undefined ||
      !isPlainHost(incoming.headers.host ?? '')
    ) {
      return false;
    }
    answer(url, plainHeaders(incoming.headers), () => readBody(incoming), performance.now())
      .then(({ status, text }) => {
        if (!outgoing.destroyed) send(outgoing, status, text);
      })
      .catch((error: unknown) => {
        logger.error('rivulet: answering an append failed', error);
        outgoing.destroy();
      });
    return true;
  };
}
