/**
 * The Node host answers a plain append (`POST /v1/streams/{path}` with a declared body length)
 * on node:http without the Hono app, once a connection was handed over by the connection front
 * (front.ts). It is transport only: it picks the requests, reads the body and writes the answer;
 * what the answer is, is decided by the append route (http/append-route.ts), the same function
 * the front and the app call, which also tells the host's request hooks (http/request-hooks.ts).
 *
 * Why: one sequential client pays every fixed cost of a request once per append, and on this host
 * the web Request/Response objects, the adapter and the middleware chain were a measurable share
 * of that (docs/performance.md "Plain appends without the Hono app"). Everything else, and
 * anything this path is not sure to answer exactly like the app (a method suffix, a query, a
 * chunked body, an unusual Host or path character the adapter would refuse), goes to the app
 * untouched.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { JSON_TYPE, type AppendAnswerer, type AppendReply } from '../../http/append-route.js';
import { ClientAborted, type ErrorLogger } from '../../http/errors.js';
import { plainReadTarget, type ReadAnswerer } from '../../http/read-route.js';
import { plainHeaders } from '../../http/request-headers.js';

export { appendAnswerer, JSON_TYPE, type AppendAnswer, type AppendAnswerer, type AppendReply } from '../../http/append-route.js';

/** Paths of plain characters only: no query, no ":method", no backslash (the adapter refuses those). */
const PLAIN_APPEND_URL = /^\/v1\/streams\/[A-Za-z0-9\-._~%!$&'()*+,;=@/]*$/;
/** A host name or IPv4/IPv6 literal with an optional port: what the adapter accepts without question. */
const PLAIN_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

function readBody(incoming: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    // A request cut off before its end is destroyed with an error, so 'error' covers aborts too.
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    incoming.on('error', (error) => reject(new ClientAborted(error)));
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

function send(outgoing: ServerResponse, { status, text, headers, contentType, bytes }: AppendReply): void {
  const length = bytes ?? Buffer.byteLength(text);
  if (headers === undefined && contentType === undefined) outgoing.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': length });
  else {
    // A flat list keeps every field the hooks gave, in order, like the front writes them.
    const type = contentType === undefined ? JSON_TYPE : contentType;
    const fields = type === null ? [] : ['content-type', type];
    // node:http itself leaves the length off a 204 and a 304 (a page read's, read-route.ts).
    if (status !== 204 && status !== 304) fields.push('content-length', String(length));
    for (const [name, value] of headers ?? []) fields.push(name, value);
    outgoing.writeHead(status, fields);
  }
  outgoing.end(text);
}

/** Writes the answer a route decides, unless the client went away meanwhile; a route that fails (it never should) ends the connection. */
function sendWhenDecided(outgoing: ServerResponse, reply: Promise<AppendReply>, logger: ErrorLogger, what: string): void {
  reply
    .then((decided) => {
      if (!outgoing.destroyed) send(outgoing, decided);
    })
    .catch((error: unknown) => {
      logger.error(`rivulet: answering ${what} failed`, error);
      outgoing.destroy();
    });
}

/**
 * Answers a listener that takes a request when it is a plain append (and returns true), or leaves
 * it alone (returns false) for the app.
 */
export function nativeAppend(
  answer: AppendAnswerer,
  logger: ErrorLogger,
  /** The targets `answer` takes (the serving host adds the Durable Streams appends). */
  accepts: (url: string) => boolean = isPlainAppendTarget,
): (incoming: IncomingMessage, outgoing: ServerResponse) => boolean {
  return (incoming, outgoing) => {
    const url = incoming.url;
    if (
      incoming.method !== 'POST' ||
      url === undefined ||
      !accepts(url) ||
      incoming.headers['content-length'] === undefined ||
      incoming.headers['transfer-encoding'] !== undefined ||
      !isPlainHost(incoming.headers.host ?? '')
    ) {
      return false;
    }
    sendWhenDecided(outgoing, answer(url, plainHeaders(incoming.headers), () => readBody(incoming), performance.now()), logger, 'an append');
    return true;
  };
}

/**
 * Answers a listener that takes a request when it is a plain page read (http/read-route.ts; and
 * returns true), or leaves it alone (returns false) for the app: a HEAD, a body, an unusual Host, a
 * filter or any other query go to the app, which judges them as before.
 */
export function nativeRead(answer: ReadAnswerer, logger: ErrorLogger): (incoming: IncomingMessage, outgoing: ServerResponse) => boolean {
  return (incoming, outgoing) => {
    const url = incoming.url;
    if (
      incoming.method !== 'GET' ||
      url === undefined ||
      incoming.headers['content-length'] !== undefined ||
      incoming.headers['transfer-encoding'] !== undefined ||
      !isPlainHost(incoming.headers.host ?? '')
    ) {
      return false;
    }
    const target = plainReadTarget(url);
    if (target === undefined) return false;
    sendWhenDecided(outgoing, answer(target, plainHeaders(incoming.headers), performance.now()), logger, 'a read');
    return true;
  };
}
