/**
 * The Durable Streams protocol under /v1/stream/ (docs/durable-streams.md): the name after the
 * prefix is the Rivulet stream path of the caller's project, so tokens and projects apply as they
 * do under /v1/streams/. Every answer carries the security fields of cors.ts; CORS is the
 * server-wide hook's (http/cors.ts), with this protocol's family.
 */
import { RivuletError, canonicalizePath } from '@rivulet/contract';
import type { StreamService } from '../../engine/service.js';
import { authenticate, type TokenTable } from '../auth.js';
import { checkDeclaredLength, readBodyBytes } from '../body.js';
import { toRivuletError, type ErrorLogger } from '../errors.js';
import type { HeaderReader } from '../request-headers.js';
import { empty, gone, notFound, refuse } from './answer.js';
import { handleAppend } from './append.js';
import { DS_METHODS, addSecurityHeaders } from './cors.js';
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
}

export type DurableStreamsHandler = (request: Request, headers: HeaderReader, rawPath: string) => Promise<Response>;

const ALLOW = [...DS_METHODS, 'OPTIONS'].join(', ');

/** The default of `--long-poll-timeout-ms`. */
export const DEFAULT_LONG_POLL_TIMEOUT_MS = 30_000;

export function durableStreamsHandler(options: DurableStreamsOptions): DurableStreamsHandler {
  const now = options.now ?? Date.now;
  const streams = new DsStreams(options.service, now);
  return async (request, headers, rawPath) => {
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

  async function route(request: Request, headers: HeaderReader, rawPath: string): Promise<Response> {
    const method = request.method;
    // Not a preflight the CORS hook answered (none configured, or no Origin): the methods only.
    if (method === 'OPTIONS') return empty(204, { allow: ALLOW });
    const principal = authenticate(headers, options.tokens);
    const path = canonicalizePath(rawPath.slice(DS_PREFIX.length - 1), { decode: true });
    if (path === '/') throw new RivuletError('INVALID_INPUT', 'a Durable Streams stream needs a name after /v1/stream/');
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
        return handleAppend(streams, { projectId, path, headers, body });
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
}
