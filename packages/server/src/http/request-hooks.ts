/**
 * The one place where work that concerns every request hooks in (the request-duration metric, and
 * CORS when configured: cors.ts). Every entrance of a host passes through it: the Hono app (both hosts) for what it
 * answers, and the append route (append-route.ts) for plain appends, whichever entrance read them
 * (on Node: the connection front, the native node:http path, or the app).
 *
 * A host composes its hooks once (`composeRequestHooks`) and gives the result to each entrance.
 * Hooks run on the request's path: they must be cheap and synchronous. A hook that throws is
 * logged and skipped; the answer is not changed by it.
 */
import type { ErrorCode, RivuletError } from '@rivulet/contract';
import { labelKey, methodLabel, type ServerMetrics } from '../engine/metrics.js';
import type { ErrorLogger } from './errors.js';
import type { HeaderReader } from './request-headers.js';

/** What the edge knows about a request once its answer is decided (before it is written). */
export interface AnsweredRequest {
  readonly method: string;
  /** The route template, bounded (e.g. `POST /v1/streams/{path}`), never the raw path. */
  readonly route: string;
  readonly status: number;
  /** From the moment the entrance began the request to the moment its answer was decided. */
  readonly durationMs: number;
  /** The error code of an answer that reports an error (protocol §7), when the edge knows it. */
  readonly errorCode?: ErrorCode | undefined;
}

/** An AnsweredRequest an entrance fills in place: one object per answer on the append paths. */
export type AnswerInPlace = { -readonly [K in keyof AnsweredRequest]-?: AnsweredRequest[K] };

/** Header fields an answer carries besides its own, as [name, value] pairs. */
export type AnswerHeaders = ReadonlyArray<readonly [string, string]>;

export interface RequestHook {
  /** Called once for every answered request. */
  onAnswered?(answered: AnsweredRequest): void;
  /**
   * Header fields to add to an answer (a later CORS hook, say), or undefined for none. Called once
   * per answered request, before `onAnswered`; `request` are the request's header fields.
   * Return a constant array when the fields do not depend on the request: this is the hot path.
   */
  answerHeaders?(answered: AnsweredRequest, request: HeaderReader): AnswerHeaders | undefined;
  /**
   * An `OPTIONS` request this hook answers itself (a CORS preflight, cors.ts), or undefined to
   * leave it to the routes. Called before routing and authentication; the answer still passes
   * `answerHeaders` and `onAnswered` like any other. `path` is the request's path as sent.
   */
  preflight?(request: HeaderReader, path?: string): Preflight | undefined;
}

/** A hook's answer to an `OPTIONS` request: `204` with these fields, or the error to answer. */
export type Preflight = { readonly headers: AnswerHeaders } | { readonly refused: RivuletError };

/** A host's hooks, composed: what the entrances call. */
export interface RequestHooks {
  onAnswered(answered: AnsweredRequest): void;
  /** Undefined when no hook adds header fields: entrances then skip the step entirely. */
  readonly answerHeaders: ((answered: AnsweredRequest, request: HeaderReader) => AnswerHeaders | undefined) | undefined;
  /** Undefined when no hook answers `OPTIONS`; else the first hook's answer that is not undefined. */
  readonly preflight: ((request: HeaderReader, path?: string) => Preflight | undefined) | undefined;
}

/**
 * Fields an answer's own framing owns: a hook that names one is refused (each entrance writes these
 * itself, and a second value would contradict them).
 */
const RESERVED = new Set(['content-type', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'date']);
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Whether every field is one the entrances can write alike (node:http and fetch would throw on the rest). */
function writable(fields: AnswerHeaders): boolean {
  for (const [name, value] of fields) {
    if (!TOKEN.test(name) || RESERVED.has(name.toLowerCase()) || !FIELD_VALUE.test(value)) return false;
  }
  return true;
}

export const noRequestHooks: RequestHooks = { onAnswered: () => undefined, answerHeaders: undefined, preflight: undefined };

/**
 * Tells `hooks` of an answer an entrance decided itself (the append and read routes): the hooks'
 * fields go into `answer.headers` after the answer's own (`own`), then `onAnswered` is called.
 */
export function reportAnswer(
  hooks: RequestHooks,
  answer: AnsweredRequest & { headers: AnswerHeaders | undefined },
  request: HeaderReader,
  own?: AnswerHeaders,
): void {
  const added = hooks.answerHeaders === undefined ? undefined : hooks.answerHeaders(answer, request);
  answer.headers = own === undefined ? added : added === undefined ? own : [...own, ...added];
  hooks.onAnswered(answer);
}

