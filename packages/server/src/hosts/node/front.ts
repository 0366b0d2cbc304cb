/**
 * The front of the Node host's listening socket: every new connection is read here first, and as
 * long as its requests are plain appends (http1-request.ts: `POST /v1/streams/{path}`, a declared
 * length, nothing unusual) they are answered here, on the socket, with the answer the append
 * route decides (http/append-route.ts, which also tells the request hooks): the front only reads
 * the bytes and writes the answer. At the first request that is anything else the
 * connection is handed to node:http for the rest of its life: its bytes go back in front of the
 * socket's stream and node:http's own connection listener takes the socket, so its parser sees
 * exactly what the client sent. Requests on one connection are answered strictly in order: a
 * request is handed over only once every earlier answer has been written.
 *
 * Why: node:http's per-request machinery (IncomingMessage and ServerResponse streams, header
 * objects, cork/writev) costs about 20–30 µs of CPU per request here, more than the engine's whole
 * append (decision 004); a connection that only appends is what a producer holds.
 *
 * It keeps node:http's manners on its connections: answers carry `Date`, `Connection` and
 * `Keep-Alive` like node:http's; an idle connection is closed after the server's
 * `keepAliveTimeout` (its first request waits up to `headersTimeout`); a request whose head is not
 * complete within `headersTimeout`, or whose body within `requestTimeout`, gets node:http's 408 and
 * the connection closes; `Connection: close` and a client's half-close end it after the answer.
 */
import { STATUS_CODES, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { readRequestHead, type HeadRules, type PlainRequest } from '../../net/http1-request.js';
import { JSON_TYPE, type AppendReply } from '../../http/append-route.js';
import type { HeaderReader } from '../../http/request-headers.js';
import type { AnswerHeaders } from '../../http/request-hooks.js';
import type { Counter, MetricsRegistry } from '../../engine/metrics.js';
import { SETTLE_MS } from './drain.js';

/** The append route's answerer (http/append-route.ts `AppendAnswerer`), as far as the front needs it. */
export type FrontAnswerer = (
  url: string,
  headers: HeaderReader,
  body: () => Uint8Array,
  started: number,
) => Promise<AppendReply>;

export interface FrontOptions {
  answer: FrontAnswerer;
  rules: HeadRules;
  log(message: string, error: unknown): void;
  /** Where `rivulet_http_front_connections` and `rivulet_http_handovers_total` are kept. */
  metrics?: MetricsRegistry;
}

export interface Front {
  /** Connections still read by the front (not handed over, not closed). */
  readonly connections: number;
  /** Connections handed to node:http so far. */
  readonly handedOver: number;
  /**
   * Shutdown (protocol §16.9): answers what each connection has begun, with `Connection: close`,
   * closes connections as they fall idle (after a settle window for requests already buffered),
   * and resolves once none is left or at `deadline` (performance.now() time).
   */
  drain(deadline: number): Promise<void>;
  /** Destroys every connection still read by the front (node:http's are closed by the server). */
  close(): void;
}

/** node:http's answer to a request that did not arrive in time. */
const REQUEST_TIMEOUT = 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n';
/** What node:http answers a request cut short by the client's half-close. */
const BAD_REQUEST = 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n';
/** Bytes buffered while an answer is pending before the socket stops reading. */
const MAX_PENDING_BYTES = 256 * 1024;
/**
 * A head still incomplete after this many pieces goes to node:http, whose parser reads incrementally:
 * the front joins a head's pieces before reading it, which a head sent a byte at a time would
 * make quadratic. A producer's appends arrive in one or two pieces.
 */
const MAX_HEAD_PIECES = 16;

/** `Date` header value, built at most once a second (node:http caches it the same way). */
let dateSecond = -1;
let dateText = '';
function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(second * 1000).toUTCString();
  }
  return dateText;
}

/** The request hooks' header fields as head lines (request-hooks.ts checked that they can be written). */
function fieldLines(fields: AnswerHeaders): string {
  let lines = '';
  for (const [name, value] of fields) lines += `${name}: ${value}\r\n`;
  return lines;
}

type Phase = 'idle' | 'head' | 'body' | 'answering';

class FrontConnection {
  private phase: Phase = 'idle';
  /** Unread bytes: the head being read (contiguous), then whatever follows it. */
  private chunks: Buffer[] = [];
  private buffered = 0;
  private request: PlainRequest | null = null;
  /** Pieces the current head has arrived in. */
  private headPieces = 0;
  /** When the current phase began (performance.now()): the timeouts count from here. */
  private since = performance.now();
  /** Whether the first request has begun (before it, the idle limit is headersTimeout). */
  private served = false;
  private clientEnded = false;
  private paused = false;
  private done = false;

