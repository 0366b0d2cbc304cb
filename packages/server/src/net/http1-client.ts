/**
 * A lean HTTP/1.1 client for webhook POSTs, over TCP or TLS (hosts/node/outbound.ts decides where
 * a request may go; this file only carries it). It writes the request head and body to a
 * kept-alive socket in one write and parses the answer with net/http1-response.ts.
 *
 * Why not node:http's ClientRequest and Agent: on this machine kind they cost about 85 µs of CPU
 * per kept-alive POST against about 25 µs for this (decision 002, `bench/receivers`), and a
 * webhook subscription sends one POST after another, so that cost is most of a delivery.
 *
 * Connections: kept per key (destination), reused most-recently-used first, at most
 * MAX_IDLE_PER_KEY idle per key, closed after IDLE_MS unused. One request per connection at a
 * time (no pipelining). A kept-alive connection that the server closed while idle may fail the
 * next request before any answer arrives; such a request is sent again once on a new connection
 * (webhooks are at-least-once; this only spares a backoff for a race the receiver never saw).
 * The signal destroys the connection at whatever stage (connect, write, answer).
 */
import { connect, isIP, type LookupFunction, type Socket } from 'node:net';
import { connect as connectTls, type ConnectionOptions as TlsOptions } from 'node:tls';
import { ResponseParser } from './http1-response.js';

export interface Http1Destination {
  /** Connections are shared between requests of the same key (include the scheme). */
  key: string;
  host: string;
  port: number;
  /** Over TLS (https): the server's certificate is verified for `host`. */
  tls?: boolean;
  /** Name resolution for the connect (the vetted addresses); default node's. */
  lookup?: LookupFunction | undefined;
}

export interface Http1Request {
  /** The request line and header fields, ending with the empty line (CRLF CRLF). */
  head: string;
  body: string;
  signal: AbortSignal;
  /** Body bytes kept at most; past that the answer is returned and the connection dropped. */
  maxBodyBytes: number;
}

export interface Http1Answer {
  status: number;
  /** The reason phrase as sent (may be empty). */
  statusText: string;
  body: string;
}

export const IDLE_MS = 30_000;
/** How long before a server's announced keep-alive timeout a connection is no longer used. */
export const KEEP_ALIVE_MARGIN_MS = 1_000;
export const MAX_IDLE_PER_KEY = 32;

export function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('the request was aborted');
}

interface Active {
  parser: ResponseParser;
  resolve(answer: Http1Answer | Promise<Http1Answer>): void;
  reject(error: Error): void;
  signal: AbortSignal;
  onAbort(): void;
  /**
   * On a kept-alive connection: the request sent again on a new one, for when this connection
   * ends before any byte of an answer (the server closed it while it was idle).
   */
  again: (() => Promise<Http1Answer>) | undefined;
}

class Connection {
  readonly socket: Socket;
  private active: Active | undefined;
  /** Whether a request went out on this connection before (it was kept alive). */
  private used = false;
  private closed = false;
  /**
   * Until when it may carry another request: set at each answer from the server's announced idle
   * timeout (Keep-Alive: timeout), shortened to the client's own idle time when it is kept.
   */
  idleUntil = Number.POSITIVE_INFINITY;

  constructor(
    readonly key: string,
    destination: Http1Destination,
    private readonly client: Http1Client,
  ) {
    const options = {
      host: destination.host,
      port: destination.port,
      noDelay: true,
      ...(destination.lookup ? { lookup: destination.lookup } : {}),
    };
    this.socket = destination.tls
      ? connectTls({
          ...client.tlsOptions,
          ...options,
          // Server Name Indication names a host, never an address; the certificate is checked
          // against `host` either way (node's checkServerIdentity).
          ...(isIP(destination.host) === 0 ? { servername: destination.host } : {}),
          ALPNProtocols: ['http/1.1'],
        })
      : connect(options);
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.socket.on('end', () => this.onEnd(undefined));
    this.socket.on('error', (error) => this.onEnd(error));
    this.socket.on('close', () => this.onEnd(undefined));
  }

  send(request: Http1Request, again?: () => Promise<Http1Answer>): Promise<Http1Answer> {
    return new Promise<Http1Answer>((resolve, reject) => {
      const active: Active = {
        parser: new ResponseParser(request.maxBodyBytes),
        resolve,
        reject,
        signal: request.signal,
        onAbort: () => this.fail(abortError(request.signal)),
        again: this.used ? again : undefined,
      };
      this.active = active;
      this.used = true;
      request.signal.addEventListener('abort', active.onAbort, { once: true });
      this.socket.write(request.head + request.body);
    });
  }

  private onData(chunk: Buffer): void {
    const active = this.active;
    if (!active) {
      // Nothing was asked: a server that talks out of turn is not trusted with the next request.
      this.destroy();
      return;
    }
    let result;
    try {
      result = active.parser.feed(chunk);
    } catch (error) {
      this.fail(error as Error);
      return;
    }
    if (result !== 'more') this.answer(active, result === 'done' && active.parser.reusable);
  }

  private onEnd(error: Error | undefined): void {
    const active = this.active;
    if (active) {
      if (error === undefined && active.parser.end()) this.answer(active, false);
      else if (active.again && !active.parser.started && !active.signal.aborted) this.retry(active, active.again);
      else this.fail(error ?? Object.assign(new Error('the connection closed before an answer'), { code: 'ECONNRESET' }));
    }
    this.destroy();
  }

