/**
 * Helpers for the end-to-end subscription suites (test/e2e/subscriptions-*.test.ts): the
 * subscription commands over plain HTTP, raw subscription-configured events, waiting on runtime
 * state with deadlines, reading copies and their hops, Prometheus samples, and a server whose
 * retries are quick enough to watch a halt. Everything goes through the Api of http.ts (real
 * HTTP); nothing here reaches into the server.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import {
  EventType,
  type CommittedEvent,
  type CopyHop,
  type CoreState,
  type InboundRecord,
  type OutboundEntry,
  type SubscriptionRuntimeState,
} from '@rivulet/contract';
import { streamRoute, type Api, type ApiResponse, type EventInput } from './http.js';
import type { TestServer } from './server.js';

export { EventType };

/** The fields protocol §11 allows in runtime.subscriptions[key]; configuration never appears there. */
export const RUNTIME_FIELDS = [
  'acknowledgedOffset',
  'lag',
  'attempt',
  'nextAttemptAt',
  'inFlightDeadlineAt',
  'lastError',
  'bytesSent',
  'completionLatencyMs',
  'deliveryDurationMs',
] as const;

// ---------------------------------------------------------------- a server

/**
 * Delivery settings that halt a failing subscription within a test's patience: it halts at the
 * third failure, with backoffs of 10 ms doubling up to 50 ms between (protocol §12.4–§12.5).
 */
export const QUICK = { retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 3, deliveryTimeoutMs: 5_000 } as const;

export interface QuickServer {
  /** The server, once the suite's beforeAll has started it. */
  readonly server: TestServer;
  /** Its request helper. */
  readonly api: Api;
}

/**
 * Registers a beforeAll that starts one server with QUICK delivery settings and an afterAll that
 * closes it, in the suite (or describe block) it is called in.
 */
export function useQuickServer(): QuickServer {
  let server: TestServer | undefined;
  beforeAll(async () => {
    // Imported here, not at the top: the delivery unit tests import this file for RUNTIME_FIELDS
    // and must not load both hosts (Miniflare included) to get it.
    const { startTestServer } = await import('./server.js');
    server = await startTestServer(QUICK);
  });
  afterAll(async () => {
    await server?.close();
  });
  return {
    get server() {
      return server!;
    },
    get api() {
      return server!.api;
    },
  };
}

// ---------------------------------------------------------------- waiting

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function describeValue(value: unknown): string {
  if (value instanceof Error) return value.message;
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 1500 ? `${text.slice(0, 1500)}…` : text;
}

/**
 * Polls `probe` until it answers something other than undefined/false; fails after the deadline
 * with `what` and the last answer (or error), never hangs the suite.
 */
