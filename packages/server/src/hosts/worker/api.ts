/**
 * The Durable Object RPC surface of the Worker host, as the callers see it through a namespace
 * binding: one stream object per (project, path), one index and one RPC hub per project. Every
 * method answers a Wire (wire.ts) so that error codes survive the boundary. Every method of
 * a stream object names the stream it is for, and the object refuses a name that is not its own.
 *
 * Trust: these methods are reachable only through the bindings of this deployment, never from
 * the Internet. The Worker entry calls the public methods after authenticating the caller and
 * applies public authority inside them; `receiveCopies` is called by stream objects' delivery
 * only: no public caller may append an event carrying source.copiedFrom (protocol §3.5).
 */
import type {
  CommittedEvent,
  ConnectionBatch,
  DeliveryAttemptsResponse,
  PreviewSubscriptionBody,
  PreviewSubscriptionResponse,
  SubscriptionListEntry,
  ConnectionClosed,
  ConnectionCloseReason,
  EventInput,
  ItxBatch,
  ItxExpression,
  ListResponse,
  OpenConnectionOptions,
  ProcessorBatch,
  ProcessorWakeRequest,
  StreamListEntry,
  StreamStateResponse,
  SubscribeToEventsFromBody,
  WaitForEventBody,
  WaitForEventResponse,
} from '@rivulet/contract';
import type { CopyBatch } from '../../core/copy-builder.js';
import type { FailureKind } from '../../core/ladder.js';
import type { WakeAnswer } from '../../core/processor-wake.js';
import type { HostedFailure, ItxCallOutcome } from '../../ports/itx.js';
import type { ReadRawResult } from '../../engine/actor.js';
import type { SubscribeResult } from '../../engine/commands.js';
import type { ListOptions, ReadOptions } from '../../engine/service.js';
import type { CopyReceipt } from '../../ports/directory.js';
import type { Appended, MetricsMark, MetricsReport, ProjectMetrics } from './metrics-rollup.js';
import type { Wire } from './wire.js';

export interface TailRequest {
  afterOffset: number;
  expectedStreamId?: string | undefined;
  eventTypes?: readonly string[] | undefined;
}

export interface StreamSummary {
  streamId: string;
  createdAt: string;
  maxOffset: number;
}

type P = string | null;

/**
 * A function passed by reference over Durable Object RPC, as the object that received it holds
 * it: a stub whose calls run in the object that passed it. A stub received as an argument is
 * released when that call returns; `dup()` keeps one past it, to be disposed when done.
 */
export interface RemoteFunction<A, R> {
  (arg: A): Promise<R>;
  dup(): RemoteFunction<A, R>;
  [Symbol.dispose](): void;
}

/** An object passed by reference over Durable Object RPC, as the object that received it holds it. */
export type RemoteStub<T> = T & {
  /** A copy that outlives the call it arrived in (released when that call returns otherwise). */
  dup(): RemoteStub<T>;
  [Symbol.dispose](): void;
};

/** The opener's side of one live connection (the hub's), held by the stream object that runs it. */
export interface ConnectionOpenerApi {
  processEventBatch(batch: ConnectionBatch): Promise<void>;
  /** Settles once the opener's handle closed; rejects when the opener's object went away. */
  untilClosed(): Promise<void>;
}

/** The stream object's side of one open live connection, held by whoever opened it (the hub). */
export interface ConnectionControlApi {
  /** Closes it; false when it had already closed. */
  close(reason: ConnectionCloseReason, error?: string): Promise<boolean>;
  /** Answers once it closed, for whatever reason. */
  whenClosed(): Promise<ConnectionClosed>;
  /** Releasing the last stub of an open connection closes it (`session-ended`): its opener is gone. */
  [Symbol.dispose](): void;
}

export interface OpenedConnection {
  connectionKey: string;
  /** The offset of its connection-opened fact. */
  streamMaxOffset: number;
  control: ConnectionControlApi;
}

