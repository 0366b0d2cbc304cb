/**
 * The undici dispatcher that carries webhook POSTs for hosts/node/outbound.ts (protocol §17.4,
 * §17.6). outbound.ts decides whether a request may go and vets the addresses of its host name;
 * this file makes sure the connections go exactly there:
 *
 * - Pinned addresses. A vetted name's addresses are kept in `PinnedAddresses`; a new direct
 *   connection to that name resolves through them only (the connector's `lookup`), never through
 *   DNS again. Through an egress proxy the tunnel is asked for the first vetted address
 *   (`CONNECT 203.0.113.7:443`), while the Host field and TLS (SNI and the certificate check) keep
 *   the name, so the proxy cannot resolve the name to another address either. A kept connection
 *   stays on the address it was opened to, which was vetted when it opened.
 * - One connector for every direct connection, so a TLS session is resumed on the next connection
 *   to the same host name (undici keeps the sessions by name); the proxy path has its own.
 * - Kept connections: one request at a time on each, idle for at most IDLE_MS, and no longer used
 *   within KEEP_ALIVE_MARGIN_MS of the idle timeout the receiver announces (`keep-alive: timeout=N`).
 *   The delivery signal is the one timeout of a request (headers and body timeouts are off); a
 *   connection that is not open within the connect timeout fails.
 *
 * `SocketUses` tells whether a request went out on a connection that carried one before, from
 * undici's `undici:client:sendHeaders` diagnostics channel: outbound.ts sends such a request once
 * more when that connection turns out closed before any byte of the answer.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { Agent, buildConnector, EnvHttpProxyAgent, Pool, type Dispatcher } from 'undici';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Where webhooks go through an egress proxy (protocol §17.4); hosts in `noProxy` are reached directly. */
export interface WebhookProxy {
  /** Proxy for http: URLs. */
  http?: string | undefined;
  /** Proxy for https: URLs. */
  https?: string | undefined;
  /** NO_PROXY syntax: host names (a leading dot or `*.` for subdomains), `host:port`, `*` for every host; comma or space separated. */
  noProxy?: string | undefined;
}

export const IDLE_MS = 30_000;
/** How long before a receiver's announced keep-alive timeout a connection is no longer used. */
export const KEEP_ALIVE_MARGIN_MS = 1_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** Larger response header sections are not an answer. */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Host names whose vetted addresses are kept at most (the oldest is dropped first). */
const PINNED_NAMES = 1_024;

/** The vetted addresses of each host name, for the connections opened to it. */
export class PinnedAddresses {
  private readonly byName = new Map<string, readonly ResolvedAddress[]>();

  set(name: string, addresses: readonly ResolvedAddress[]): void {
    this.byName.delete(name);
    if (this.byName.size >= PINNED_NAMES) this.byName.delete(this.byName.keys().next().value as string);
    this.byName.set(name, addresses);
  }

  get(name: string): readonly ResolvedAddress[] | undefined {
    return this.byName.get(name);
  }

  /** A lookup that answers the vetted addresses only, whatever DNS would say now. */
  readonly lookup: LookupFunction = (name, options, callback) => {
    const family = typeof options.family === 'number' && options.family !== 0 ? options.family : undefined;
    const usable = (this.byName.get(name) ?? []).filter((a) => family === undefined || a.family === family);
    if (usable.length === 0) {
      callback(Object.assign(new Error(`no vetted address for ${name}`), { code: 'ENOTFOUND' }), '', 0);
      return;
    }
    if (options.all) (callback as unknown as (e: null, all: ResolvedAddress[]) => void)(null, [...usable]);
    else callback(null, usable[0]!.address, usable[0]!.family);
  };
}

/** What a request learns of the connection it was written to. */
export interface SentOn {
  /** The connection carried a request before this one. */
  kept: boolean;
  /** Whether anything arrived on the connection after the request was written. */
  readSince(): boolean;
}

/** Whoever waits for the next request write: set by the request's handler right before undici writes it. */
let waiting: ((sent: SentOn) => void) | undefined;
const uses = new WeakMap<Socket, number>();
let subscribers = 0;

function onSendHeaders(message: unknown): void {
  const tell = waiting;
  if (!tell) return;
  waiting = undefined;
  const socket = (message as { socket: Socket }).socket;
  const before = uses.get(socket) ?? 0;
  uses.set(socket, before + 1);
  const bytesRead = socket.bytesRead;
  tell({ kept: before > 0, readSince: () => socket.bytesRead !== bytesRead });
}