export async function eventually<T>(
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      last = value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${describeValue(last)}`);
    await sleep(5);
  }
}

/**
 * Lets the server run for `ms`. Only ever used AFTER a positive synchronisation, to give a
 * behaviour that must NOT happen a fair chance to show up.
 */
export const settle = (ms = 60) => sleep(ms);

// ---------------------------------------------------------------- commands

export interface SubscribeBody {
  sourceStreamPath: string;
  subscriptionKey?: string;
  idempotencyKey?: string;
  description?: string;
  filter?: { eventTypes?: string[]; jsonataCondition?: string };
  jsonataTransform?: string;
  delivery?: { start?: 'beginning' | 'now' };
  [key: string]: unknown;
}

export interface SubscribeAnswer {
  subscriptionKey: string;
  subscriptionConfiguredEvent: CommittedEvent;
}

/** POST {path}:{method} with a JSON body; the raw answer. */
export function command(api: Api, path: string, method: string, body: unknown): Promise<ApiResponse> {
  return api.request('POST', streamRoute(path, method), { json: body });
}

/** `:subscribeToEventsFrom` on the receiving stream; must succeed. */
export async function subscribe(api: Api, receivingPath: string, body: SubscribeBody): Promise<SubscribeAnswer> {
  const res = await command(api, receivingPath, 'subscribeToEventsFrom', body);
  expect(res.status, `subscribeToEventsFrom on ${receivingPath}: ${res.text}`).toBe(200);
  return res.body as SubscribeAnswer;
}

export interface CopyReceiverOptions {
  start?: 'beginning' | 'now';
  jsonataTransform?: string;
}

/** A copy-to-stream receiver exactly as protocol §9.1 spells it. */
export function copyTo(receivingStreamPath: string, options: CopyReceiverOptions = {}): Record<string, unknown> {
  return {
    action: 'copy-to-stream',
    receivingStreamPath,
    ...(options.jsonataTransform !== undefined ? { jsonataTransform: options.jsonataTransform } : {}),
    delivery: { start: options.start ?? 'now', onFailingEvent: 'halt' },
  };
}

/** A raw subscription-configured event (for POST /v1/streams/{source}). */
export function configured(payload: Record<string, unknown>, extra: Partial<EventInput> = {}): EventInput {
  return { type: EventType.subscriptionConfigured, payload, ...extra };
}

// ---------------------------------------------------------------- state

export async function coreOf(api: Api, path: string): Promise<CoreState | null> {
  return (await api.state(path)).core;
}

export async function outboundOf(api: Api, source: string, key: string): Promise<OutboundEntry | undefined> {
  return (await coreOf(api, source))?.subscriptions.outbound.byKey[key];
}

export async function inboundOf(api: Api, receiver: string, source: string, key: string): Promise<InboundRecord | undefined> {
  return (await coreOf(api, receiver))?.subscriptions.inbound.bySourcePath[source]?.[key];
}

export async function runtimeOf(api: Api, source: string, key: string): Promise<SubscriptionRuntimeState | undefined> {
  return (await api.state(source)).runtime?.subscriptions[key];
}

/** The head of a stream, ephemeral offsets included (0 when it does not exist). */
export async function headOf(api: Api, path: string): Promise<number> {
  return (await api.read(path, { afterOffset: 0, limit: 1, includeEphemeral: true })).streamMaxOffset;
}

/**
 * Waits until subscription `key` of `source` has delivered everything: lag 0, no failure pending,
 * nothing in flight. Answers its runtime row.
 */
export async function caughtUp(api: Api, source: string, key: string, timeoutMs = 5_000): Promise<SubscriptionRuntimeState> {
  return eventually(
    async () => {
      const row = await runtimeOf(api, source, key);
      return row && row.lag === 0 && row.attempt === 0 && row.lastError === null && row.inFlightDeadlineAt === null ? row : undefined;
    },
    `${source} subscription "${key}" to catch up (lag 0, attempt 0, no error, nothing in flight)`,
    timeoutMs,
  );
}

/** Waits until subscription `key` of `source` is halted in core state; answers the outbound entry. */
export async function halted(api: Api, source: string, key: string, timeoutMs = 5_000): Promise<OutboundEntry> {
  return eventually(
    async () => {
      const entry = await outboundOf(api, source, key);
      return entry?.deliveryHalted ? entry : undefined;
    },
    `${source} subscription "${key}" to halt`,
    timeoutMs,
  );
}

// ---------------------------------------------------------------- events and copies

/** Every event of a stream, ephemeral ones included. */
export function allEvents(api: Api, path: string): Promise<CommittedEvent[]> {
  return api.readAll(path, { includeEphemeral: true });
}

export function isCopy(event: CommittedEvent): boolean {
  return (event.source?.copiedFrom?.length ?? 0) > 0;
}

export function lastHop(event: CommittedEvent): CopyHop {
  const hops = event.source?.copiedFrom ?? [];
  expect(hops.length, `event ${event.offset} of ${event.path} is not a copy: ${JSON.stringify(event)}`).toBeGreaterThan(0);
  return hops[hops.length - 1]!;
}

/** The fields of a committed event a copy must reproduce (type/payload/metadata, omitted stays omitted). */
export function copiedBody(event: CommittedEvent): Pick<CommittedEvent, 'type' | 'payload' | 'metadata'> {
  return {
    type: event.type,
    ...(event.payload !== undefined ? { payload: event.payload } : {}),
    ...(event.metadata !== undefined ? { metadata: event.metadata } : {}),
  };
}

/** The copies on a receiver (events carrying source.copiedFrom), in receiver order. */
export async function copiesOn(api: Api, receiver: string): Promise<CommittedEvent[]> {
  return (await allEvents(api, receiver)).filter(isCopy);
}

/** Waits until `receiver` holds at least `count` copies; answers them all. */
export async function waitForCopies(api: Api, receiver: string, count: number, timeoutMs = 5_000): Promise<CommittedEvent[]> {
  return eventually(
    async () => {
      const copies = await copiesOn(api, receiver);
      return copies.length >= count ? copies : undefined;
    },
    `${count} copies on ${receiver}`,
    timeoutMs,
  );
}

/** The visible platform idempotency key of a copy (protocol §13.2). */
export function copyIdempotencyKey(
  subscriptionKey: string,
  cursorChangedAtSourceOffset: number,
  projectId: string | null,
  sourcePath: string,
  streamId: string,
  offset: number,
): string {
  return `rivulet-internal/copy:${JSON.stringify([subscriptionKey, cursorChangedAtSourceOffset, projectId, sourcePath, streamId, offset])}`;
}

/** The exact hop a copy of `event` must carry (protocol §13.2). */
export function expectedHop(
  event: CommittedEvent,
  stamp: { streamId: string; streamCreatedAt: string; subscriptionKey: string; cursorChangedAtSourceOffset: number; projectId?: string | null },
): CopyHop {
  return {
    projectId: stamp.projectId ?? null,
    path: event.path,
    streamId: stamp.streamId,
    streamCreatedAt: stamp.streamCreatedAt,
    offset: event.offset,
    type: event.type,
    createdAt: event.createdAt,
    subscriptionKey: stamp.subscriptionKey,
    cursorChangedAtSourceOffset: stamp.cursorChangedAtSourceOffset,
  };
}

/** The lifetime of a stream: streamId and streamCreatedAt (its created event's createdAt). */
export async function lifetimeOf(api: Api, path: string): Promise<{ streamId: string; streamCreatedAt: string }> {
  const page = await api.read(path, { afterOffset: 0, limit: 1 });
  const created = page.events[0];
  expect(created?.type, `${path} has no created event`).toBe(EventType.created);
  return { streamId: page.streamId!, streamCreatedAt: created!.createdAt };
}

// ---------------------------------------------------------------- metrics

export async function scrape(api: Api): Promise<string> {
  const res = await api.request('GET', '/metrics');
  expect(res.status, res.text).toBe(200);
  return res.text;
}

/**
 * The value of one sample: `name` with exactly these labels (any order), or undefined when absent.
 */
export function sampleOf(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',');
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = (match[2] ?? '')
      .split(/,(?=[a-zA-Z_][a-zA-Z0-9_]*=")/)
      .filter((part) => part !== '')
      .sort()
      .join(',');
    if (have === want) return Number(match[3]);
  }
  return undefined;
}
