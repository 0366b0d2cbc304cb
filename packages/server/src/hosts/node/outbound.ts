/**
 * The Node adapter of the outbound port (ports/outbound.ts) for webhooks, with the outbound
 * protection of protocol §17.4, over undici (hosts/node/outbound-dispatcher.ts; decision 007):
 *
 * - When private destinations are not allowed, the host is vetted before anything is sent: a
 *   literal address (any notation the URL parser normalises) or a name in the private/metadata
 *   list is refused; any other name is resolved once (all addresses) and refused when *any*
 *   answer is loopback, private, link-local, unspecified or metadata. New connections go only to
 *   vetted addresses (the dispatcher pins them), so a DNS answer that changes between the check
 *   and the connect (rebinding) is never used. A refused destination is never contacted. Through
 *   an egress proxy the same vetting applies, and the proxy is asked for the vetted address.
 * - No redirect is ever followed (undici follows none without its redirect interceptor).
 * - At most `maxResponseBytes` of a response body are read; past that the connection is dropped.
 * - The caller's signal ends the request, whatever stage it is in (DNS, connect, body).
 * - A request written to a kept connection that the receiver had closed (it ends before any byte
 *   of the answer) is sent once more (protocol §17.6).
 *
 * A webhook URL is parsed once (a small cache of the URLs in use); the destination is still vetted
 * on every request.
 */
import { STATUS_CODES } from 'node:http';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { errors, type Dispatcher } from 'undici';
import { isPrivateAddress, isPrivateHost } from '../../core/private-address.js';
import type { OutboundAnswer, OutboundHttp, OutboundPost } from '../../ports/outbound.js';
import { abortable, abortError, onAbortOf } from './outbound-abort.js';
import {
  awaitSend,
  DEFAULT_CONNECT_TIMEOUT_MS,
  PinnedAddresses,
  webhookDispatcher,
  type ResolvedAddress,
  type SentOn,
  type WebhookProxy,
} from './outbound-dispatcher.js';

export type { ResolvedAddress, WebhookProxy } from './outbound-dispatcher.js';
export { abortError } from './outbound-abort.js';

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
  /** Certificates trusted for https instead of the system's (tests with their own certificate). */
  trustedCa?: string;
  /** An egress proxy (protocol §17.4); none by default. */
  proxy?: WebhookProxy | undefined;
  /** How long opening a connection (TCP, and TLS for https) may take (default 10 s). */
  connectTimeoutMs?: number;
  /** Told of every new connection and of every request sent again after a stale one (metrics). */
  onConnection?: (scheme: 'http' | 'https') => void;
  onResend?: () => void;
}

export interface NodeOutbound extends OutboundHttp {
  /** Ends kept-alive connections; requests in flight fail. */
  close(): Promise<void>;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

/** Parsed URLs kept at most (one per webhook URL in use; the oldest is dropped first). */
const URL_CACHE = 256;

/** A URL checked for its scheme, with what follows from it alone. */
interface Target {
  url: URL;
  /** The host without IPv6 brackets. */
  host: string;
  /** Whether the host is an address literal: nothing to resolve. */
  literal: boolean;
  path: string;
  /** `Basic …` from credentials in the URL. */
  authorization: string | undefined;
}

/** A field name (RFC 9110 token) and a value without control characters that end a line. */
const FIELD_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FIELD_VALUE_BAD = /[\r\n\0]/;

/** Field names found valid (the same few on every webhook), so each is tested once. */
const validNames = new Set<string>();
const VALID_NAMES_KEPT = 64;

function checkHeaders(headers: Record<string, string>): void {
  for (const name in headers) {
    if (!validNames.has(name)) {
      if (!FIELD_NAME.test(name)) throw new Error(`invalid request header "${name}"`);
      if (validNames.size < VALID_NAMES_KEPT) validNames.add(name);
    }
    if (FIELD_VALUE_BAD.test(headers[name]!)) throw new Error(`invalid request header "${name}"`);
  }
}

const systemResolver: HostResolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

const PRIVATE_HINT = 'a loopback, private, link-local or metadata address; this server does not send webhooks there (see --allow-private-webhooks)';

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  return code && !error.message.includes(code) ? `${code} ${error.message}` : error.message;
}

