/**
 * The Durable Streams protocol under /v1/stream/ (docs/durable-streams.md): the name after the
 * prefix is the Rivulet stream path of the caller's project, so tokens and projects apply as they
 * do under /v1/streams/. Every answer carries the security fields of cors.ts; CORS is the
 * server-wide hook's (http/cors.ts), with this protocol's family.
 *
 * One `DurableStreams` per server serves two ways in: `handle`, the Hono app's handler for every
 * request under the prefix (both hosts), and `answerAppend`, appends read by the Node host's fast
 * entrances (the connection front and the native node:http path, which write its reply as it is).
 * Both share one folded-state cache and one write queue per stream (store.ts), and decide an
 * append with the same function (append.ts).
 */
import { RivuletError, canonicalizePath } from '@rivulet/contract';
import type { StreamService } from '../../engine/service.js';
import { hooksOf, type AppendAnswer, type AppendAnswerer } from '../append-route.js';
import { authenticate, type TokenTable } from '../auth.js';
import { checkDeclaredLength, readBodyBytes, tooLarge } from '../body.js';
import { toRivuletError, type ErrorLogger } from '../errors.js';
import type { HeaderReader } from '../request-headers.js';
import type { AnswerHeaders, AnswerInPlace, RequestHooks } from '../request-hooks.js';
import { empty, gone, notFound, refusal, refuse, toResponse, type DsAnswer } from './answer.js';
import { handleAppend } from './append.js';
import { DS_METHODS, SECURITY_FIELDS, addSecurityHeaders } from './cors.js';
import { handleCreate } from './create.js';
import { handleHead, handleRead } from './read.js';
import { handleSse } from './sse.js';
import { DsStreams } from './store.js';
import { DS_PREFIX } from './wire.js';

export { DS_PREFIX } from './wire.js';

export interface DurableStreamsOptions {
  service: StreamService;
  tokens: TokenTable | null;
  maxBodyBytes: number;
  /** How long a long-poll (and an idle SSE answer between control frames) waits (`--long-poll-timeout-ms`). */
  longPollTimeoutMs: number;
  logger: ErrorLogger;
  stopping?: AbortSignal | undefined;
  now?: () => number;
  /** What `answerAppend` reports each answered append to (the host's hooks, as the app's). */
  hooks?: RequestHooks | undefined;
  /**
   * Queued writes to one stream commit together (store.ts). Off by default: on the Worker host a
   * request must not wait on another request's work (workerd cancels it as hung).
   */
  batchWrites?: boolean | undefined;
}

/** What `answerAppend` answers, filled in once (routes.ts `reply`). */
interface MutableAnswer extends AnswerInPlace {
  text: string;
  contentType: string | null;
  headers: Array<readonly [string, string]>;
}

export type DurableStreamsHandler = (request: Request, headers: HeaderReader, rawPath: string) => Promise<Response>;

export interface DurableStreams {
  /** Every request under /v1/stream/, as the Hono app hands it over (the app tells the hooks). */
  readonly handle: DurableStreamsHandler;
  /**
   * `POST /v1/stream/{name}` for an entrance that read the request itself: `url` is the target as
   * sent, `body` its bytes. Answers what to write, after telling the hooks; never rejects.
   */
  readonly answerAppend: AppendAnswerer;
}

/** The route label of every Durable Streams request (request-hooks.ts). */
export const dsRoute = (method: string): string => `${method} ${DS_PREFIX}{name}`;

/**
 * Whether an entrance that reads appends itself may hand this target to `answerAppend`: plain
 * characters only, no query (the adapter judges the rest, as for hosts/node/append.ts).
 */
