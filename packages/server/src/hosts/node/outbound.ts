/**
 * The Node adapter of the outbound port (ports/outbound.ts) for webhooks, with the outbound
 * protection of protocol §17.4:
 *
 * - When private destinations are not allowed, the host is vetted before anything is sent: a
 *   literal address (any notation the URL parser normalises) or a name in the private/metadata
 *   list is refused; any other name is resolved once (all addresses) and refused when *any*
 *   answer is loopback, private, link-local, unspecified or metadata. The socket then connects
 *   only to those vetted addresses (our own `lookup`), so a DNS answer that changes between the
 *   check and the connect (rebinding) is never used. A refused destination is never contacted.
 * - No redirect is ever followed (node:http does not follow; a 3xx is an answer like any other).
 * - At most `maxResponseBytes` of a response body are read; past that the socket is destroyed.
 * - The caller's signal destroys the request, whatever stage it is in (DNS, connect, body).
 *
 * Requests go through the lean HTTP/1.1 client of hosts/http1-client.ts, over TCP or TLS (most of
 * a webhook delivery's cost was node:http's client); its sockets are kept alive per instance, and
 * close() ends them. A webhook URL is parsed once (a small cache of the URLs in use); the
 * destination is still vetted on every request.
 */
import { STATUS_CODES } from 'node:http';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { isPrivateAddress, isPrivateHost } from '../../core/private-address.js';
import type { OutboundAnswer, OutboundHttp, OutboundPost } from '../../ports/outbound.js';
import { abortError, Http1Client, type Http1Destination } from '../../net/http1-client.js';
import { ResponseParseError } from '../../net/http1-response.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (the default: node:dns lookup, all: true). */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface NodeOutboundOptions {
  /** Whether loopback, private, link-local and metadata destinations may be reached. */
  allowPrivate: boolean;
  /** Response body bytes read at most (default 64 KiB). */
  maxResponseBytes?: number;
  /** Name resolution (tests inject one; default node:dns lookup with all addresses). */
  resolve?: HostResolver;
  /** Which resolved addresses are refused (tests; default: isPrivateAddress). */
  refuses?: (address: string) => boolean;
  /** Certificates trusted for https besides the system's (tests with their own certificate). */
  trustedCa?: string;
  /** Told of every new connection and of every request sent again after a stale one (metrics). */
  onConnection?: (scheme: 'http' | 'https') => void;
  onResend?: () => void;
}

export interface NodeOutbound extends OutboundHttp {
  /** Ends kept-alive sockets; requests in flight are destroyed. */
  close(): void;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

/** Parsed URLs kept at most (one per webhook URL in use; the oldest is dropped first). */
const URL_CACHE = 256;

/** A URL checked for its scheme, with what follows from it alone. */
interface Target {
  url: URL;
  /** Whether the host is a public address literal: node connects to exactly it, nothing to resolve. */
  literal: boolean;
  /** Where the client connects (host without IPv6 brackets); connections are shared per scheme, host and port. */
  destination: Http1Destination;
  /** The request line, Host and Authorization fields, ready to write. */
  head: string;
}

/** A field name (RFC 9110 token) and a value without control characters that end a line. */
const FIELD_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FIELD_VALUE_BAD = /[\r\n\0]/;

function fieldLines(headers: Record<string, string>): string {
  let lines = '';
  for (const name in headers) {
    const value = headers[name]!;
    if (!FIELD_NAME.test(name) || FIELD_VALUE_BAD.test(value)) throw new Error(`invalid request header "${name}"`);
    lines += `${name}: ${value}\r\n`;
  }
  return lines;
}

const systemResolver: HostResolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

const PRIVATE_HINT = 'a loopback, private, link-local or metadata address; this server does not send webhooks there (see --allow-private-webhooks)';

/** A lookup that answers only the vetted addresses, whatever the name: no second resolution. */
function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const family = typeof options.family === 'number' && options.family !== 0 ? options.family : undefined;
    const usable = family === undefined ? addresses : addresses.filter((a) => a.family === family);
    if (usable.length === 0) {
      const error: NodeJS.ErrnoException = new Error(`no vetted IPv${family ?? ''} address`);
      error.code = 'ENOTFOUND';
      callback(error, '', 0);
      return;
    }
    if (options.all) (callback as unknown as (e: null, all: ResolvedAddress[]) => void)(null, [...usable]);
    else callback(null, usable[0]!.address, usable[0]!.family);
  };
}

