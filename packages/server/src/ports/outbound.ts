/**
 * Outbound HTTP, the port webhook delivery reaches the network through (docs/architecture.md
 * "The flow of one delivery"). Each host decides *where* a request may go — the Node adapter
 * resolves the host name once, refuses private destinations unless they are allowed (protocol
 * §17.4) and connects to the vetted address — so the engine stays free of sockets and DNS.
 *
 * The contract every adapter keeps:
 * - one request, never a redirect followed: a 3xx is answered like any other status;
 * - at most `maxResponseBytes` of the response body are read, the rest is never buffered;
 * - the signal ends the request at once (the promise then rejects);
 * - anything that is not an answer (refused destination, DNS, connect, TLS, reset, abort) rejects
 *   with an Error whose message says what happened, naming the destination.
 */

export interface OutboundPost {
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal;
}

export interface OutboundAnswer {
  status: number;
  /** The reason phrase (the standard one when the server sent none). */
  statusText: string;
  /** The start of the response body as text, at most the adapter's cap; for error messages only. */
  body: string;
}

export interface OutboundHttp {
  post(url: string, request: OutboundPost): Promise<OutboundAnswer>;
}
