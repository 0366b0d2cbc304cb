/**
 * The stream service: the one asynchronous, host-agnostic interface the edges (HTTP, RPC) call.
 * The Node host implements it in-process over the actor registry; another host may implement it
 * by forwarding to where each stream lives. Inputs arrive schema-validated from the edge; the
 * service applies authority (public callers) and answers plain data.
 */
import {

  isPathUnder,
  type CommittedEvent,
  type EventInput,
  type ListResponse,
  type StreamStateResponse,
} from '@rivulet/contract';
import { checkInput } from '../core/append-input.js';
import type { ReadRawResult, StreamActor } from './actor.js';
import type { ServerMetrics } from './metrics.js';
import type { StreamRegistry } from './registry.js';
import type { StreamStore } from './stream-store.js';
import { tailStream, type TailItem, type TailOptions } from './tail.js';
import { RivuletError, type SubscribeToEventsFromBody } from '@rivulet/contract';
import * as commands from './commands.js';
import { ConnectionHub, waitForEvent, type BatchCallback, type ConnectionHandle, type ConnectionLimits } from './connections/index.js';
import type { Clock, Random } from '../ports/clock.js';
import type { Timer } from '../ports/timer.js';
import type { OpenConnectionOptions, WaitForEventBody, WaitForEventResponse } from '@rivulet/contract';
import type {
  DeliveryAttemptsResponse,
  PreviewSubscriptionBody,
  PreviewSubscriptionResponse,
  SubscriptionListResponse,
} from '@rivulet/contract';
import { previewSubscription } from './delivery/preview.js';
import { queryIndex } from './subscription-index.js';
import { listSubscriptions, type SubscriptionListOptions } from './subscription-listing.js';

export type { SubscriptionListOptions } from './subscription-listing.js';

export interface ReadOptions {
  afterOffset: number;
  beforeOffset?: number | undefined;
  limit: number;
  includeEphemeral: boolean;
  eventTypes?: readonly string[] | undefined;
  /** The events as one JSON text (`ReadRawResult.joined`), for the HTTP page (StreamActor.readRaw). */
  joined?: boolean | undefined;
}

export interface ListOptions {
  prefix: string;
  after?: string | undefined;
  limit: number;
}

export interface StreamService {
  append(projectId: string | null, path: string, inputs: readonly EventInput[]): Promise<CommittedEvent[]>;
  read(projectId: string | null, path: string, options: ReadOptions): Promise<ReadRawResult>;
  state(projectId: string | null, path: string): Promise<StreamStateResponse>;
  destroy(projectId: string | null, path: string): Promise<boolean>;
  list(projectId: string | null, options: ListOptions): Promise<ListResponse>;
  tail(projectId: string | null, path: string, options: TailOptions): AsyncIterable<TailItem>;
  subscribeToEventsFrom(projectId: string | null, receivingPath: string, body: SubscribeToEventsFromBody): Promise<commands.SubscribeResult>;
  unsubscribeFromEvents(
    projectId: string | null,
    receivingPath: string,
    body: { sourceStreamPath: string; subscriptionKey: string },
  ): ReturnType<typeof commands.unsubscribeFromEvents>;
  setSubscriptionCursor(projectId: string | null, path: string, body: { subscriptionKey: string; afterOffset: number }): ReturnType<typeof commands.setSubscriptionCursor>;
  resumeSubscription(projectId: string | null, path: string, body: { subscriptionKey: string }): ReturnType<typeof commands.resumeSubscription>;
  setSubscriptionCursorAndResume(
    projectId: string | null,
    path: string,
    body: { subscriptionKey: string; afterOffset: number },
  ): ReturnType<typeof commands.setSubscriptionCursorAndResume>;
  /**
   * A live connection (protocol §19.1): `callback` receives batches until the handle is
   * closed. Optional: a host that serves no live connections leaves it out (callers answer UNAVAILABLE).
   */
  openConnection?(projectId: string | null, path: string, options: OpenConnectionOptions, callback: BatchCallback): Promise<ConnectionHandle>;
  /** `:waitForEvent` (protocol §19.7); `signal` cancels the wait. Optional like openConnection. */
  waitForEvent?(projectId: string | null, path: string, body: WaitForEventBody, signal?: AbortSignal): Promise<WaitForEventResponse>;
  /** The project's subscriptions across its streams (protocol §21). Optional like openConnection. */
  listSubscriptions?(projectId: string | null, options: SubscriptionListOptions): Promise<SubscriptionListResponse>;
  /** The newest delivery attempts of one subscription (protocol §22). */
  deliveryAttempts?(projectId: string | null, path: string, query: { subscriptionKey: string; limit?: number | undefined }): Promise<DeliveryAttemptsResponse>;
  /** The dry run of a subscription on its source (protocol §23). */
  previewSubscription?(projectId: string | null, path: string, body: PreviewSubscriptionBody): Promise<PreviewSubscriptionResponse>;
}

/** Attempts answered when the query names no limit (protocol §22). */
const ATTEMPTS_DEFAULT = 50;

export interface LocalServiceOptions {
  clock: Clock;
  random: Random;
  timer: Timer;
  /** Backlog and batch bounds of live connections (tests make them small). */
  connectionLimits?: Partial<ConnectionLimits>;
  log?(message: string, error?: unknown): void;
  /** When a subscription counts as lagging (config.laggingAfterMs, protocol §21.2). */
  laggingAfterMs?: number;
}

