/**
 * Cross-origin requests (protocol §1.4), opt-in: a request hook (request-hooks.ts) that every
 * entrance of both hosts passes, so the answers of the connection front and the native append path
 * carry the same fields as the app's. Without configured origins there is no hook at all.
 *
 * - An allowed `Origin` gets `Access-Control-Allow-Origin` (that origin, or `*`) and the exposed
 *   header fields on every answer; with a list of origins every answer carries `Vary: Origin`,
 *   so a cache never gives one origin's answer to another.
 * - A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is answered `204`
 *   before routing and authentication, for every path; one from an origin, method or request
 *   header that is not allowed is refused `FORBIDDEN` and carries no CORS field.
 * - `*` is accepted with tokens configured only when asked for explicitly
 *   (`allowAnyOriginWithTokens`): any web page could then drive the API with a token it holds.
 *
 * Route families that need other methods or header fields have their own `CorsFamily`. A family
 * with a `pathPrefix` governs the paths under it (the Durable Streams routes,
 * durable-streams/cors.ts); the families without one govern every other path, as their union.
 * `corsHook` serves them all by default, so the one configuration governs every route.
 */
import { RivuletError } from '@rivulet/contract';
import type { HeaderReader } from './request-headers.js';
import type { AnswerHeaders, Preflight, RequestHook } from './request-hooks.js';
import { DURABLE_STREAMS_CORS } from './durable-streams/cors.js';

export interface CorsConfig {
  /** Allowed origins, each `scheme://host[:port]` as `parseCorsOrigins` normalised it, or `["*"]`. */
  readonly origins: readonly string[];
  /** Allow `*` although tokens are configured (`--cors-allow-any-origin-with-tokens`). */
  readonly allowAnyOriginWithTokens?: boolean;
}

/** What one family of routes lets a cross-origin caller do (lower-case header names). */
export interface CorsFamily {
  /**
   * The paths this family alone governs (those starting with it, as sent), e.g. `/v1/stream/`.
   * Without it, the family governs every path no family with a prefix claims.
   */
  readonly pathPrefix?: string;
  readonly methods: readonly string[];
  /** Request header fields beyond the CORS-safelisted ones. */
  readonly requestHeaders: readonly string[];
  /** Answer header fields a page may read beyond the CORS-safelisted ones. */
  readonly exposedHeaders: readonly string[];
}

/** The /v1 API: every method its routes answer and every header field they read or set. */
export const API_CORS: CorsFamily = {
  methods: ['GET', 'HEAD', 'POST', 'DELETE'],
  requestHeaders: ['authorization', 'content-type', 'x-project-id', 'last-event-id', 'if-none-match', 'idempotency-key'],
  exposedHeaders: ['etag'],
};

/** How long a browser may keep a preflight's answer (seconds; Chromium caps it at 7200). */
export const PREFLIGHT_MAX_AGE_SECONDS = 7200;

/** Header fields a browser lets a request carry without asking (the Fetch standard's safelist). */
const SAFELISTED_REQUEST_HEADERS = new Set(['accept', 'accept-language', 'content-language']);

/**
 * `--cors-origin` / `RIVULET_CORS_ORIGIN`: comma-separated origins, or `*`. Each origin is
 * `http://` or `https://`, a host and an optional port, nothing else; answered normalised
 * (lower-case host, default port dropped), as browsers send `Origin`.
 */
export function parseCorsOrigins(text: string): string[] {
  const entries = text.split(',').map((entry) => entry.trim());
  if (entries.some((entry) => entry === '')) {
    throw new RivuletError('INVALID_INPUT', `--cors-origin has an empty entry in "${text}": give origins separated by commas, or *`);
  }
  if (entries.includes('*')) {
    if (entries.length > 1) throw new RivuletError('INVALID_INPUT', '--cors-origin * allows every origin: give it alone, not with other origins');
    return ['*'];
  }
  return [...new Set(entries.map(normalisedOrigin))];
}

