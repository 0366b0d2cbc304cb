/**
 * The append route, `POST /v1/streams/{path}` (protocol §4), decided in one place for every
 * entrance: the Hono app (both hosts), and on Node the connection front and the native node:http
 * path (hosts/node/front.ts, hosts/node/append.ts), which only read the request's bytes and write
 * the answer this returns. So every entrance checks in the same order and answers the same bytes:
 * the address (stream-url.ts), the caller (auth.ts, protocol §8), the content type and declared
 * length, then the body (read only once the head passed), its UTF-8 and JSON (body.ts), its events
 * (append-body.ts), the append, and the answer or the error's (protocol §7).
 */
import { RivuletError, type ErrorCode } from '@rivulet/contract';
import type { StreamService } from '../engine/service.js';
import type { ServerMetrics } from '../engine/metrics.js';
import { appendAnswer, parseAppendBody } from './append-body.js';
import { authenticate, type TokenTable } from './auth.js';
import { checkDeclaredLength, decodeBody, parseJsonText, requireJsonContentType, tooLarge } from './body.js';
import { errorAnswer, type ErrorLogger } from './errors.js';
import type { HeaderReader } from './request-headers.js';
import { composeRequestHooks, metricsHook, reportAnswer, type AnswerHeaders, type AnswerInPlace, type AnsweredRequest, type RequestHooks } from './request-hooks.js';
import { parseStreamAddress } from './stream-url.js';

export const JSON_TYPE = 'application/json; charset=utf-8';
export const APPEND_ROUTE = 'POST /v1/streams/{path}';
const INVALID_ROUTE = 'POST /v1/streams/{invalid}';

export interface AppendRouteOptions {
  service: StreamService;
  tokens: TokenTable | null;
  maxBodyBytes: number;
  logger: ErrorLogger;
  /** What each answered append is reported to; the host composes it once for all its entrances. */
  hooks?: RequestHooks;
  /** Without `hooks`: the request-duration metric is recorded here, and nothing else is called. */
  metrics?: ServerMetrics;
}

/** What an entrance writes: the status, the text, and the hooks' fields. */
export interface AppendReply {
  readonly status: number;
  readonly text: string;
  readonly headers?: AnswerHeaders | undefined;
  /**
   * The text's content type: `JSON_TYPE` when absent; null for an answer without a body (a Durable
   * Streams append, durable-streams/routes.ts). A `204` never carries a body or its length.
   */
  readonly contentType?: string | null | undefined;
  /** The UTF-8 length of `text` when the route knows it without counting (a page from the read cache). */
  readonly bytes?: number | undefined;
}

/** The answer, which is also what the hooks were told (one object per request, nothing more). */
export interface AppendAnswer extends AppendReply, AnsweredRequest {}

/**
 * Answers one append. `url` is the request target as sent (percent-encoded; a query is refused); `body`
 * reads the body and is called only once the head was judged; `started` is `performance.now()`
 * when the entrance began the request. Errors become their answers; never rejects.
 */
export type AppendAnswerer = (
  url: string,
  headers: HeaderReader,
  body: () => Promise<Uint8Array> | Uint8Array,
  started: number,
) => Promise<AppendAnswer>;

/** The hooks an entrance calls: the host's, or the request-duration metric alone. */
export function hooksOf(options: { hooks?: RequestHooks | undefined; metrics?: ServerMetrics | undefined; logger: ErrorLogger }): RequestHooks {
  if (options.hooks) return options.hooks;
  return composeRequestHooks(options.metrics ? [metricsHook(options.metrics)] : [], options.logger);
}

interface MutableAnswer extends AnswerInPlace {
  text: string;
  headers: AnswerHeaders | undefined;
}

export function appendAnswerer(options: AppendRouteOptions): AppendAnswerer {
  const { service, tokens, maxBodyBytes, logger } = options;
  const hooks = hooksOf(options);
  return async (url, headers, body, started) => {
    let route = INVALID_ROUTE;
    let status: number;
    let text: string;
    let errorCode: ErrorCode | undefined;
    try {
      const query = url.indexOf('?');
      const address = parseStreamAddress(query === -1 ? url : url.slice(0, query));
      route = APPEND_ROUTE;
      const principal = authenticate(headers, tokens);
      if (query !== -1 && query < url.length - 1) throw new RivuletError('INVALID_INPUT', 'POST /v1/streams/{path} takes no query parameters');
      requireJsonContentType(headers.get('content-type'));
      checkDeclaredLength(headers, maxBodyBytes);
      // The front's body is already read: no turn of the microtask queue for it.
      const read = body();
      const bytes = read instanceof Uint8Array ? read : await read;
      if (bytes.byteLength > maxBodyBytes) throw tooLarge(maxBodyBytes);
      const inputs = parseAppendBody(parseJsonText(decodeBody(bytes)));
      text = appendAnswer(await service.append(principal.projectId, address.path, inputs));
      status = 200;
    } catch (error) {
      ({ status, text, code: errorCode } = errorAnswer(error, logger, route));
    }
    const answer: MutableAnswer = {
      method: 'POST',
      route,
      status,
      durationMs: performance.now() - started,
      errorCode,
      text,
      headers: undefined,
    };
    reportAnswer(hooks, answer, headers);
    return answer;
  };
}