export interface StreamObjectApi {
  append(projectId: P, path: string, inputs: readonly EventInput[]): Promise<Wire<CommittedEvent[]>>;
  read(projectId: P, path: string, options: ReadOptions): Promise<Wire<ReadRawResult>>;
  state(projectId: P, path: string): Promise<Wire<StreamStateResponse>>;
  destroy(projectId: P, path: string): Promise<Wire<boolean>>;
  summary(projectId: P, path: string): Promise<Wire<StreamSummary | null>>;
  /** Newline-delimited JSON TailItems (engine/tail.ts); cancelling the stream ends the tail. */
  tail(projectId: P, path: string, options: TailRequest): Promise<Wire<ReadableStream<Uint8Array>>>;
  /** Called on the **source** stream's object (the command appends there). */
  subscribeToEventsFrom(projectId: P, receivingPath: string, body: SubscribeToEventsFromBody): Promise<Wire<SubscribeResult>>;
  /** Called on the **source** stream's object. */
  unsubscribeFromEvents(
    projectId: P,
    receivingPath: string,
    body: { sourceStreamPath: string; subscriptionKey: string },
  ): Promise<Wire<{ status: 'removed'; subscriptionRemovedEvent: CommittedEvent } | { status: 'already-absent' }>>;
  setSubscriptionCursor(projectId: P, path: string, body: { subscriptionKey: string; afterOffset: number }): Promise<Wire<{ event: CommittedEvent }>>;
  resumeSubscription(projectId: P, path: string, body: { subscriptionKey: string }): Promise<Wire<{ event: CommittedEvent | null }>>;
  setSubscriptionCursorAndResume(
    projectId: P,
    path: string,
    body: { subscriptionKey: string; afterOffset: number },
  ): Promise<Wire<{ cursorSet: CommittedEvent; resumed: CommittedEvent | null }>>;
  /** Trusted: copies from another stream object's delivery (StreamDirectory port). */
  receiveCopies(projectId: P, path: string, batch: CopyBatch): Promise<Wire<CopyReceipt>>;
  /**
   * A live connection run by this object's engine (protocol §19). `opener` is passed by reference:
   * its `processEventBatch` is called with each batch (its promise settling is the batch's
   * delivery), and its pending `untilClosed()` failing means the opener went away.
   */
  openConnection(projectId: P, path: string, options: OpenConnectionOptions, opener: ConnectionOpenerApi): Promise<Wire<OpenedConnection>>;
  /** `waitForEvent` under the caller's `waitId`, which `cancelWait` names to cancel it. */
  waitForEvent(projectId: P, path: string, body: WaitForEventBody, waitId: string): Promise<Wire<WaitForEventResponse>>;
  cancelWait(projectId: P, path: string, waitId: string): Promise<Wire<boolean>>;
  /** A processor host registered in the project: processor-wake rows backing off for want of one are due now. */
  processorHostRegistered(projectId: P, path: string): Promise<Wire<void>>;
  /** Every subscription of this stream as the listing shows it (protocol §21). */
  subscriptionEntries(projectId: P, path: string): Promise<Wire<SubscriptionListEntry[]>>;
  deliveryAttempts(projectId: P, path: string, query: { subscriptionKey: string; limit?: number | undefined }): Promise<Wire<DeliveryAttemptsResponse>>;
  previewSubscription(projectId: P, path: string, body: PreviewSubscriptionBody): Promise<Wire<PreviewSubscriptionResponse>>;
}

export interface IndexEntry {
  path: string;
  streamId: string;
  createdAt: string;
}

/** A position of the subscription listing (engine/subscription-index.ts ListPosition). */
export interface SubscribedCandidate {
  group: 0 | 1;
  path: string;
  key: string;
}

export interface SubscribedQuery {
  prefix: string;
  after: SubscribedCandidate | undefined;
  halted: boolean | undefined;
  limit: number;
}

export interface IndexObjectApi {
  put(projectId: P, entry: IndexEntry): Promise<Wire<void>>;
  /**
   * Removes the path only while it still names `streamId` (a later lifetime stays listed), and
   * forgets the lifetime's metrics after adding its final appended figures (metrics-rollup.ts).
   */
  remove(projectId: P, path: string, streamId: string, appended?: Appended): Promise<Wire<void>>;
  list(projectId: P, options: ListOptions): Promise<Wire<{ entries: IndexEntry[]; more: boolean }>>;
  /** Replaces the index's subscriptions of `path` (protocol §21). */
  putSubscriptions(projectId: P, path: string, streamId: string, entries: Array<{ key: string; halted: boolean }>): Promise<Wire<void>>;
  subscribed(projectId: P, query: SubscribedQuery): Promise<Wire<SubscribedCandidate[]>>;
  /** A stream object's /metrics figures (metrics-rollup.ts), applied once. */
  reportMetrics(projectId: P, report: MetricsReport): Promise<Wire<void>>;
  /** What was counted of the lifetime `streamId`: its halts and skips through an offset, its appended figures. */
  metricsMark(projectId: P, streamId: string): Promise<Wire<MetricsMark>>;
  /** The hub instance `reporter`'s open RPC sessions (metrics-rollup.ts; 0: it has none). */
  reportSessions(projectId: P, reporter: string, count: number): Promise<Wire<void>>;
  /** The project's /metrics figures. */
  metricsTotals(projectId: P): Promise<Wire<ProjectMetrics>>;
  /** In the deployment's registry object (metricsRegistryName): a project whose index holds figures. */
  registerMetricsProject(projectId: P): Promise<Wire<void>>;
  /** In the deployment's registry object: every project registered there. */
  metricsProjects(): Promise<Wire<Array<string | null>>>;
}

/** The hub's side of one hosted processor connection: the host's processEventBatch, held in the hub. */
export interface HostedCallableApi {
  /** Calls processEventBatch; `batch.reportDeliveryResult` is passed by reference. Null once the call returned. */
  send(batch: ProcessorBatch): Promise<HostedFailure | null>;
  /** Answers the error once the host's session broke, or null once the connection was closed. */
  whenBroken(): Promise<string | null>;
  close(): Promise<void>;
  [Symbol.dispose](): void;
}

/** What a processor wake through the hub answers (the driver's WakeOutcome, its callable a stub). */
export type HubWakeOutcome =
  | { ok: true; answer: WakeAnswer | null; callable: HostedCallableApi | undefined }
  | { ok: false; kind: FailureKind; error: string };

export interface HubObjectApi {
  fetch(request: Request): Promise<Response>;
  /** One itx-call delivery (ports/itx.ts `call`) against the project's root. */
  callItx(projectId: P, expression: ItxExpression, batch: ItxBatch): Promise<ItxCallOutcome>;
  /** Evaluates a processor-wake expression against the project's root and calls it (protocol §20.3). */
  /**
   * `untilReleased` is passed by reference: it settles once the stream object closed the hosted
   * connection, and fails when that object went away; either way the hub lets go of the host's stub.
   */
  wakeProcessor(
    projectId: P,
    path: string,
    expression: ItxExpression,
    request: ProcessorWakeRequest,
    untilReleased: () => Promise<void>,
  ): Promise<HubWakeOutcome>;
}

export type { ListResponse, StreamListEntry };
