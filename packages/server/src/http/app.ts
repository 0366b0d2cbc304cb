/**
 * The Hono application shared by every host: routes, authentication, the error mapping, metrics.
 * It depends on the stream service interface only, never on a storage adapter or a host.
 */
import { Hono, type Context } from 'hono';
import { RivuletError } from '@rivulet/contract';
import type { StreamService } from '../engine/service.js';
import type { ServerMetrics } from '../engine/metrics.js';
import { authenticate, type TokenTable } from './auth.js';
import { headerReader } from './request-headers.js';
import { consoleLogger, errorResponse, type ErrorLogger } from './errors.js';
import { buildOpenApi, coreOperations, type OpenApiOperation } from './openapi.js';
import {
  handleListRequest,
  handleStreamRequest,
  json,
  routeTemplate,
  stateMethod,
  type CustomMethod,
} from './stream-routes.js';
import { STREAMS_PREFIX, parseStreamAddress } from './stream-url.js';
import { subscriptionMethods, subscriptionOperations } from './subscription-methods.js';
import { connectionMethods, connectionOperations } from './connection-methods.js';

export interface AppOptions {
  service: StreamService;
  tokens: TokenTable | null;
  metrics: ServerMetrics;
  maxBodyBytes: number;
  version?: string;
  logger?: ErrorLogger;
  /** Custom stream methods added by later capabilities (":state" is built in). */
  methods?: ReadonlyMap<string, CustomMethod>;
  operations?: readonly OpenApiOperation[];
  /** Answers false while starting or shutting down. */
  ready?(): boolean;
  /**
   * The web UI's built files (API.md §3 `GET /`): answers a file of the UI for a GET path, or null.
   * Hosts provide it (the Node host reads packages/ui/dist); without it `/` is NOT_FOUND.
   */
  assets?(path: string): Promise<Response | null>;
}

/** The Node incoming message, when the host is Node (the adapter passes it as a binding). */
function incomingOf(c: Context): { url?: string; headers?: Record<string, string | string[] | undefined> } | undefined {
  return (c.env as { incoming?: { url?: string; headers?: Record<string, string | string[] | undefined> } } | undefined)?.incoming;
}

/** The request path exactly as the client sent it, before URL normalisation removed dot segments. */
function rawPathOf(c: Context): string {
  const raw = incomingOf(c)?.url;
  if (typeof raw === 'string' && raw.startsWith('/')) {
    const q = raw.indexOf('?');
    return q === -1 ? raw : raw.slice(0, q);
  }
  return new URL(c.req.url).pathname;
}

export function createApp(options: AppOptions): Hono {
  const logger = options.logger ?? consoleLogger;
  const methods = new Map<string, CustomMethod>([
    ['state', stateMethod],
    ...subscriptionMethods,
    ...connectionMethods,
    ...(options.methods ?? []),
  ]);
  const openapi = buildOpenApi(
    [...coreOperations, ...subscriptionOperations, ...connectionOperations, ...(options.operations ?? [])],
    options.version ?? '0.0.0',
  );
  const { metrics } = options;
  const app = new Hono();

  app.onError((error) => errorResponse(error, logger));

  app.use('*', async (c, next) => {
    const started = performance.now();
    const rawPath = rawPathOf(c);
    const isStream = rawPath.startsWith(`${STREAMS_PREFIX}/`);
    let route = `${c.req.method} ${isStream ? '/v1/streams/{invalid}' : c.req.routePath}`;
    try {
      if (isStream) {
        const address = parseStreamAddress(rawPath);
        route = routeTemplate(c.req.method, address, methods);
        const headers = headerReader(c.req.raw, incomingOf(c));
        const principal = authenticate(headers, options.tokens);
        c.res = await handleStreamRequest(c.req.raw, headers, address, principal, {
          service: options.service,
          maxBodyBytes: options.maxBodyBytes,
          methods,
          sse: { onOpen: () => metrics.sseReaders.inc(), onClose: () => metrics.sseReaders.dec() },
        });
      } else {
        await next();
        route = `${c.req.method} ${c.req.routePath}`;
      }
    } catch (error) {
      c.res = errorResponse(error, logger);
    }
    metrics.httpDuration.observe((performance.now() - started) / 1000, { route, status: String(c.res.status) });
  });

  app.get('/healthz', (c) => {
    if (options.ready && !options.ready()) {
      return errorResponse(new RivuletError('UNAVAILABLE', 'starting or shutting down'), logger);
    }
    return c.json({ ok: true });
  });

  app.get('/v1/openapi.json', (c) => c.json(openapi));

  // The RPC session is a WebSocket upgrade, which the host answers before this app (API.md §5).
  app.all('/v1/rpc', () => {
    throw new RivuletError(
      'INVALID_INPUT',
      '/v1/rpc is a Cap\'n Web session over WebSocket: connect with a WebSocket upgrade (the SDK\'s connect(url) does)',
    );
  });

  app.get('/metrics', (c) => {
    authenticate(c.req.raw.headers, options.tokens);
    return c.body(metrics.registry.render(), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
  });

  app.get(STREAMS_PREFIX, (c) =>
    handleListRequest(c.req.raw, authenticate(c.req.raw.headers, options.tokens), options.service),
  );

  if (options.assets) {
    const assets = options.assets;
    app.get('*', async (c, next) => {
      const found = await assets(new URL(c.req.url).pathname);
      if (found) return found;
      return next();
    });
  }

  app.notFound((c) =>
    json({ error: { code: 'NOT_FOUND', message: `no route ${c.req.method} ${new URL(c.req.url).pathname}` } }, 404),
  );

  return app;
}
