/**
 * Draining node:http before the Node host exits (protocol §16.9): every request node:http is
 * answering is answered, with `Connection: close`, and every connection is closed only once it is
 * idle, so a client never sees a reset on a request the server had already received.
 *
 * A request may already sit in a connection's socket buffer when the shutdown begins, not yet read:
 * closing that connection at once would reset it. So idle connections are closed only after a short
 * settle window, in which such requests are read, become requests in flight and are answered.
 */
import type { Server, ServerResponse } from 'node:http';
import { Server as NetServer } from 'node:net';

/** How long buffered requests get to be read before idle connections close. */
export const SETTLE_MS = 50;

export interface HttpDrain {
  /** Responses node:http has not finished. */
  readonly inFlight: number;
  /**
   * Whether to run a request node:http has just read: false once the settle window of a drain is
   * over (storage is about to close), and the request is then answered 503 here.
   */
  admit(outgoing: ServerResponse): boolean;
  /** Stops accepting connections (the listener closes; open connections stay). */
  stopListening(): void;
  /** Resolves once the listener is closed and the server's last connection has ended. */
  readonly closed: Promise<void>;
  /**
   * Answers what is in flight with `Connection: close`, closes connections as they fall idle, and
   * resolves once none is left or at `deadline` (performance.now() time), whichever comes first.
   */
  drain(deadline: number): Promise<void>;
}

export function trackHttp(server: Server): HttpDrain {
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  let admitting = true;
  let changed: (() => void) | null = null;
  // net.Server emits 'close' once, when it no longer listens and its last connection ended.
  const closed = new Promise<void>((resolve) => server.once('close', () => resolve()));
  // Before the request handler: a request that starts while draining is told at once.
  server.prependListener('request', (_incoming, outgoing: ServerResponse) => {
    inFlight.add(outgoing);
    if (draining) outgoing.setHeader('connection', 'close');
    outgoing.once('close', () => {
      inFlight.delete(outgoing);
      changed?.();
    });
  });
  return {
    get inFlight() {
      return inFlight.size;
    },
    admit(outgoing) {
      if (admitting) return true;
      const body = JSON.stringify({ error: { code: 'UNAVAILABLE', message: 'the server is shutting down: retry on the next one' } });
      outgoing.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
      outgoing.end(body);
      return false;
    },
    closed,
    stopListening() {
      // net's close: node:http's own close would also drop idle connections at once.
      if (server.listening) NetServer.prototype.close.call(server);
    },
    async drain(deadline) {
      draining = true;
      for (const outgoing of inFlight) {
        if (!outgoing.headersSent) outgoing.setHeader('connection', 'close');
        // An answer whose head already went out as keep-alive (a live SSE stream): node:http closes
        // its connection once it ends, so no client keeps a socket to a server on its way down.
        else (outgoing as ServerResponse & { _last: boolean })._last = true;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(SETTLE_MS, deadline - performance.now()))));
      // What was buffered has been read: from here on nothing new starts, what runs is answered.
      admitting = false;
      // Connections fall idle as their last answer goes out; close them as that happens.
      while (performance.now() < deadline) {
        server.closeIdleConnections();
        if (inFlight.size === 0) break;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.max(1, Math.min(SETTLE_MS, deadline - performance.now())));
          changed = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        changed = null;
      }
      server.closeIdleConnections();
    },
  };
}
