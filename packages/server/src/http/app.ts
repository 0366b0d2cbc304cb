/**
 * The Hono application shared by every host: routes, authentication, the error mapping, and the
 * request hooks (request-hooks.ts: the metrics) for every request it answers. A plain append is
 * answered by the append route (append-route.ts), the same function the Node host's other
 * entrances use. It depends on the stream service interface only, never on a storage adapter or a host.
 */
import { Hono, type Context } from 'hono';
import { RivuletError, type ErrorCode } from '@rivulet/contract';
import type { StreamService } from '../engine/service.js';
import type { ServerMetrics } from '../engine/metrics.js';
import { authenticate, type TokenTable } from './auth.js';
import { readBodyBytes } from './body.js';
import { headerReader } from './request-headers.js';
import { answerResponse, consoleLogger, errorAnswer, errorResponse, rivuletErrorResponse, type ErrorLogger } from './errors.js';
import { buildOpenApi, coreOperations, type OpenApiOperation } from './openapi.js';
import { JSON_TYPE, appendAnswerer, hooksOf } from './append-route.js';
import { plainReadTarget, readAnswerer } from './read-route.js';
import type { AnswerHeaders, AnsweredRequest, RequestHooks } from './request-hooks.js';
import {
  handleListRequest,
  handleStreamRequest,
  routeTemplate,
  stateMethod,
  type CustomMethod,
} from './stream-routes.js';
import { STREAMS_PREFIX, hasMethodSuffix, parseStreamAddress } from './stream-url.js';
import { subscriptionMethods, subscriptionOperations } from './subscription-methods.js';
import { connectionMethods, connectionOperations } from './connection-methods.js';
import { handleSubscriptionList, subscriptionAdminMethods, subscriptionAdminOperations } from './subscription-admin-routes.js';
import { DEFAULT_LONG_POLL_TIMEOUT_MS, DS_PREFIX, durableStreamsHandler, type DurableStreams } from './durable-streams/routes.js';

/** The route label of an answered preflight (any path: its label stays bounded). */
const PREFLIGHT_ROUTE = 'OPTIONS {preflight}';

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
  /** What `/readyz` answers (protocol §15.1); without it, readiness follows `ready()`. */
  readiness?(): { ready: true } | { ready: false; reason: string };
  /** Aborted when the host shuts down: live SSE answers then end cleanly (protocol §16.9). */
  stopping?: AbortSignal;
  /**
   * The web UI's built files (protocol §15.4 `GET /`): answers a file of the UI for a GET path, or null.
   * Hosts provide it (the Node host reads packages/ui/dist); without it `/` is NOT_FOUND.
   */
  assets?(path: string): Promise<Response | null>;
  /**
   * An online backup of the whole database (protocol §15.5), on hosts that take one (Node); without
   * it `POST /v1/admin/backup` is NOT_FOUND.
   */
  backup?(): Promise<{ bytes: number; format: number; body: ReadableStream<Uint8Array> }>;
  /**
   * What every answered request is reported to; the host composes it once and gives the same to
   * its other entrances. Without it, the request-duration metric alone (in `metrics`).
   */
  hooks?: RequestHooks;
  /** How long a Durable Streams long-poll waits before answering 204 (docs/durable-streams.md). */
  longPollTimeoutMs?: number;
  /**
   * The Durable Streams routes, when the host shares them with its other entrances (the Node host's
   * fast append paths); without it the app makes its own.
   */
  durableStreams?: DurableStreams;
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

/** The error code of an error a handler threw (Hono's onError answered it), as errorResponse maps it. */
function codeOf(error: Error | undefined): ErrorCode | undefined {
  if (error === undefined) return undefined;
  return error instanceof RivuletError ? error.code : 'INTERNAL';
}

/** Adds the hooks' header fields to the answer (responses built here have mutable headers). */
function addFields(c: Context, fields: AnswerHeaders): void {
  let res = c.res;
  try {
    for (const [name, value] of fields) res.headers.append(name, value);
  } catch {
    // Immutable headers (a response that came from fetch): answer a copy instead.
    res = new Response(res.body, res);
    for (const [name, value] of fields) res.headers.append(name, value);
    c.res = undefined;
    c.res = res;
  }
}

