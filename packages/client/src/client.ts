/**
 * The typed SDK over the HTTP interface (protocol §4–§6, §14): one method per route, plus
 * page-following iterators. Paths are canonicalised client-side (so "a/b" and "/a/b" name the same
 * stream and a bad path fails before any request); every failure is a RivuletError (errors.ts). The
 * client holds no state between calls beyond its options, so one instance may be shared freely.
 */
import {
  Limits,
  RivuletError,
  subscriptionTarget,
  type AppendResponse,
  type CommittedEvent,
  type DeliveryHalted,
  type EffectiveSubscriptionConfiguration,
  type EventInput,
  type ListResponse,
  type ReadResponse,
  type StreamListEntry,
  type StreamStateResponse,
  type SubscribeToEventsFromBody,
  type WaitForEventBody,
  type WaitForEventResponse,
} from '@rivulet/contract';
import { HttpClient, type FetchLike } from './http.js';
import { checkRetryable, withRetry, type RetryOptions } from './retry.js';
import type { TokenSource } from './token.js';
import { subscriptionAdmin, type SubscriptionAdminApi } from './subscription-admin.js';
import { tailEvents, type TailOptions } from './tail.js';
import { apiUrl, streamUrl } from './urls.js';

export interface ClientOptions {
  /** Base URL of the server, e.g. "http://127.0.0.1:7420" (a path prefix is kept). */
  url: string;
  /**
   * Sent as `Authorization: Bearer <token>`. A function is asked for the current token before
   * every request (a refresh); its failure rejects that call unchanged.
   */
  token?: TokenSource | undefined;
  /** Sent as `X-Project-Id` (an admin token acting for one project). */
  projectId?: string | undefined;
  /** Defaults to the global fetch. */
  fetch?: FetchLike | undefined;
}

export interface CallOptions {
  /** Ends the call (and any retry wait); `AbortSignal.timeout(ms)` gives a call a deadline. */
  signal?: AbortSignal | undefined;
}

export interface AppendOptions extends CallOptions {
  /**
   * Send again when the server could not be reached or answered UNAVAILABLE (retry.ts). Only with
   * an idempotencyKey on every event (refused with INVALID_INPUT otherwise).
   */
  retry?: boolean | RetryOptions | undefined;
}

/** An event to append; `source` is platform-authored and refused from public callers. */
export type AppendEvent = Omit<EventInput, 'source'>;

export interface ReadOptions extends CallOptions {
  /** Exclusive lower bound (default 0). */
  afterOffset?: number | undefined;
  /** Exclusive upper bound. */
  beforeOffset?: number | undefined;
  /** Page size, 1–500 (default 500). */
  limit?: number | undefined;
  eventTypes?: readonly string[] | undefined;
  includeEphemeral?: boolean | undefined;
}

export interface LatestOptions extends CallOptions {
  /** Only events before this offset (exclusive); default: up to the head. */
  beforeOffset?: number | undefined;
  eventTypes?: readonly string[] | undefined;
  includeEphemeral?: boolean | undefined;
}

/** The most events `latest` answers at once. */
export const LATEST_MAX = 10_000;

/** One outbound subscription of a stream as `subscriptions()` answers it: its configuration's gist and its progress. */
export interface SubscriptionSummary {
  subscriptionKey: string;
  action: EffectiveSubscriptionConfiguration['receiver']['action'];
  /** Where it delivers: the receiving stream, the webhook URL, the itx expression, or the processor name. */
  target: string;
  /** The durable halt, or null while it delivers (resume it with resumeSubscription). */
  halted: DeliveryHalted | null;
  /** Progress (null before the first send check created it). */
  acknowledgedOffset: number | null;
  lag: number | null;
  attempt: number;
  lastError: string | null;
  nextAttemptAt: number | null;
}

export interface ListOptions extends CallOptions {
  /** Only streams at or below this path. */
  prefix?: string | undefined;
  /** Exclusive start path, from a previous page's `nextAfter`. */
  after?: string | undefined;
  limit?: number | undefined;
}

export interface DestroyResponse {
  destroyed: boolean;
}

export interface SubscribeResponse {
  subscriptionKey: string;
  subscriptionConfiguredEvent: CommittedEvent;
}

export type UnsubscribeResponse =
  | { status: 'removed'; subscriptionRemovedEvent: CommittedEvent }
  | { status: 'already-absent' };