  constructor(
    readonly socket: Socket,
    private readonly owner: FrontState,
  ) {
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('error', this.onError);
    socket.on('close', this.onClose);
  }

  /** A request is being answered (read through a getter: advance() changes the phase). */
  private get answering(): boolean {
    return this.phase === 'answering';
  }

  private readonly onData = (chunk: Buffer): void => {
    if (this.done) return;
    if (this.phase === 'idle') {
      this.phase = 'head';
      this.since = performance.now();
      this.headPieces = 0;
    }
    if (this.phase === 'head') this.headPieces++;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    if (this.phase === 'answering') {
      if (this.buffered > MAX_PENDING_BYTES && !this.paused) {
        this.paused = true;
        this.socket.pause();
      }
      return;
    }
    this.advance();
  };

  private readonly onEnd = (): void => {
    this.clientEnded = true;
    if (!this.answering) this.finish();
  };

  private readonly onError = (): void => {
    // The socket is destroyed with the error; 'close' follows.
    this.done = true;
  };

  private readonly onClose = (): void => {
    this.done = true;
    this.owner.connections.delete(this);
  };

  /** Reads as far as the buffered bytes allow; starts answering a complete plain request. */
  private advance(): void {
    if (this.phase === 'head') {
      const head = this.joined();
      const verdict = readRequestHead(head, this.owner.rules);
      if (verdict === 'incomplete') {
        if (this.headPieces >= MAX_HEAD_PIECES) this.handOver();
        return;
      }
      if (verdict === 'other') return this.handOver();
      this.request = verdict;
      this.phase = 'body';
    }
    const request = this.request!;
    const needed = request.headBytes + request.contentLength;
    if (this.buffered < needed) return;
    const bytes = this.joined();
    const body = bytes.subarray(request.headBytes, needed);
    this.chunks = bytes.length > needed ? [bytes.subarray(needed)] : [];
    this.buffered = bytes.length - needed;
    this.phase = 'answering';
    this.served = true;
    this.request = null;
    this.owner.answer(request.target, { get: (name) => request.fields.get(name) ?? null }, () => body, performance.now()).then(
      (reply) => this.answered(request, reply),
      (error: unknown) => {
        this.owner.log('rivulet: answering an append failed', error);
        this.socket.destroy();
      },
    );
  }

  /** The buffered bytes as one buffer (kept as one for the next call). */
  private joined(): Buffer {
    if (this.chunks.length !== 1) this.chunks = [Buffer.concat(this.chunks, this.buffered)];
    return this.chunks[0]!;
  }