export function composeRequestHooks(hooks: readonly RequestHook[], logger: ErrorLogger): RequestHooks {
  const observers = hooks.flatMap((h) => (h.onAnswered ? [h.onAnswered.bind(h)] : []));
  const headerers = hooks.flatMap((h) => (h.answerHeaders ? [h.answerHeaders.bind(h)] : []));
  const preflights = hooks.flatMap((h) => (h.preflight ? [h.preflight.bind(h)] : []));
  const onAnswered = (answered: AnsweredRequest): void => {
    for (let i = 0; i < observers.length; i++) {
      try {
        observers[i]!(answered);
      } catch (error) {
        logger.error('rivulet: a request hook failed', error);
      }
    }
  };
  const fieldsOf = (
    headerer: (answered: AnsweredRequest, request: HeaderReader) => AnswerHeaders | undefined,
    answered: AnsweredRequest,
    request: HeaderReader,
  ): AnswerHeaders | undefined => {
    try {
      const fields = headerer(answered, request);
      if (fields === undefined || fields.length === 0) return undefined;
      if (writable(fields)) return fields;
      logger.error('rivulet: a request hook gave header fields that cannot be written', new Error(JSON.stringify(fields)));
    } catch (error) {
      logger.error('rivulet: a request hook failed', error);
    }
    return undefined;
  };
  const answerHeaders =
    headerers.length === 0
      ? undefined
      : (answered: AnsweredRequest, request: HeaderReader): AnswerHeaders | undefined => {
          let all: AnswerHeaders | undefined;
          for (let i = 0; i < headerers.length; i++) {
            const fields = fieldsOf(headerers[i]!, answered, request);
            if (fields !== undefined) all = all === undefined ? fields : [...all, ...fields];
          }
          return all;
        };
  const preflight =
    preflights.length === 0
      ? undefined
      : (request: HeaderReader, path?: string): Preflight | undefined => {
          for (const answer of preflights) {
            let verdict: Preflight | undefined;
            try {
              verdict = answer(request, path);
            } catch (error) {
              logger.error('rivulet: a request hook failed', error);
              continue;
            }
            if (verdict === undefined) continue;
            if ('refused' in verdict || writable(verdict.headers)) return verdict;
            logger.error('rivulet: a request hook gave header fields that cannot be written', new Error(JSON.stringify(verdict.headers)));
          }
          return undefined;
        };
  return { onAnswered, answerHeaders, preflight };
}

/**
 * `rivulet_http_request_duration_seconds` by method, route template and status (protocol §15.2).
 * `route` of an answered request starts with its method (`POST /v1/streams/{path}`); the label is
 * the template alone, so that method and route can be grouped by separately.
 */
export function metricsHook(metrics: ServerMetrics): RequestHook {
  // The series key of each (route, status) seen, kept: building and hashing it again was most of
  // the hook's cost (docs/performance.md "The metrics hook keeps its series keys"). Routes are
  // templates and statuses few, so this stays small; it is emptied should it ever grow past its
  // bound.
  const keys = new Map<string, Map<number, string>>();
  let size = 0;
  const keyOf = (method: string, route: string, status: number): string => {
    // A route that starts with its method names both; any other is kept under both.
    const named = route.startsWith(method) && route.charCodeAt(method.length) === 32;
    const name = named ? route : `${method} \u0000${route}`;
    let byStatus = keys.get(name);
    const known = byStatus?.get(status);
    if (known !== undefined) return known;
    const template = named ? route.slice(method.length + 1) : route;
    const key = labelKey({ method: methodLabel(method), route: template, status: String(status) });
    if (size >= MAX_SERIES_KEYS) {
      keys.clear();
      size = 0;
      byStatus = undefined;
    }
    if (byStatus === undefined) keys.set(name, (byStatus = new Map()));
    byStatus.set(status, key);
    size++;
    return key;
  };
  return {
    onAnswered: (answered) => {
      metrics.httpDuration.observeAt(keyOf(answered.method, answered.route, answered.status), answered.durationMs / 1000);
    },
  };
}

/** Series keys the metrics hook keeps at most (far more than the routes × statuses there are). */
const MAX_SERIES_KEYS = 4096;