/**
 * Tells `tell` about the connection of the request undici writes next. undici calls a handler's
 * `onRequestStart` and then, in the same synchronous step, publishes `sendHeaders` for that
 * request; nothing else is written in between.
 */
export function awaitSend(tell: (sent: SentOn) => void): void {
  waiting = tell;
}

export interface DispatcherOptions {
  /** Vetted addresses to pin connections to; undefined when destinations are not vetted (private allowed). */
  pinned: PinnedAddresses | undefined;
  proxy: WebhookProxy | undefined;
  trustedCa: string | undefined;
  connectTimeoutMs: number;
  onConnection: ((scheme: 'http' | 'https') => void) | undefined;
}

function hostForConnect(address: ResolvedAddress, port: string): string {
  const host = address.family === 6 ? `[${address.address}]` : address.address;
  return port === '' ? host : `${host}:${port}`;
}

export function webhookDispatcher(options: DispatcherOptions): { dispatcher: Dispatcher; close(): Promise<void> } {
  if (subscribers++ === 0) subscribe('undici:client:sendHeaders', onSendHeaders);
  const { pinned, onConnection } = options;
  const tls = options.trustedCa !== undefined ? { ca: options.trustedCa } : {};
  // Every pool of every path (direct or through a proxy) comes from here: its connect is wrapped
  // to pin the target and to count connections.
  const factory = (origin: string | URL, poolOptions: object): Dispatcher => {
    const connect = (poolOptions as { connect: buildConnector.connector }).connect;
    return new Pool(origin, {
      ...poolOptions,
      connect: (target, callback) => {
        let to = target;
        const addresses = pinned && isIP(target.hostname) === 0 ? pinned.get(target.hostname) : undefined;
        // The direct connector takes `hostname` (resolved by the pinned lookup); a proxy tunnel
        // takes `host`: the vetted address. TLS keeps naming the host either way.
        if (addresses?.[0]) to = { ...target, host: hostForConnect(addresses[0], target.port), servername: target.servername || target.hostname };
        connect(to, (error, socket) => {
          if (!error) onConnection?.(target.protocol === 'https:' ? 'https' : 'http');
          (callback as (error: Error | null, socket: Socket | null) => void)(error, socket);
        });
      },
    });
  };
  const direct = buildConnector({ ...tls, timeout: options.connectTimeoutMs, ...(pinned ? { lookup: pinned.lookup } : {}) });
  const agentOptions = {
    factory,
    connect: direct,
    // Never two POSTs on the wire of one connection: undici writes a POST only on a connection with
    // nothing in flight. 2 lets a connection whose answer just ended take the next request at once,
    // without the event-loop turn undici waits with 1 (a reused connection still gets the turn in
    // which a close the receiver sent is noticed before anything is written).
    pipelining: 2,
    keepAliveTimeout: IDLE_MS,
    keepAliveMaxTimeout: IDLE_MS,
    keepAliveTimeoutThreshold: KEEP_ALIVE_MARGIN_MS,
    headersTimeout: 0,
    bodyTimeout: 0,
    maxHeaderSize: MAX_HEADER_BYTES,
  };
  const proxy = options.proxy;
  const dispatcher: Dispatcher =
    proxy && (proxy.http || proxy.https)
      ? new EnvHttpProxyAgent({
          ...agentOptions,
          // Given in full, so that undici never falls back to the process environment: the
          // command line decides (packages/cli serve reads the environment variables).
          httpProxy: proxy.http ?? '',
          httpsProxy: proxy.https ?? '',
          noProxy: proxy.noProxy ?? '',
          // http: targets go through a CONNECT tunnel too, so the proxy connects to the vetted address.
          proxyTunnel: true,
          requestTls: { ...tls, timeout: options.connectTimeoutMs },
          proxyTls: { ...tls, timeout: options.connectTimeoutMs },
        })
      : new Agent(agentOptions);
  let closed = false;
  return {
    dispatcher,
    async close() {
      if (closed) return;
      closed = true;
      if (--subscribers === 0) unsubscribe('undici:client:sendHeaders', onSendHeaders);
      await dispatcher.destroy();
    },
  };
}