/** An online backup being downloaded (protocol §15.5): read `body` to the end to have all of it. */
export interface BackupDownload {
  /** The size of the snapshot in bytes (the answer's Content-Length), when the server said it. */
  bytes: number | null;
  /** The storage format the snapshot holds, when the server said it. */
  storageFormat: number | null;
  body: ReadableStream<Uint8Array>;
}

export interface RivuletClient extends SubscriptionAdminApi {
  readonly url: string;
  /** Appends one event, or an array atomically; answers the committed events in input order. */
  append(path: string, events: AppendEvent | readonly AppendEvent[], options?: AppendOptions): Promise<CommittedEvent[]>;
  /** One page of committed events. A stream that does not exist reads as empty and is not created. */
  getEvents(path: string, options?: ReadOptions): Promise<ReadResponse>;
  /** Every page from `afterOffset` to the head (or `beforeOffset`); `limit` is the page size. */
  readPages(path: string, options?: ReadOptions): AsyncIterable<ReadResponse>;
  /** Every event from `afterOffset` to the head (or `beforeOffset`), fetched page by page. */
  readAll(path: string, options?: ReadOptions): AsyncIterable<CommittedEvent>;
  /**
   * The last `count` (1–LATEST_MAX) events that match, in offset order, like `tail -n`: read
   * backwards from the head (or `beforeOffset`) in growing windows until enough matched or the
   * start is reached. `streamMaxOffset` is the head when the read began.
   */
  latest(path: string, count: number, options?: LatestOptions): Promise<ReadResponse>;
  /** Durable replay, then live events, over SSE, reconnecting as needed (tail.ts). */
  tail(path: string, options?: TailOptions): AsyncIterable<CommittedEvent>;
  state(path: string, options?: CallOptions): Promise<StreamStateResponse>;
  /**
   * The outbound subscriptions of a stream, from its state: what each delivers to, whether it is
   * halted (and why), and its progress. Empty for a stream without subscriptions or that does not
   * exist. `(await client.subscriptions(path)).filter((s) => s.halted)` lists the halted ones.
   */
  subscriptions(path: string, options?: CallOptions): Promise<SubscriptionSummary[]>;
  list(options?: ListOptions): Promise<ListResponse>;
  /** Every stream below `prefix`, following `nextAfter` page by page. */
  listAll(options?: ListOptions): AsyncIterable<StreamListEntry>;
  destroy(path: string, options?: CallOptions): Promise<DestroyResponse>;
  health(options?: CallOptions): Promise<{ ok: true }>;
  /** The server's OpenAPI 3.1 document. */
  openapi(options?: CallOptions): Promise<Record<string, unknown>>;
  /** The Prometheus text of /metrics. */
  metrics(options?: CallOptions): Promise<string>;
  /** A consistent snapshot of the server's whole database (admin only; Node host), streamed. */
  backup(options?: CallOptions): Promise<BackupDownload>;
  /**
   * Copies matching events of `body.sourceStreamPath` into `receivingPath` (protocol §14.1): appends
   * subscription-configured on the source. Without a subscriptionKey, an idempotencyKey is required.
   */
  subscribeToEventsFrom(receivingPath: string, body: SubscribeToEventsFromBody, options?: CallOptions): Promise<SubscribeResponse>;
  /** Removes a copy subscription of `body.sourceStreamPath` into `receivingPath` (protocol §14.2). */
  unsubscribeFromEvents(
    receivingPath: string,
    body: { sourceStreamPath: string; subscriptionKey: string },
    options?: CallOptions,
  ): Promise<UnsubscribeResponse>;
  /** On the source: redeliver from `afterOffset` (exclusive) in a new run (protocol §14.3). */
  setSubscriptionCursor(
    sourcePath: string,
    body: { subscriptionKey: string; afterOffset: number },
    options?: CallOptions,
  ): Promise<{ event: CommittedEvent }>;
  /** On the source: resume a halted subscription; `event` is null when it was not halted (§14.4). */
  resumeSubscription(sourcePath: string, body: { subscriptionKey: string }, options?: CallOptions): Promise<{ event: CommittedEvent | null }>;
  /** On the source: set the cursor and resume in one atomic append (§14.5). */
  setSubscriptionCursorAndResume(
    sourcePath: string,
    body: { subscriptionKey: string; afterOffset: number },
    options?: CallOptions,
  ): Promise<{ cursorSet: CommittedEvent; resumed: CommittedEvent | null }>;
  /**
   * The first matching event (protocol §19.6): a durable one after `body.afterOffset` when given,
   * else the first appended from now on. Rejects with code TIMEOUT after `body.timeoutMs`.
   */
  waitForEvent(path: string, body: WaitForEventBody, options?: CallOptions): Promise<WaitForEventResponse>;
}