export function createApp(options: AppOptions): Hono {
  const logger = options.logger ?? consoleLogger;
  const methods = new Map<string, CustomMethod>([
    ['state', stateMethod],
    ...subscriptionMethods,
    ...connectionMethods,
    ...subscriptionAdminMethods,
    ...(options.methods ?? []),
  ]);
  const openapi = buildOpenApi(
    [...coreOperations, ...subscriptionOperations, ...connectionOperations, ...subscriptionAdminOperations, ...(options.operations ?? [])],
    options.version ?? '0.0.0',
  );
  const { metrics, maxBodyBytes } = options;
  const hooks = hooksOf({ ...options, logger });
  const answerAppend = appendAnswerer({ service: options.service, tokens: options.tokens, maxBodyBytes, logger, hooks });
  const answerRead = readAnswerer({ service: options.service, tokens: options.tokens, logger, hooks });
  const answerDurableStreams = options.durableStreams?.handle ?? durableStreamsHandler({
    service: options.service,
    tokens: options.tokens,
    maxBodyBytes,
    longPollTimeoutMs: options.longPollTimeoutMs ?? DEFAULT_LONG_POLL_TIMEOUT_MS,
    logger,
    stopping: options.stopping,
  });
  const app = new Hono();

  app.onError((error) => errorResponse(error, logger));

  app.use('*', async (c, next) => {
    const started = performance.now();
    const rawPath = rawPathOf(c);
    const isStream = rawPath.startsWith(`${STREAMS_PREFIX}/`);
    if (isStream && c.req.method === 'POST' && !hasMethodSuffix(rawPath)) {
      // The append route decides, and tells the hooks, itself.
      const request = c.req.raw;
      const headers = headerReader(request, incomingOf(c));
      // The query goes along: the route refuses one (protocol §1.2).
      const search = new URL(request.url).search;
      const answer = await answerAppend(rawPath + search, headers, () => readBodyBytes(request, headers, maxBodyBytes), started);
      c.res = new Response(answer.text, { status: answer.status, headers: { 'content-type': JSON_TYPE } });
      if (answer.headers !== undefined) addFields(c, answer.headers);
      return;
    }
    if (isStream && c.req.method === 'GET') {
      // A plain page read: the read route decides, and tells the hooks, itself (read-route.ts).
      const target = plainReadTarget(rawPath + new URL(c.req.url).search);
      if (target !== undefined) {
        const answer = await answerRead(target, headerReader(c.req.raw, incomingOf(c)), started);
        const type = answer.contentType === undefined ? JSON_TYPE : answer.contentType;
        c.res = new Response(type === null ? null : answer.text, { status: answer.status, headers: type === null ? {} : { 'content-type': type } });
        if (answer.headers !== undefined) addFields(c, answer.headers);
        return;
      }
    }
    let route = `${c.req.method} ${isStream ? '/v1/streams/{invalid}' : c.req.routePath}`;
    let errorCode: ErrorCode | undefined;
    // A preflight a hook answers (cors.ts) is answered for every path, before authentication, the
    // Durable Streams routes' included (their CORS family is one of the hook's).
    const preflight = c.req.method === 'OPTIONS' ? hooks.preflight?.(headerReader(c.req.raw, incomingOf(c)), rawPath) : undefined;
    try {
      if (preflight !== undefined) {
        route = PREFLIGHT_ROUTE;
        if ('refused' in preflight) throw preflight.refused;
        c.res = new Response(null, { status: 204, headers: preflight.headers as [string, string][] });
      } else if (rawPath.startsWith(DS_PREFIX)) {
        // The Durable Streams protocol answers in its own terms (docs/durable-streams.md).
        route = `${c.req.method} ${DS_PREFIX}{name}`;
        c.res = await answerDurableStreams(c.req.raw, headerReader(c.req.raw, incomingOf(c)), rawPath);
      } else if (isStream) {
        const address = parseStreamAddress(rawPath);
        route = routeTemplate(c.req.method, address, methods);
        const headers = headerReader(c.req.raw, incomingOf(c));
        const principal = authenticate(headers, options.tokens);
        c.res = await handleStreamRequest(c.req.raw, headers, address, principal, {
          service: options.service,
          maxBodyBytes,
          methods,
          sse: { onOpen: () => metrics.sseReaders.inc(), onClose: () => metrics.sseReaders.dec(), stopping: options.stopping },
        });
      } else {
        await next();
        route = `${c.req.method} ${c.req.routePath}`;
        errorCode = codeOf(c.error);
      }
    } catch (error) {
      const answer = errorAnswer(error, logger, route);
      errorCode = answer.code;
      c.res = answerResponse(answer);
    }
    const answered: AnsweredRequest = {
      method: c.req.method,
      route,
      status: c.res.status,
      durationMs: performance.now() - started,
      errorCode,
    };
    if (hooks.answerHeaders !== undefined) {
      const fields = hooks.answerHeaders(answered, headerReader(c.req.raw, incomingOf(c)));
      if (fields !== undefined) addFields(c, fields);
    }
    hooks.onAnswered(answered);
  });

  app.get('/healthz', (c) => {
    // Thrown, so that Hono's onError answers it and the hooks learn its code (c.error).
    if (options.ready && !options.ready()) throw new RivuletError('UNAVAILABLE', 'starting or shutting down');
    return c.json({ ok: true });
  });

  // Liveness: the process answers (protocol §15.1), also while it starts or drains.
  app.get('/livez', (c) => c.json({ ok: true }));

  // Readiness: the host can take writes now (protocol §15.1); 503 names the failed check.
  app.get('/readyz', (c) => {
    const readiness = options.readiness?.() ?? (options.ready && !options.ready() ? { ready: false as const, reason: 'starting or shutting down' } : { ready: true as const });
    if (!readiness.ready) throw new RivuletError('UNAVAILABLE', `not ready: ${readiness.reason}`);
    return c.json({ ok: true });
  });

  app.get('/v1/openapi.json', (c) => c.json(openapi));

  // The RPC session is a WebSocket upgrade, which the host answers before this app (protocol §18.1).
  app.all('/v1/rpc', () => {
    throw new RivuletError(
      'INVALID_INPUT',
      '/v1/rpc is a Cap\'n Web session over WebSocket: connect with a WebSocket upgrade (the SDK\'s connect(url) does)',
    );
  });

  app.get('/metrics', async (c) => {
    // The text names every project's streams and subscription keys (the lag gauge): admin only.
    if (!authenticate(c.req.raw.headers, options.tokens).admin) {
      throw new RivuletError('FORBIDDEN', '/metrics describes every project on this server: it needs an admin token (project "*")');
    }
    return c.body(await metrics.registry.scrape(), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
  });

  // Online backup (protocol §15.5): every project's data, so admin only, as /metrics.
  app.post('/v1/admin/backup', async (c) => {
    if (!authenticate(c.req.raw.headers, options.tokens).admin) {
      throw new RivuletError('FORBIDDEN', '/v1/admin/backup copies every project on this server: it needs an admin token (project "*")');
    }
    if (!options.backup) {
      throw new RivuletError('NOT_FOUND', 'this host takes no backups through the API (on Cloudflare, use point-in-time recovery of the Durable Objects)');
    }
    const snapshot = await options.backup();
    return new Response(snapshot.body, {
      status: 200,
      headers: {
        'content-type': 'application/vnd.sqlite3',
        'content-length': String(snapshot.bytes),
        'content-disposition': 'attachment; filename="rivulet.db"',
        'x-rivulet-storage-format': String(snapshot.format),
      },
    });
  });

  app.get(STREAMS_PREFIX, (c) =>
    handleListRequest(c.req.raw, authenticate(c.req.raw.headers, options.tokens), options.service),
  );

  app.get('/v1/subscriptions', (c) => handleSubscriptionList(c.req.raw, authenticate(c.req.raw.headers, options.tokens), options.service));

  if (options.assets) {
    const assets = options.assets;
    app.get('*', async (c, next) => {
      const found = await assets(new URL(c.req.url).pathname);
      if (found) return found;
      return next();
    });
  }

  app.notFound((c) => {
    const error = new RivuletError('NOT_FOUND', `no route ${c.req.method} ${new URL(c.req.url).pathname}`);
    // Told to the hooks like a thrown error's code (the middleware reads c.error).
    c.error = error;
    return rivuletErrorResponse(error);
  });

  return app;
}
