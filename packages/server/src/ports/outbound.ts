/**
 * Outbound HTTP, the port webhook delivery reaches the network through (docs/architecture.md
 * "The flow of one delivery"). Each host decides *where* a request may go — the Node adapter
 * resolves the host name once, refuses private destinations unless they are allowed (protocol
 * §17.4) and connects to the vetted address — so the engine stays free of sockets and DNS.
 *
 * The contract every adapter keeps (test/outbound-checks.ts holds each adapter to it):
 * - one request, never a redirect followed: a 3xx is answered like any other status;
 * - at most `maxResponseBytes` of the response body are read, the rest is never buffered;
 * - the answer is the status: once a status line and its header fields have arrived the request is
 *   answered, and a body cut short after them is read as far as it came;
 * - the signal ends the request at once: the promise rejects (with the signal's reason);
 * - anything else that is not an answer (refused destination, DNS, connect, TLS, a connection
 *   closed before a status) rejects with an Error whose message says what happened, naming the
 *   destination.
 */

export interface OutboundPost {
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal;
  /**
   * Called at most once, when the request is on its way: the Node adapter calls it right after
   * writing the request to its connection, the fetch adapter once `fetch` was called. The send
   * loop starts the next webhook's preparation then (engine/delivery/sender.ts).
   */
  onSent?: () => void;
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