/** A read spanning several requests must stay in one lifetime of the stream. */
function sameLifetime(path: string, streamId: string | null, page: ReadResponse): void {
  if (page.streamId !== streamId) {
    throw new RivuletError('CONFLICT', `stream ${path} was destroyed while it was being read`, { streamId, newStreamId: page.streamId });
  }
}

function checkBaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RivuletError('INVALID_INPUT', `server URL "${url}" is not a valid URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new RivuletError('INVALID_INPUT', `server URL "${url}" must use http: or https:`);
  }
  return url;
}

function readQuery(options: ReadOptions) {
  return {
    afterOffset: options.afterOffset,
    beforeOffset: options.beforeOffset,
    limit: options.limit,
    eventTypes: options.eventTypes,
    includeEphemeral: options.includeEphemeral,
  };
}

export function createClient(options: ClientOptions): RivuletClient {
  const base = checkBaseUrl(options.url);
  const http = new HttpClient(options);
  const signalOf = (o: CallOptions | undefined) => ({ signal: o?.signal });

  const getEvents = (path: string, o: ReadOptions = {}) =>
    http.json<ReadResponse>('GET', streamUrl(base, path, { query: readQuery(o) }), signalOf(o));

  async function* readPages(path: string, o: ReadOptions = {}): AsyncGenerator<ReadResponse> {
    const pageSize = o.limit ?? Limits.readPageMax;
    const end = o.beforeOffset === undefined ? Number.POSITIVE_INFINITY : o.beforeOffset - 1;
    let afterOffset = o.afterOffset ?? 0;
    let streamId: string | null | undefined;
    for (;;) {
      const page = await getEvents(path, { ...o, afterOffset, limit: pageSize });
      if (streamId !== undefined) sameLifetime(path, streamId, page);
      streamId = page.streamId;
      yield page;
      const last = page.events.at(-1);
      if (!last || page.events.length < pageSize) return;
      afterOffset = last.offset;
      if (afterOffset >= Math.min(end, page.streamMaxOffset)) return;
    }
  }

  const state = (path: string, o?: CallOptions) =>
    http.json<StreamStateResponse>('GET', streamUrl(base, path, { method: 'state' }), signalOf(o));

  async function* readAll(path: string, o: ReadOptions = {}): AsyncGenerator<CommittedEvent> {
    for await (const page of readPages(path, o)) yield* page.events;
  }

  async function latest(path: string, count: number, o: LatestOptions = {}): Promise<ReadResponse> {
    if (!Number.isSafeInteger(count) || count < 1 || count > LATEST_MAX) {
      throw new RivuletError('INVALID_INPUT', `the number of latest events must be an integer from 1 to ${LATEST_MAX}, got ${String(count)}`);
    }
    if (o.beforeOffset !== undefined && (!Number.isSafeInteger(o.beforeOffset) || o.beforeOffset < 1)) {
      throw new RivuletError('INVALID_INPUT', `beforeOffset must be a positive integer, got ${String(o.beforeOffset)}`);
    }
    const filters = { eventTypes: o.eventTypes, includeEphemeral: o.includeEphemeral, signal: o.signal };
    const first = await getEvents(path, { ...filters, limit: 1 });
    const { streamId, streamMaxOffset } = first;
    if (streamId === null) return first;
    // Windows (lower, top] from the newest down, each twice as wide as the last: a sparse filter
    // costs a few more reads, never a read of the whole stream at once.
    let top = Math.min(streamMaxOffset, (o.beforeOffset ?? Number.POSITIVE_INFINITY) - 1);
    let span = count;
    let found: CommittedEvent[] = [];
    while (top > 0 && found.length < count) {
      const lower = Math.max(0, top - span);
      const window: CommittedEvent[] = [];
      for await (const page of readPages(path, { ...filters, afterOffset: lower, beforeOffset: top + 1 })) {
        sameLifetime(path, streamId, page);
        window.push(...page.events);
      }
      found = [...window, ...found];
      top = lower;
      span *= 2;
    }
    return { streamId, streamMaxOffset, events: found.slice(-count) };
  }

  const list = (o: ListOptions = {}) =>
    http.json<ListResponse>(
      'GET',
      apiUrl(base, '/v1/streams', { prefix: o.prefix, after: o.after, limit: o.limit }),
      signalOf(o),
    );

  async function* listAll(o: ListOptions = {}): AsyncGenerator<StreamListEntry> {
    let after = o.after;
    for (;;) {
      const page = await list({ ...o, after });
      yield* page.streams;
      if (page.nextAfter === undefined || page.nextAfter === after) return;
      after = page.nextAfter;
    }
  }

  /** A custom method of a stream (protocol §2.4, §14), POSTed with a JSON body. */
  const command = <T>(path: string, method: string, body: unknown, o: CallOptions | undefined) =>
    http.json<T>('POST', streamUrl(base, path, { method }), { body, ...signalOf(o) });

  return {
    url: base,
    ...subscriptionAdmin(http, base),
    async append(path, events, o) {
      const url = streamUrl(base, path);
      const send = () => http.json<AppendResponse>('POST', url, { body: events, ...signalOf(o) });
      const retry = o?.retry ?? false;
      if (retry === false) return (await send()).events;
      checkRetryable(Array.isArray(events) ? events : [events as AppendEvent]);
      return (await withRetry(retry, o?.signal, send)).events;
    },
    getEvents,
    readPages,
    readAll,
    latest,
    async *tail(path, o = {}) {
      const url = streamUrl(base, path, { query: { live: 'sse', afterOffset: o.afterOffset, eventTypes: o.eventTypes } });
      yield* tailEvents(http, url, o);
    },
    state,
    async subscriptions(path, o) {
      const { core, runtime } = await state(path, o);
      if (!core) return [];
      return Object.entries(core.subscriptions.outbound.byKey).map(([key, entry]) => {
        const receiver = entry.configuration.receiver;
        const progress = runtime?.subscriptions[key];
        return {
          subscriptionKey: key,
          action: receiver.action,
          target: subscriptionTarget(receiver),
          halted: entry.deliveryHalted ?? null,
          acknowledgedOffset: progress?.acknowledgedOffset ?? null,
          lag: progress?.lag ?? null,
          attempt: progress?.attempt ?? 0,
          lastError: progress?.lastError ?? null,
          nextAttemptAt: progress?.nextAttemptAt ?? null,
        };
      });
    },
    list,
    listAll,
    destroy: (path, o) => http.json<DestroyResponse>('DELETE', streamUrl(base, path), signalOf(o)),
    health: (o) => http.json<{ ok: true }>('GET', apiUrl(base, '/healthz'), signalOf(o)),
    openapi: (o) => http.json<Record<string, unknown>>('GET', apiUrl(base, '/v1/openapi.json'), signalOf(o)),
    metrics: (o) => http.text('GET', apiUrl(base, '/metrics'), signalOf(o)),
    async backup(o) {
      const url = apiUrl(base, '/v1/admin/backup');
      const response = await http.send('POST', url, signalOf(o));
      if (!response.body) throw new RivuletError('UNAVAILABLE', `the answer from ${url} has no body`);
      const number = (name: string) => {
        const value = response.headers.get(name);
        return value !== null && /^\d+$/.test(value) ? Number(value) : null;
      };
      return { bytes: number('content-length'), storageFormat: number('x-rivulet-storage-format'), body: response.body };
    },
    subscribeToEventsFrom: (path, body, o) => command(path, 'subscribeToEventsFrom', body, o),
    unsubscribeFromEvents: (path, body, o) => command(path, 'unsubscribeFromEvents', body, o),
    setSubscriptionCursor: (path, body, o) => command(path, 'setSubscriptionCursor', body, o),
    resumeSubscription: (path, body, o) => command(path, 'resumeSubscription', body, o),
    setSubscriptionCursorAndResume: (path, body, o) => command(path, 'setSubscriptionCursorAndResume', body, o),
    waitForEvent: (path, body, o) => command(path, 'waitForEvent', body, o),
  };
}