export class LocalStreamService implements StreamService {
  /** The live connections of every stream of this service. */
  readonly connections: ConnectionHub;

  constructor(
    private readonly registry: StreamRegistry,
    private readonly store: StreamStore,
    private readonly metrics: ServerMetrics,
    private readonly options: LocalServiceOptions,
  ) {
    this.connections = new ConnectionHub({
      clock: options.clock,
      random: options.random,
      timer: options.timer,
      ...(options.connectionLimits ? { limits: options.connectionLimits } : {}),
      ...(options.log ? { log: options.log } : {}),
    });
  }

  actor(projectId: string | null, path: string): StreamActor {
    return this.registry.get(projectId, path);
  }

  async append(projectId: string | null, path: string, inputs: readonly EventInput[]): Promise<CommittedEvent[]> {
    try {
      const checked = inputs.map((input, i) => checkInput(input, 'public', i));
      const events = await this.actor(projectId, path).append(checked, 'public');
      this.metrics.appends.inc();
      return events;
    } catch (error) {
      if (error instanceof RivuletError) this.metrics.appendRejections.inc({ code: error.code });
      throw error;
    }
  }

  async read(projectId: string | null, path: string, options: ReadOptions): Promise<ReadRawResult> {
    return this.actor(projectId, path).readRaw(options);
  }

  async state(projectId: string | null, path: string): Promise<StreamStateResponse> {
    const actor = this.actor(projectId, path);
    return { core: actor.durableState, runtime: actor.runtimeState({ connections: this.connections.runtime(actor) }) };
  }

  async destroy(projectId: string | null, path: string): Promise<boolean> {
    return this.actor(projectId, path).destroy();
  }

  async list(projectId: string | null, options: ListOptions): Promise<ListResponse> {
    const limit = Math.min(options.limit, 10_000);
    const streams = this.store.list(projectId, options.prefix, options.after, limit + 1);
    const page = streams.slice(0, limit).filter((s) => isPathUnder(s.path, options.prefix));
    const response: ListResponse = { streams: page };
    if (streams.length > limit) response.nextAfter = page[page.length - 1]!.path;
    return response;
  }

  tail(projectId: string | null, path: string, options: TailOptions): AsyncIterable<TailItem> {
    return tailStream(this.actor(projectId, path), options);
  }

  subscribeToEventsFrom(projectId: string | null, receivingPath: string, body: SubscribeToEventsFromBody) {
    return commands.subscribeToEventsFrom((p) => this.actor(projectId, p), receivingPath, body);
  }

  unsubscribeFromEvents(projectId: string | null, receivingPath: string, body: { sourceStreamPath: string; subscriptionKey: string }) {
    return commands.unsubscribeFromEvents((p) => this.actor(projectId, p), receivingPath, body);
  }

  setSubscriptionCursor(projectId: string | null, path: string, body: { subscriptionKey: string; afterOffset: number }) {
    return commands.setSubscriptionCursor(this.actor(projectId, path), body);
  }

  resumeSubscription(projectId: string | null, path: string, body: { subscriptionKey: string }) {
    return commands.resumeSubscription(this.actor(projectId, path), body);
  }

  setSubscriptionCursorAndResume(projectId: string | null, path: string, body: { subscriptionKey: string; afterOffset: number }) {
    return commands.setSubscriptionCursorAndResume(this.actor(projectId, path), body);
  }

  openConnection(projectId: string | null, path: string, options: OpenConnectionOptions, callback: BatchCallback): Promise<ConnectionHandle> {
    return this.connections.openConnection(this.actor(projectId, path), options, callback);
  }

  waitForEvent(projectId: string | null, path: string, body: WaitForEventBody, signal?: AbortSignal): Promise<WaitForEventResponse> {
    return waitForEvent(this.connections, this.actor(projectId, path), body, signal);
  }

  async listSubscriptions(projectId: string | null, options: SubscriptionListOptions): Promise<SubscriptionListResponse> {
    // Progress is persisted lazily (subscription-runtime.ts): bring the rows up to date first, as /metrics does.
    for (const runtime of [...this.store.unpersisted]) runtime.persistDirty();
    return listSubscriptions((q) => queryIndex(this.store.storage, q), projectId ?? '', options, {
      nowMs: this.options.clock.now(),
      laggingAfterMs: this.options.laggingAfterMs ?? 60_000,
    });
  }

  async deliveryAttempts(projectId: string | null, path: string, query: { subscriptionKey: string; limit?: number | undefined }): Promise<DeliveryAttemptsResponse> {
    const actor = this.actor(projectId, path);
    const key = query.subscriptionKey;
    if (!actor.coreState?.subscriptions.outbound.byKey[key]) {
      throw new RivuletError('NOT_FOUND', `no subscription "${key}" on ${path}`, { subscriptionKey: key });
    }
    return { attempts: actor.subscriptions.attempts.list(actor.sid, key, query.limit ?? ATTEMPTS_DEFAULT) };
  }

  previewSubscription(projectId: string | null, path: string, body: PreviewSubscriptionBody): Promise<PreviewSubscriptionResponse> {
    return previewSubscription(this.actor(projectId, path), body, this.options.clock.now());
  }
}