/** An answer that does not parse as HTTP/1.1 (llhttp's errors), misframes its body or whose header section is over the cap. */
function invalidAnswer(error: unknown): boolean {
  return (
    error instanceof errors.HTTPParserError ||
    error instanceof errors.HeadersOverflowError ||
    error instanceof errors.ResponseContentLengthMismatchError
  );
}

/**
 * One POST through undici: collects the status and the capped body, and may be sent again once.
 *
 * It implements the handler shape undici's client calls itself (`onConnect`, `onHeaders`, `onData`,
 * `onComplete`, `onError`): undici 7 wraps a handler of the newer shape (`onRequestStart`, …) in an
 * adapter that, per response, turns the raw header and trailer lists into objects, which this
 * handler never reads (docs/performance.md "Fixed work per webhook call"). The order of the calls
 * is the same: `onConnect` right before the request is written, in the step that publishes
 * `sendHeaders`.
 */
class Exchange implements Dispatcher.DispatchHandler {
  private status = 0;
  private statusText = '';
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private started = false;
  private settled = false;
  private abortRequest: ((reason?: Error) => void) | undefined;
  private sent: SentOn | undefined;
  private readonly unwatch: () => void;

  constructor(
    private readonly maxBytes: number,
    private readonly signal: AbortSignal,
    private readonly resolve: (answer: OutboundAnswer) => void,
    private readonly reject: (error: unknown) => void,
    /** Sends the request again on another connection; undefined once it was. */
    private readonly again: (() => void) | undefined,
    /** Told once the request was written (ports/outbound.ts `onSent`). */
    private readonly written: () => void,
  ) {
    this.unwatch = onAbortOf(signal, this.onAbort);
  }

  private readonly onAbort = () => {
    // Settled first: the abort reaches onError at once, which must not answer.
    this.fail(abortError(this.signal));
    this.abortRequest?.(abortError(this.signal));
  };

  onConnect(abort: (reason?: Error) => void): void {
    if (this.settled) {
      abort(abortError(this.signal));
      return;
    }
    this.abortRequest = abort;
    awaitSend((sent) => {
      this.sent = sent;
      // Told just before undici writes the request; the microtask runs once that write returned.
      queueMicrotask(this.written);
    });
  }

  onHeaders(status: number, _rawHeaders: unknown, _resume: () => void, statusMessage?: string): boolean {
    // undici reports interim 1xx answers here too; only a final status is the answer.
    if (status < 200) return true;
    this.started = true;
    this.status = status;
    this.statusText = statusMessage ?? '';
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.settled) return true;
    const room = this.maxBytes - this.size;
    this.chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
    this.size += Math.min(chunk.length, room);
    if (this.size >= this.maxBytes) {
      this.answer();
      // The rest of the body is never read: the connection goes.
      this.abortRequest?.(new Error('the response body reached its cap'));
    }
    return true;
  }

  onComplete(): void {
    this.answer();
  }

  onError(error: Error): void {
    if (this.settled) return;
    // The status is the answer: a body cut short after it is read as far as it came.
    if (this.started) this.answer();
    else if (this.again && this.sent?.kept && !this.sent.readSince() && !invalidAnswer(error)) {
      this.done();
      // Out of undici's callback: the failed connection is gone by then.
      queueMicrotask(this.again);
    } else this.fail(error);
  }

  private done(): void {
    this.settled = true;
    this.unwatch();
  }

  private answer(): void {
    if (this.settled) return;
    this.done();
    const answer = {
      status: this.status,
      statusText: this.statusText || STATUS_CODES[this.status] || '',
      body: this.size === 0 ? '' : Buffer.concat(this.chunks, this.size).toString('utf8'),
    };
    this.resolve(answer);
  }

  private fail(error: unknown): void {
    if (this.settled) return;
    this.done();
    this.reject(error);
  }
}

