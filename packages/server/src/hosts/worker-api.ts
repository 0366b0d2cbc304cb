/**
 * The Durable Object RPC surface of the Worker host, as the callers see it through a namespace
 * binding: one stream object per (project, path), one index and one RPC hub per project. Every
 * method answers a Wire (worker-wire.ts) so that error codes survive the boundary. Every method of
 * a stream object names the stream it is for, and the object refuses a name that is not its own.
 *
 * Trust: these methods are reachable only through the bindings of this deployment, never from
 * the Internet. The Worker entry calls the public methods after authenticating the caller and
 * applies public authority inside them; `receiveCopies` is called by stream objects' delivery
 * only — the trusted-sender rule of the design page ("only trusted stream delivery may append
 * source.copiedFrom").
 */
import type { CommittedEvent, EventInput, ListResponse, StreamListEntry, StreamStateResponse, SubscribeToEventsFromBody } from '@rivulet/contract';
import type { CopyBatch } from '../core/copy-builder.js';
import type { ReadRawResult } from '../engine/actor.js';
import type { SubscribeResult } from '../engine/commands.js';
import type { ListOptions, ReadOptions } from '../engine/service.js';
import type { CopyReceipt } from '../ports/directory.js';
import type { Wire } from './worker-wire.js';

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
}

export interface IndexEntry {
  path: string;
  streamId: string;
  createdAt: string;
}

export interface IndexObjectApi {
  put(projectId: P, entry: IndexEntry): Promise<Wire<void>>;
  /** Removes the path only while it still names `streamId` (a later lifetime stays listed). */
  remove(projectId: P, path: string, streamId: string): Promise<Wire<void>>;
  list(projectId: P, options: ListOptions): Promise<Wire<{ entries: IndexEntry[]; more: boolean }>>;
}

/** What a stream object's itx-call delivery sends the project's hub (the serialisable part of a DeliveryContext). */
export interface ItxDelivery {
  projectId: P;
  path: string;
  streamId: string;
  streamCreatedAt: string;
  subscriptionKey: string;
  cursorChangedAtSourceOffset: number;
  deliveryId: string;
  attempt: number;
  streamMaxOffset: number;
  expression: unknown;
  events: ReadonlyArray<{ event: CommittedEvent; shaped: unknown }>;
  timeoutMs: number;
}

export type ItxOutcome = { ok: true } | { ok: false; kind: 'failing' | 'unavailable' | 'fatal'; error: string };

export interface HubObjectApi {
  fetch(request: Request): Promise<Response>;
  deliverItx(delivery: ItxDelivery): Promise<ItxOutcome>;
}

export type { ListResponse, StreamListEntry };