function normalisedOrigin(entry: string): string {
  let url: URL | undefined;
  try {
    url = new URL(entry);
  } catch {
    url = undefined;
  }
  const plain = url !== undefined && (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === '';
  // Nothing after the authority: "https://a.example" or "https://a.example/", not "https://a.example/x".
  if (!plain || !/^https?:\/\/[^/?#]+\/?$/i.test(entry)) {
    throw new RivuletError('INVALID_INPUT', `--cors-origin "${entry}" is not an origin: write scheme://host[:port], e.g. https://app.example`);
  }
  return url!.origin;
}

/** Refuses `*` with tokens unless allowed explicitly. The message names both ways out. */
export function checkCorsConfig(config: CorsConfig, tokensConfigured: boolean): void {
  if (config.origins.includes('*') && tokensConfigured && config.allowAnyOriginWithTokens !== true) {
    throw new RivuletError(
      'INVALID_INPUT',
      '--cors-origin * with tokens would let any web page call this server with a token it holds: ' +
        'list the origins that may (--cors-origin https://app.example,…), or pass --cors-allow-any-origin-with-tokens',
    );
  }
}

function union(families: readonly CorsFamily[], pick: (family: CorsFamily) => readonly string[]): string[] {
  return [...new Set(families.flatMap(pick))];
}

/** Every family of this server's routes: what the hosts give `corsHook`. */
export const SERVER_CORS_FAMILIES: readonly CorsFamily[] = [API_CORS, DURABLE_STREAMS_CORS];

/** One governed set of paths: what a preflight may ask there and what its answers expose. */
interface Scope {
  readonly methods: readonly string[];
  readonly requestHeaders: readonly string[];
  readonly allowedRequestHeaders: ReadonlySet<string>;
  readonly preflightFields: AnswerHeaders;
  /** The fields of an answer to an allowed origin, by origin; `*` under `any`. */
  readonly byOrigin: ReadonlyMap<string, AnswerHeaders>;
}

/** The hook answering CORS for `config` (checked with `checkCorsConfig` first). */
export function corsHook(config: CorsConfig, families: readonly CorsFamily[] = SERVER_CORS_FAMILIES): RequestHook {
  const any = config.origins.includes('*');
  const allowed = new Set(config.origins);
  const scopeOf = (members: readonly CorsFamily[]): Scope => {
    const methods = union(members, (f) => f.methods);
    const requestHeaders = union(members, (f) => f.requestHeaders);
    const exposed = union(members, (f) => f.exposedHeaders).join(', ');
    const fieldsFor = (origin: string): AnswerHeaders => [
      ['access-control-allow-origin', origin],
      ...(any ? [] : [['vary', 'origin'] as const]),
      ...(exposed === '' ? [] : [['access-control-expose-headers', exposed] as const]),
    ];
    return {
      methods,
      requestHeaders,
      allowedRequestHeaders: new Set([...requestHeaders, ...SAFELISTED_REQUEST_HEADERS]),
      preflightFields: [
        ['access-control-allow-methods', methods.join(', ')],
        ['access-control-allow-headers', requestHeaders.join(', ')],
        ['access-control-max-age', String(PREFLIGHT_MAX_AGE_SECONDS)],
      ],
      // Constant arrays per origin: answerHeaders runs on every request (request-hooks.ts).
      byOrigin: new Map(any ? [['*', fieldsFor('*')]] : config.origins.map((origin) => [origin, fieldsFor(origin)])),
    };
  };
  const rest = scopeOf(families.filter((f) => f.pathPrefix === undefined));
  const prefixed = families.flatMap((f) => (f.pathPrefix === undefined ? [] : [{ prefix: f.pathPrefix, scope: scopeOf([f]) }]));
  const scopeAt = (path: string | undefined): Scope => {
    if (path !== undefined) for (const p of prefixed) if (path.startsWith(p.prefix)) return p.scope;
    return rest;
  };
  /** A route label is `METHOD TEMPLATE` (request-hooks.ts); the template starts with the path's fixed part. */
  const scopeOfRoute = (answered: { method: string; route: string }): Scope => {
    if (prefixed.length === 0) return rest;
    const { method, route } = answered;
    return scopeAt(route.startsWith(method) && route.charCodeAt(method.length) === 32 ? route.slice(method.length + 1) : route);
  };
  const varyOnly: AnswerHeaders = [['vary', 'origin']];
  const isAllowed = (origin: string): boolean => any || allowed.has(origin);

  return {
    answerHeaders(answered, request: HeaderReader) {
      const origin = request.get('origin');
      if (any) return origin === null ? undefined : scopeOfRoute(answered).byOrigin.get('*');
      return (origin === null ? undefined : scopeOfRoute(answered).byOrigin.get(origin)) ?? varyOnly;
    },
    preflight(request: HeaderReader, path?: string): Preflight | undefined {
      const origin = request.get('origin');
      const method = request.get('access-control-request-method');
      if (origin === null || method === null) return undefined;
      if (!isAllowed(origin)) {
        return { refused: new RivuletError('FORBIDDEN', `cross-origin requests from ${JSON.stringify(origin)} are not allowed on this server`) };
      }
      const { methods, requestHeaders, allowedRequestHeaders, preflightFields } = scopeAt(path);
      if (!methods.includes(method)) {
        return { refused: new RivuletError('FORBIDDEN', `method ${JSON.stringify(method)} is not allowed cross-origin (allowed: ${methods.join(', ')})`) };
      }
      const asked = (request.get('access-control-request-headers') ?? '')
        .split(',')
        .map((name) => name.trim().toLowerCase())
        .filter((name) => name !== '');
      const refusedHeader = asked.find((name) => !allowedRequestHeaders.has(name));
      if (refusedHeader !== undefined) {
        return {
          refused: new RivuletError(
            'FORBIDDEN',
            `request header ${JSON.stringify(refusedHeader)} is not allowed cross-origin (allowed: ${requestHeaders.join(', ')})`,
          ),
        };
      }
      return { headers: preflightFields };
    },
  };
}