  private answered(request: PlainRequest, { status, text, headers, contentType }: AppendReply): void {
    if (this.done || this.socket.destroyed) return;
    // After the client's half-close, requests it sent before are still answered, then it ends.
    const close = request.close || this.owner.closing || (this.clientEnded && this.buffered === 0);
    const keepAlive = close ? 'close' : `keep-alive\r\nKeep-Alive: timeout=${Math.floor(this.owner.server.keepAliveTimeout / 1000)}`;
    const type = contentType === undefined ? JSON_TYPE : contentType;
    // Like node:http: a 204 has no length (nor body).
    this.socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${type === null ? '' : `content-type: ${type}\r\n`}` +
        `${status === 204 ? '' : `content-length: ${Buffer.byteLength(text)}\r\n`}` +
        `${headers === undefined ? '' : fieldLines(headers)}Date: ${httpDate()}\r\nConnection: ${keepAlive}\r\n\r\n${text}`,
    );
    if (close) return this.finish();
    // A client that sends without reading the answers: read on once they have gone out.
    if (this.socket.writableNeedDrain) this.socket.once('drain', this.next);
    else this.next();
  }

  /** After an answer: read the next request, if its bytes are here. */
  private readonly next = (): void => {
    if (this.done) return;
    this.phase = this.buffered > 0 ? 'head' : 'idle';
    this.since = performance.now();
    this.headPieces = this.buffered > 0 ? 1 : 0;
    if (this.paused) {
      this.paused = false;
      this.socket.resume();
    }
    if (this.phase === 'head') this.advance();
    // Half-closed: what is left can never become a whole request.
    if (this.clientEnded && !this.answering) this.finish();
  };

  /**
   * Ends the connection after what was written (the client's half-close, `Connection: close`).
   * Bytes left unread after a half-close are a request that can never complete: 400, as node:http.
   */
  private finish(): void {
    if (this.done) return;
    this.done = true;
    this.owner.connections.delete(this);
    if (this.clientEnded && this.buffered > 0) this.socket.end(BAD_REQUEST);
    else this.socket.end();
    // Closed once what was written has gone out, as node:http closes a connection it ends: a
    // client that never closes its side must not hold the socket (and a server's close) open.
    this.socket.once('finish', () => this.socket.destroy());
  }

  /** Gives the connection, and every byte not yet answered, to node:http. */
  private handOver(): void {
    this.done = true;
    this.owner.connections.delete(this);
    this.owner.handedOver++;
    this.owner.handovers?.inc();
    const socket = this.socket;
    socket.off('data', this.onData);
    socket.off('end', this.onEnd);
    socket.off('error', this.onError);
    socket.off('close', this.onClose);
    const rest = this.buffered > 0 ? this.joined() : null;
    this.chunks = [];
    // node:http reads a flowing socket: its bytes must reach its parser before any later ones.
    if (this.paused) socket.resume();
    for (const listener of this.owner.nodeListeners) listener.call(this.owner.server, socket);
    if (rest) socket.unshift(rest);
  }

  /** Ends the connection if no request has begun on it (shutdown; one that has is closed after its answer). */
  closeIfIdle(): void {
    if (!this.done && this.phase === 'idle' && this.buffered === 0) this.finish();
  }

  /** Applies the server's time limits (called by the sweep). */
  expireIfDue(now: number): void {
    if (this.done) return;
    const server = this.owner.server;
    if (this.phase === 'idle') {
      const limit = this.served ? server.keepAliveTimeout : server.headersTimeout;
      if (limit > 0 && now - this.since >= limit) {
        this.done = true;
        this.owner.connections.delete(this);
        this.socket.destroy();
      }
    } else if (this.phase === 'head' || this.phase === 'body') {
      const limit = this.phase === 'head' ? server.headersTimeout : server.requestTimeout;
      if (limit > 0 && now - this.since >= limit) {
        this.done = true;
        this.owner.connections.delete(this);
        this.socket.end(REQUEST_TIMEOUT);
      }
    }
  }
}

interface FrontState {
  server: Server;
  nodeListeners: Array<(socket: Socket) => void>;
  answer: FrontAnswerer;
  rules: HeadRules;
  log(message: string, error: unknown): void;
  connections: Set<FrontConnection>;
  handedOver: number;
  handovers: Counter | undefined;
  closing: boolean;
}

/**
 * Puts the front before `server`'s connection listener. Call before `listen`; `close()` before
 * closing the server.
 */
export function attachFront(server: Server, options: FrontOptions): Front {
  const nodeListeners = server.listeners('connection') as Array<(socket: Socket) => void>;
  for (const listener of nodeListeners) server.off('connection', listener);
  const state: FrontState = {
    server,
    nodeListeners,
    answer: options.answer,
    rules: options.rules,
    log: options.log,
    connections: new Set(),
    handedOver: 0,
    handovers: options.metrics?.counter('rivulet_http_handovers_total', 'Connections the front handed to node:http (their first request other than a plain append)'),
    closing: false,
  };
  const open = options.metrics?.gauge('rivulet_http_front_connections', 'Connections whose requests the front answers (plain appends so far)');
  if (open) open.collect = () => [{ labels: {}, value: state.connections.size }];
  let sweep: NodeJS.Timeout | null = null;
  const sweepEvery = () => {
    const limits = [server.keepAliveTimeout, server.headersTimeout, server.requestTimeout].filter((ms) => ms > 0);
    return Math.min(1000, Math.max(10, Math.floor(Math.min(...limits, 4000) / 4)));
  };
  server.on('connection', (socket: Socket) => {
    if (state.closing) {
      socket.destroy();
      return;
    }
    state.connections.add(new FrontConnection(socket, state));
    if (sweep === null) {
      sweep = setInterval(() => {
        const now = performance.now();
        for (const connection of state.connections) connection.expireIfDue(now);
      }, sweepEvery());
      sweep.unref();
    }
  });
  return {
    get connections() {
      return state.connections.size;
    },
    get handedOver() {
      return state.handedOver;
    },
    async drain(deadline) {
      // From now on every answer carries Connection: close and ends its connection.
      state.closing = true;
      const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(ms, deadline - performance.now()))));
      await pause(SETTLE_MS);
      while (state.connections.size > 0 && performance.now() < deadline) {
        for (const connection of state.connections) connection.closeIfIdle();
        if (state.connections.size > 0) await pause(10);
      }
    },
    close() {
      state.closing = true;
      if (sweep !== null) clearInterval(sweep);
      sweep = null;
      for (const connection of state.connections) connection.socket.destroy();
      state.connections.clear();
    },
  };
}