/** Resolves `promise` unless the signal ends first. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  return code && !error.message.includes(code) ? `${code} ${error.message}` : error.message;
}

export function nodeOutbound(options: NodeOutboundOptions): NodeOutbound {
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const resolve = options.resolve ?? systemResolver;
  const refuses = options.refuses ?? isPrivateAddress;
  const onConnection = options.onConnection;
  const http1 = new Http1Client({
    ...(options.trustedCa !== undefined ? { tls: { ca: options.trustedCa } } : {}),
    ...(onConnection ? { onConnection: (tls: boolean) => onConnection(tls ? 'https' : 'http') } : {}),
    ...(options.onResend ? { onResend: options.onResend } : {}),
  });

  const targets = new Map<string, Target>();

  /** The parsed URL with its request options, or an error for a URL that is never sent to. */
  function target(raw: string): Target {
    let cached = targets.get(raw);
    if (cached) return cached;
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new Error(`"${raw}" is not an absolute URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`refused to send to ${url.protocol} URLs (http and https only)`);
    const https = url.protocol === 'https:';
    const host = url.hostname;
    const bare = host.startsWith('[') ? host.slice(1, -1) : host;
    const port = url.port === '' ? (https ? 443 : 80) : Number(url.port);
    const path = `${url.pathname}${url.search}`;
    const auth = url.username || url.password ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined;
    cached = {
      url,
      literal: isIP(bare) !== 0,
      destination: { key: `${url.protocol}//${bare}:${port}`, host: bare, port, tls: https },
      head:
        `POST ${path} HTTP/1.1\r\nhost: ${url.host}\r\n` +
        (auth !== undefined ? `authorization: Basic ${Buffer.from(auth).toString('base64')}\r\n` : ''),
    };
    if (targets.size >= URL_CACHE) targets.delete(targets.keys().next().value as string);
    targets.set(raw, cached);
    return cached;
  }

  /**
   * True when node may connect on its own (private destinations allowed, or a public address
   * literal); throws for a refused host; false when the name must be resolved and vetted first.
   */
  function vetLiteral(t: Target): boolean {
    if (options.allowPrivate) return true;
    const host = t.url.hostname;
    if (isPrivateHost(host)) throw new Error(`refused to send to ${host}: it is ${PRIVATE_HINT}`);
    return t.literal; // a public literal: node connects to exactly it
  }

  /** The addresses a host name may be connected to, resolved once and all vetted. */
  async function vetResolved(t: Target, signal: AbortSignal): Promise<LookupFunction> {
    const host = t.url.hostname;
    let addresses: ResolvedAddress[];
    try {
      addresses = await abortable(resolve(t.destination.host), signal);
    } catch (error) {
      if (signal.aborted) throw error;
      throw new Error(`cannot resolve ${host}: ${describe(error)}`);
    }
    if (addresses.length === 0) throw new Error(`cannot resolve ${host}: no address`);
    const refused = addresses.find((a) => refuses(a.address));
    if (refused) throw new Error(`refused to send to ${host}: it resolves to ${refused.address}, ${PRIVATE_HINT}`);
    return pinnedLookup(addresses);
  }

  function send(t: Target, post: OutboundPost, lookup: LookupFunction | undefined): Promise<OutboundAnswer> {
    const where = t.url.origin;
    let head: string;
    try {
      head = `${t.head}${fieldLines(post.headers)}content-length: ${Buffer.byteLength(post.body)}\r\n\r\n`;
    } catch (error) {
      return Promise.reject(new Error(`cannot send to ${where}: ${describe(error)}`));
    }
    return http1
      .post(lookup ? { ...t.destination, lookup } : t.destination, { head, body: post.body, signal: post.signal, maxBodyBytes: maxBytes })
      .then(
        (answer) => ({ status: answer.status, statusText: answer.statusText || STATUS_CODES[answer.status] || '', body: answer.body }),
        (error: unknown) => {
          if (post.signal.aborted) throw abortError(post.signal);
          if (error instanceof ResponseParseError) throw new Error(`${where} sent an invalid HTTP answer: ${error.message}`);
          throw new Error(`cannot reach ${where}: ${describe(error)}`);
        },
      );
  }

  return {
    post(raw, post) {
      let t: Target;
      let direct: boolean;
      try {
        t = target(raw);
        direct = vetLiteral(t);
      } catch (error) {
        return Promise.reject(error);
      }
      if (post.signal.aborted) return Promise.reject(abortError(post.signal));
      // No name to resolve: the request leaves in this turn, without a round through the resolver.
      if (direct) return send(t, post, undefined);
      return vetResolved(t, post.signal).then((lookup) => {
        if (post.signal.aborted) throw abortError(post.signal);
        return send(t, post, lookup);
      });
    },
    close() {
      http1.close();
    },
  };
}
