/**
 * The plain page read, `GET /v1/streams/{path}` with at most `afterOffset`, `beforeOffset` and
 * `limit` (protocol §5.1, §5.3), decided in one place for both entrances that take it: the Hono app
 * (both hosts) and, on Node, node:http directly (hosts/node/append.ts `nativeRead`), which only
 * reads the request's head and writes the answer this returns. Both therefore check in the same
 * order and answer the same bytes, as the append route does (append-route.ts): the address, the
 * caller (protocol §8), the query, the read, and the page, its tag or `304`, or the error's answer.
 * Every other read (a filter, ephemeral events, a live tail, a method suffix, HEAD) stays with
 * stream-routes.ts.
 *
 * Why a path of its own: a catch-up reader pays the fixed costs of a request once per page, and
 * the web Request/Response objects and the adapter were a large share of a page read from memory
 * (docs/performance.md "Plain page reads without the adapter").
 */
import type { ErrorCode } from '@rivulet/contract';
import type { StreamService } from '../engine/service.js';
import { JSON_TYPE, hooksOf, type AppendAnswer } from './append-route.js';
import { authenticate, type TokenTable } from './auth.js';
import { errorAnswer, type ErrorLogger } from './errors.js';
import type { HeaderReader } from './request-headers.js';
import { reportAnswer, type AnswerHeaders, type AnswerInPlace, type RequestHooks } from './request-hooks.js';
import { pageAnswer, pageRead, plainReadQuery } from './stream-routes.js';
import { parseStreamAddress } from './stream-url.js';

export const READ_ROUTE = 'GET /v1/streams/{path}';
const INVALID_ROUTE = 'GET /v1/streams/{invalid}';

/**
 * A target this route takes: a path of plain characters (no method suffix, nothing the adapter
 * would judge first) and a query of only `afterOffset`, `beforeOffset` and `limit`, each once, as
 * digits in range (plainReadQuery's rules: anything else is the schema's to judge and refuse).
 */
const PLAIN_READ_URL = /^(\/v1\/streams\/[A-Za-z0-9\-._~%!$&'()*+,;=@/]*)(?:\?([A-Za-z0-9=&]*))?$/;

/** A plain read target: its path as sent and its query as ReadQuerySchema would answer it. */
export interface PlainReadTarget {
  path: string;
  query: NonNullable<ReturnType<typeof plainReadQuery>>;
}

/** The path and the query of a plain read target, or undefined when the target is not one. */
export function plainReadTarget(url: string): PlainReadTarget | undefined {
  const m = PLAIN_READ_URL.exec(url);
  if (m === null) return undefined;
  const fields: Record<string, string> = {};
  if (m[2] !== undefined && m[2] !== '') {
    for (const pair of m[2].split('&')) {
      const eq = pair.indexOf('=');
      if (eq <= 0) return undefined;
      const key = pair.slice(0, eq);
      if (Object.hasOwn(fields, key)) return undefined;
      fields[key] = pair.slice(eq + 1);
    }
  }
  const query = plainReadQuery(fields);
  return query === undefined ? undefined : { path: m[1]!, query };
}

export interface ReadRouteOptions {
  service: StreamService;
  tokens: TokenTable | null;
  logger: ErrorLogger;
  /** What each answered read is reported to; the host composes it once for all its entrances. */
  hooks?: RequestHooks;
}

/**
 * Answers one plain read; `target` is what plainReadTarget answered for the request target,
 * `started` is `performance.now()` when the entrance began the request. The page's tag, when it
 * has one, is the first of `headers`, then the hooks' fields; a `304` has no body and no content
 * type. Errors become their answers; never rejects.
 */
export type ReadAnswerer = (
  target: PlainReadTarget,
  headers: HeaderReader,
  started: number,
) => Promise<AppendAnswer>;

interface MutableAnswer extends AnswerInPlace {
  text: string;
  bytes: number | undefined;
  headers: AnswerHeaders | undefined;
  contentType: string | null;
}

export function readAnswerer(options: ReadRouteOptions): ReadAnswerer {
  const { service, tokens, logger } = options;
  const hooks = hooksOf(options);
  return async (target, headers, started) => {
    let route = INVALID_ROUTE;
    let status: number;
    let text: string;
    let tag: string | undefined;
    let bytes: number | undefined;
    let errorCode: ErrorCode | undefined;
    try {
      const address = parseStreamAddress(target.path);
      route = READ_ROUTE;
      const principal = authenticate(headers, tokens);
      const page = pageRead(target.query, false, undefined);
      ({ status, text, tag, bytes } = pageAnswer(await service.read(principal.projectId, address.path, page), page, headers.get('if-none-match')));
    } catch (error) {
      ({ status, text, code: errorCode } = errorAnswer(error, logger, route));
    }
    const answer: MutableAnswer = {
      method: 'GET',
      route,
      status,
      durationMs: performance.now() - started,
      errorCode,
      text,
      bytes,
      headers: undefined,
      // A 304 and an answer without a body (a client that went away) carry no content type.
      contentType: text === '' ? null : JSON_TYPE,
    };
    reportAnswer(hooks, answer, headers, tag === undefined ? undefined : [['etag', tag]]);
    return answer;
  };
}