const PLAIN_DS_TARGET = /^\/v1\/stream\/[A-Za-z0-9\-._~%!$&'()*+,;=@/]*$/;
export function isDsAppendTarget(target: string): boolean {
  return PLAIN_DS_TARGET.test(target);
}

const ALLOW = [...DS_METHODS, 'OPTIONS'].join(', ');

/** Targets whose stream path is kept (see `pathOf`). */
const RECENT_PATHS = 1024;

/** The default of `--long-poll-timeout-ms`. */
export const DEFAULT_LONG_POLL_TIMEOUT_MS = 30_000;

export function durableStreamsHandler(options: DurableStreamsOptions): DurableStreamsHandler {
  return durableStreams(options).handle;
}

export function durableStreams(options: DurableStreamsOptions): DurableStreams {
  const now = options.now ?? Date.now;
  const streams = new DsStreams(options.service, now, options.batchWrites === true);
  const hooks = hooksOf(options);

  /**
   * The stream path of a target (its query left out), or a refusal. A writer appends to the same
   * streams again and again, so recent answers are kept (bounded; a refused target is never kept,
   * it throws every time), as for /v1/streams/ (stream-url.ts).
   */
  const recentPaths = new Map<string, string>();
  function pathOf(rawPath: string): string {
    const known = recentPaths.get(rawPath);
    if (known !== undefined) return known;
    const path = canonicalizePath(rawPath.slice(DS_PREFIX.length - 1), { decode: true });
    if (path === '/') throw new RivuletError('INVALID_INPUT', 'a Durable Streams stream needs a name after /v1/stream/');
    if (recentPaths.size >= RECENT_PATHS) recentPaths.clear();
    recentPaths.set(rawPath, path);
    return path;
  }

  async function route(request: Request, headers: HeaderReader, rawPath: string): Promise<Response> {
    const method = request.method;
    // Not a preflight the CORS hook answered (none configured, or no Origin): the methods only.
    if (method === 'OPTIONS') return empty(204, { allow: ALLOW });
    const principal = authenticate(headers, options.tokens);
    const path = pathOf(rawPath);
    const projectId = principal.projectId;
    const body = async () => {
      checkDeclaredLength(headers, options.maxBodyBytes);
      return readBodyBytes(request, headers, options.maxBodyBytes);
    };
    const url = new URL(request.url);
    switch (method) {
      case 'PUT':
        return handleCreate(streams, { projectId, path, headers, body, url: url.origin + rawPath });
      case 'POST':
        return toResponse(await handleAppend(streams, { projectId, path, headers, body }));
      case 'GET':
        if (url.searchParams.get('live') === 'sse') {
          return handleSse(streams, { projectId, path, query: url.searchParams, longPollTimeoutMs: options.longPollTimeoutMs, now, stopping: options.stopping });
        }
        return handleRead(streams, {
          projectId,
          path,
          query: url.searchParams,
          ifNoneMatch: headers.get('if-none-match'),
          longPollTimeoutMs: options.longPollTimeoutMs,
          now: now(),
          signal: options.stopping,
        });
      case 'HEAD':
        return handleHead(streams, projectId, path);
      case 'DELETE': {
        const state = await streams.load(projectId, path);
        if (state === null) return notFound();
        if (state.softDeleted) return gone();
        await streams.exclusive(projectId, path, () => streams.remove(projectId, path, state));
        return empty(204, {});
      }
      default:
        return refuse(405, `${method} is not a Durable Streams method`, { allow: ALLOW });
    }
  }

  const handle: DurableStreamsHandler = async (request, headers, rawPath) => {
    let response: Response;
    try {
      response = await route(request, headers, rawPath);
    } catch (error) {
      const e = toRivuletError(error, options.logger);
      response = refuse(e.status, e.message);
    }
    addSecurityHeaders(response.headers);
    return response;
  };

  const POST_ROUTE = dsRoute('POST');
  const answerAppend: AppendAnswerer = async (url, headers, body, started) => {
    let answer: DsAnswer;
    try {
      const query = url.indexOf('?');
      const path = pathOf(query === -1 ? url : url.slice(0, query));
      const principal = authenticate(headers, options.tokens);
      // Not async: the front holds the bytes already, and they are judged without a promise.
      const bytes = (): Promise<Uint8Array> | Uint8Array => {
        checkDeclaredLength(headers, options.maxBodyBytes);
        const read = body();
        return read instanceof Uint8Array ? withinLimit(read, options.maxBodyBytes) : read.then((got) => withinLimit(got, options.maxBodyBytes));
      };
      answer = await handleAppend(streams, { projectId: principal.projectId, path, headers, body: bytes });
    } catch (error) {
      const e = toRivuletError(error, options.logger);
      answer = refusal(e.status, e.message);
    }
    return reply(answer, headers, started);
  };

  /**
   * The answer as an entrance writes it, the security and the hooks' fields added (as the app adds
   * them): one object, which is also what the hooks are told, built without spreads (an object
   * spread costs more than the rest of this function; docs/durable-streams.md "Speed").
   */
  function reply(answer: DsAnswer, request: HeaderReader, started: number): AppendAnswer {
    let contentType: string | null = null;
    const headers: Array<readonly [string, string]> = [];
    const fields = answer.fields;
    for (const name in fields) {
      if (name === 'content-type') contentType = fields[name]!;
      else headers.push([name, fields[name]!]);
    }
    for (let i = 0; i < SECURITY_FIELDS.length; i++) headers.push(SECURITY_FIELDS[i]!);
    const answered: MutableAnswer = {
      method: 'POST',
      route: POST_ROUTE,
      status: answer.status,
      durationMs: performance.now() - started,
      errorCode: undefined,
      text: answer.text ?? '',
      contentType,
      headers,
    };
    const extra: AnswerHeaders | undefined = hooks.answerHeaders?.(answered, request);
    if (extra !== undefined) for (let i = 0; i < extra.length; i++) headers.push(extra[i]!);
    hooks.onAnswered(answered);
    return answered;
  }

  return { handle, answerAppend };
}

function withinLimit(bytes: Uint8Array, maxBodyBytes: number): Uint8Array {
  if (bytes.byteLength > maxBodyBytes) throw tooLarge(maxBodyBytes);
  return bytes;
}
