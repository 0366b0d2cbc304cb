/**
 * The outbound HTTP port over the Workers `fetch` (ports/outbound.ts), for webhook-post from a
 * stream's Durable Object. The port's contract holds: one request and never a redirect followed
 * (`redirect: "manual"` answers the 3xx itself), at most `maxResponseBytes` of the body read (the
 * rest is cancelled), the delivery signal aborts the request, and anything that is not an answer
 * rejects with a message naming the destination.
 *
 * Destinations: when private webhooks are not allowed, a URL whose host is a literal loopback,
 * private, link-local, unspecified or metadata address is refused before anything is sent. A
 * Worker cannot resolve a host name itself, so a *name* that resolves to such an address is not
 * vetted here as it is in the Node host; Workers' fetch does not reach private networks of the
 * deployment (docs/cloudflare.md §4.4).
 */
import { isPrivateHost } from '../../core/private-address.js';
import type { OutboundAnswer, OutboundHttp } from '../../ports/outbound.js';

const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

const REASONS: Record<number, string> = {
  200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 301: 'Moved Permanently', 302: 'Found', 303: 'See Other',
  307: 'Temporary Redirect', 308: 'Permanent Redirect', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden',
  404: 'Not Found', 408: 'Request Timeout', 409: 'Conflict', 410: 'Gone', 413: 'Payload Too Large', 422: 'Unprocessable Entity',
  429: 'Too Many Requests', 500: 'Internal Server Error', 501: 'Not Implemented', 502: 'Bad Gateway', 503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

async function readCapped(response: Response, max: number, signal: AbortSignal): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < max) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } catch (error) {
    // Ended by the delivery's signal: not an answer. Otherwise the connection broke after the
    // status, and what arrived is the body.
    if (signal.aborted) throw signal.reason ?? error;
  } finally {
    if (size >= max) await reader.cancel().catch(() => undefined);
    else reader.releaseLock();
  }
  const all = new Uint8Array(Math.min(size, max));
  let at = 0;
  for (const chunk of chunks) {
    const part = chunk.subarray(0, all.length - at);
    all.set(part, at);
    at += part.length;
    if (at >= all.length) break;
  }
  return new TextDecoder().decode(all);
}

export function fetchOutbound(options: { allowPrivate: boolean; maxResponseBytes?: number }): OutboundHttp {
  const max = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  return {
    async post(url, request): Promise<OutboundAnswer> {
      const target = new URL(url);
      if (!options.allowPrivate && isPrivateHost(target.hostname)) {
        throw new Error(`refused to send to ${target.host}: a loopback, private, link-local or metadata address`);
      }
      let response: Response;
      try {
        const answer = fetch(url, { method: 'POST', headers: request.headers, body: request.body, redirect: 'manual', signal: request.signal });
        request.onSent?.();
        response = await answer;
      } catch (error) {
        throw new Error(`cannot reach ${target.origin}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
      // The status is the answer (ports/outbound.ts): a body cut short after it is read as far as it came.
      const body = await readCapped(response, max, request.signal);
      return { status: response.status, statusText: response.statusText || REASONS[response.status] || '', body };
    },
  };
}