export function nodeOutbound(options: NodeOutboundOptions): NodeOutbound {
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const resolve = options.resolve ?? systemResolver;
  const refuses = options.refuses ?? isPrivateAddress;
  const pinned = options.allowPrivate ? undefined : new PinnedAddresses();
  const { dispatcher, close } = webhookDispatcher({
    pinned,
    proxy: options.proxy,
    trustedCa: options.trustedCa,
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    onConnection: options.onConnection,
  });
  let closed = false;

  const targets = new Map<string, Target>();

  /** The parsed URL, or an error for a URL that is never sent to. */
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
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const auth = url.username || url.password ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined;
    cached = {
      url,
      host,
      literal: isIP(host) !== 0,
      path: `${url.pathname}${url.search}`,
      authorization: auth === undefined ? undefined : `Basic ${Buffer.from(auth).toString('base64')}`,
    };
    if (targets.size >= URL_CACHE) targets.delete(targets.keys().next().value as string);
    targets.set(raw, cached);
    return cached;
  }

  /**
   * True when nothing needs resolving (private destinations allowed, or a public address literal);
   * throws for a refused host; false when the name must be resolved and vetted first.
   */
  function vetLiteral(t: Target): boolean {
    if (!pinned) return true;
    const host = t.url.hostname;
    if (isPrivateHost(host)) throw new Error(`refused to send to ${host}: it is ${PRIVATE_HINT}`);
    return t.literal;
  }

  /** Resolves the name once, vets every address and pins the name's connections to them. */
  async function vetResolved(t: Target, signal: AbortSignal): Promise<void> {
    const host = t.url.hostname;
    let addresses: ResolvedAddress[];
    try {
      addresses = await abortable(resolve(t.host), signal);
    } catch (error) {
      if (signal.aborted) throw error;
      throw new Error(`cannot resolve ${host}: ${describe(error)}`);
    }
    if (addresses.length === 0) throw new Error(`cannot resolve ${host}: no address`);
    const refused = addresses.find((a) => refuses(a.address));
    if (refused) throw new Error(`refused to send to ${host}: it resolves to ${refused.address}, ${PRIVATE_HINT}`);
    pinned!.set(t.host, addresses);
  }

  function send(t: Target, post: OutboundPost): Promise<OutboundAnswer> {
    const where = t.url.origin;
    try {
      checkHeaders(post.headers);
    } catch (error) {
      return Promise.reject(new Error(`cannot send to ${where}: ${describe(error)}`));
    }
    if (closed) return Promise.reject(new Error('the webhook client is closed'));
    const request: Dispatcher.DispatchOptions = {
      origin: t.url.origin,
      path: t.path,
      method: 'POST',
      headers: t.authorization === undefined ? post.headers : { ...post.headers, authorization: t.authorization },
      body: Buffer.from(post.body),
    };
    let told = post.onSent === undefined;
    const written = () => {
      if (told) return;
      told = true;
      post.onSent!();
    };
    return new Promise<OutboundAnswer>((resolveAnswer, reject) => {
      const rejectNamed = (error: unknown) => {
        if (post.signal.aborted) reject(abortError(post.signal));
        else if (closed) reject(new Error('the webhook client is closed'));
        else if (invalidAnswer(error)) reject(new Error(`${where} sent an invalid HTTP answer: ${describe(error)}`));
        else reject(new Error(`cannot reach ${where}: ${describe(error)}`));
      };
      const again = () => {
        if (post.signal.aborted || closed) {
          rejectNamed(undefined);
          return;
        }
        options.onResend?.();
        dispatcher.dispatch(request, new Exchange(maxBytes, post.signal, resolveAnswer, rejectNamed, undefined, written));
      };
      dispatcher.dispatch(request, new Exchange(maxBytes, post.signal, resolveAnswer, rejectNamed, again, written));
    });
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
      if (direct) return send(t, post);
      return vetResolved(t, post.signal).then(() => {
        if (post.signal.aborted) throw abortError(post.signal);
        return send(t, post);
      });
    },
    close() {
      closed = true;
      return close();
    },
  };
}