  /** The request in flight, no longer this connection's; its abort listener removed. */
  private detach(): Active | undefined {
    const active = this.active;
    this.active = undefined;
    active?.signal.removeEventListener('abort', active.onAbort);
    return active;
  }

  private answer(active: Active, reuse: boolean): void {
    this.detach();
    const { parser } = active;
    // Stop offering the connection a little before the server's announced idle timeout: a request
    // written as it closes would only have to be sent again.
    this.idleUntil = parser.keepAliveMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + parser.keepAliveMs - KEEP_ALIVE_MARGIN_MS;
    active.resolve({ status: parser.status, statusText: parser.statusText, body: parser.body() });
    // An answer that came before the whole request was handed to the system (a server refusing
    // early) leaves the connection mid-request: it is not used again.
    if (reuse && !this.closed && this.socket.writableLength === 0) this.client.release(this);
    else this.destroy();
  }

  private retry(active: Active, again: () => Promise<Http1Answer>): void {
    this.detach();
    this.destroy();
    active.resolve(again());
  }

  private fail(error: Error): void {
    const active = this.detach();
    this.destroy();
    active?.reject(error);
  }

  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.client.forget(this);
    this.socket.destroy();
  }

  /** Ends the connection; a request on it fails with `error`. */
  shutdown(error: Error): void {
    if (this.active) this.fail(error);
    else this.destroy();
  }

  get usable(): boolean {
    return !this.closed && !this.socket.destroyed && Date.now() < this.idleUntil;
  }
}

export interface Http1ClientOptions {
  /** How long a connection may stay idle before it is closed (default IDLE_MS). */
  idleMs?: number;
  /** Extra TLS options for https connections (tests trust their own certificate with `ca`). */
  tls?: Pick<TlsOptions, 'ca'>;
  /** Told of every new connection (metrics). */
  onConnection?: (tls: boolean) => void;
  /** Told when a request is sent again because its kept-alive connection was found closed (metrics). */
  onResend?: () => void;
}

export class Http1Client {
  private readonly idle = new Map<string, Connection[]>();
  /** Every connection not yet closed, idle or carrying a request. */
  private readonly open = new Set<Connection>();
  private sweeper: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly idleMs: number;
  readonly tlsOptions: Pick<TlsOptions, 'ca'>;

  constructor(private readonly options: Http1ClientOptions = {}) {
    this.idleMs = options.idleMs ?? IDLE_MS;
    this.tlsOptions = options.tls ?? {};
  }

  post(destination: Http1Destination, request: Http1Request): Promise<Http1Answer> {
    if (request.signal.aborted) return Promise.reject(abortError(request.signal));
    if (this.closed) return Promise.reject(new Error('the webhook client is closed'));
    const kept = this.take(destination.key);
    if (!kept) return this.connect(destination).send(request);
    return kept.send(request, () => {
      if (this.closed) return Promise.reject(new Error('the webhook client is closed'));
      this.options.onResend?.();
      return this.connect(destination).send(request);
    });
  }

  private connect(destination: Http1Destination): Connection {
    this.options.onConnection?.(destination.tls === true);
    const connection = new Connection(destination.key, destination, this);
    this.open.add(connection);
    return connection;
  }

  /** Idle connections kept right now (tests). */
  idleCount(key?: string): number {
    if (key !== undefined) return this.idle.get(key)?.length ?? 0;
    let n = 0;
    for (const list of this.idle.values()) n += list.length;
    return n;
  }

  /** Ends every connection (a request in flight fails); later requests are refused. */
  close(): void {
    this.closed = true;
    const closing = new Error('the webhook client is closed');
    for (const connection of [...this.open]) connection.shutdown(closing);
    this.idle.clear();
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  private take(key: string): Connection | undefined {
    const list = this.idle.get(key);
    if (!list) return undefined;
    while (list.length > 0) {
      const connection = list.pop()!;
      if (connection.usable) {
        if (list.length === 0) this.idle.delete(key);
        return connection;
      }
      connection.destroy();
    }
    this.idle.delete(key);
    return undefined;
  }

  /** A connection whose answer is done and that may carry another request. */
  release(connection: Connection): void {
    if (this.closed) {
      connection.destroy();
      return;
    }
    let list = this.idle.get(connection.key);
    if (!list) this.idle.set(connection.key, (list = []));
    if (list.length >= MAX_IDLE_PER_KEY) {
      connection.destroy();
      return;
    }
    connection.idleUntil = Math.min(connection.idleUntil, Date.now() + this.idleMs);
    list.push(connection);
    this.sweeper ??= setInterval(() => this.sweep(), Math.max(1, this.idleMs / 3)).unref();
  }

  /** A connection that closed: it is no longer offered. */
  forget(connection: Connection): void {
    this.open.delete(connection);
    const list = this.idle.get(connection.key);
    if (!list) return;
    const at = list.indexOf(connection);
    if (at >= 0) list.splice(at, 1);
    if (list.length === 0) this.idle.delete(connection.key);
  }

  private sweep(): void {
    const now = Date.now();
    for (const list of [...this.idle.values()]) {
      for (const connection of [...list]) if (connection.idleUntil <= now) connection.destroy();
    }
    if (this.idle.size === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }
}
