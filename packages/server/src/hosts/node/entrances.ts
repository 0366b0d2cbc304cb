/**
 * How a request reaches its answer on the Node host (docs/architecture.md "Plain appends without
 * the Hono app", "Plain page reads skip the adapter on Node"): connections that only append are
 * answered by the connection front before node:http (front.ts); on node:http, plain appends,
 * Durable Streams appends and plain page reads are answered directly (append.ts); everything else
 * goes to the Hono app through @hono/node-server.
 */
import { createServer, type Server } from 'node:http';
import { getRequestListener, RequestError } from '@hono/node-server';
import { RivuletError } from '@rivulet/contract';
import type { MetricsRegistry } from '../../engine/metrics.js';
import type { LocalStreamService } from '../../engine/service.js';
import { errorResponse, type ErrorLogger } from '../../http/errors.js';
import type { RequestHooks } from '../../http/request-hooks.js';
import { readAnswerer } from '../../http/read-route.js';
import { isDsAppendTarget, type DurableStreams } from '../../http/durable-streams/routes.js';
import { appendAnswerer, isPlainAppendTarget, isPlainHost, nativeAppend, nativeRead, type AppendAnswerer } from './append.js';
import { attachFront, type Front } from './front.js';
import { FlushingResponse } from './flushing-response.js';
import { trackHttp, type HttpDrain } from './drain.js';

export interface EntranceOptions {
  /** The Hono app's fetch: what no fast path answers. */
  fetch: (request: Request) => Response | Promise<Response>;
  service: LocalStreamService;
  tokens: ReadonlyMap<string, string> | null;
  maxBodyBytes: number;
  logger: ErrorLogger;
  hooks: RequestHooks;
  /** The Durable Streams layer the app uses too (its appends take the fast paths as well). */
  durable: DurableStreams;
  /** The host name the listener is bound to (the adapter's Request URLs). */
  hostname: string;
  keepAliveTimeoutMs?: number | undefined;
  headersTimeoutMs?: number | undefined;
  metrics: MetricsRegistry;
  /** Told of each request node:http parses (the front's appends show as commits instead). */
  onRequest?: () => void;
}

export interface Entrances {
  server: Server;
  /** What node:http is answering, so that a shutdown answers it before it closes (drain.ts). */
  http: HttpDrain;
  front: Front;
}

export function nodeEntrances(options: EntranceOptions): Entrances {
  const { service, tokens, maxBodyBytes, logger, hooks, durable } = options;
  // Requests the adapter cannot even turn into a Request (a raw "\\" in the path, say) still get
  // the JSON error shape (protocol §1.3), not an empty 400.
  const listener = getRequestListener(options.fetch, {
    hostname: options.hostname,
    errorHandler: (error) =>
      errorResponse(
        error instanceof RequestError
          ? new RivuletError('INVALID_INPUT', `request refused: ${error.message}`)
          : error,
        logger,
      ),
  });
  // Plain appends are answered on node:http directly (append.ts); everything else by the app.
  const answerPlainAppend = appendAnswerer({ service, tokens, maxBodyBytes, logger, hooks });
  // Durable Streams appends take the same fast paths (docs/durable-streams.md "Speed").
  const answerAppend: AppendAnswerer = (url, headers, body, started) =>
    (isDsAppendTarget(url) ? durable.answerAppend : answerPlainAppend)(url, headers, body, started);
  const isFastTarget = (url: string) => isPlainAppendTarget(url) || isDsAppendTarget(url);
  const appendNatively = nativeAppend(answerAppend, logger, isFastTarget);
  // Plain page reads too (http/read-route.ts), with the answer the app would give.
  const readNatively = nativeRead(readAnswerer({ service, tokens, logger, hooks }), logger);
  const onRequest = options.onRequest ?? (() => undefined);
  const server = createServer({ ServerResponse: FlushingResponse }, (incoming, outgoing) => {
    onRequest();
    if (http.admit(outgoing) && !appendNatively(incoming, outgoing) && !readNatively(incoming, outgoing)) void listener(incoming, outgoing);
  });
  const http = trackHttp(server);
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  if (options.headersTimeoutMs !== undefined) server.headersTimeout = options.headersTimeoutMs;
  // Connections that only append are answered before node:http (front.ts).
  const front = attachFront(server, {
    answer: answerAppend,
    rules: { maxBodyBytes, accepts: (target, hostHeader) => isFastTarget(target) && isPlainHost(hostHeader) },
    log: (message, error) => logger.error(message, error),
    metrics: options.metrics,
  });
  return { server, http, front };
}
