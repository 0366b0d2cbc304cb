/**
 * The shape of the ITX root as an RPC client sees it (protocol §18.2). These are the server's
 * methods; over Cap'n Web every call answers a promise.
 */
import type {
  CommittedEvent,
  ConnectionBatch,
  ConnectionClosed,
  OpenConnectionOptions,
  ReadResponse,
  RuntimeState,
  StreamStateResponse,
  SubscribeToEventsFromBody,
  SubscriptionListResponse,
  SubscriptionStatus,
  WaitForEventBody,
  WaitForEventResponse,
} from '@rivulet/contract';
import type { AppendEvent } from './client.js';

export interface RpcReadOptions {
  afterOffset?: number;
  beforeOffset?: number;
  limit?: number;
  eventTypes?: string[];
  includeEphemeral?: boolean;
}

export interface StreamRpc {
  readonly path: string;
  append(...events: AppendEvent[]): Promise<CommittedEvent[]>;
  getEvents(options?: RpcReadOptions): Promise<ReadResponse>;
  state(): Promise<StreamStateResponse>;
  runtimeState(): Promise<RuntimeState | null>;
  subscribeToEventsFrom(body: SubscribeToEventsFromBody): Promise<{ subscriptionKey: string; subscriptionConfiguredEvent: CommittedEvent }>;
  unsubscribeFromEvents(body: { sourceStreamPath: string; subscriptionKey: string }): Promise<{ status: string; subscriptionRemovedEvent?: CommittedEvent }>;
  setSubscriptionCursor(body: { subscriptionKey: string; afterOffset: number }): Promise<{ event: CommittedEvent }>;
  resumeSubscription(body: { subscriptionKey: string }): Promise<{ event: CommittedEvent | null }>;
  setSubscriptionCursorAndResume(body: { subscriptionKey: string; afterOffset: number }): Promise<{ cursorSet: CommittedEvent; resumed: CommittedEvent | null }>;
  destroy(): Promise<{ destroyed: true }>;
  /** A live connection (protocol §19): `processEventBatch` gets every batch until the handle closes. */
  openConnection(options: OpenConnectionRpcOptions): Promise<LiveConnectionRpc>;
  /** The first matching event (protocol §19.6); rejects with code TIMEOUT when none came in time. */
  waitForEvent(body: WaitForEventBody): Promise<WaitForEventResponse>;
}

/** openConnection's options (protocol §19.1) with the callback, a function passed by reference. */
export interface OpenConnectionRpcOptions extends OpenConnectionOptions {
  processEventBatch(batch: ConnectionBatch): unknown;
}

/** The handle openConnection answers. */
export interface LiveConnectionRpc {
  readonly connectionKey: string;
  /** The stream head once open (the offset of its connection-opened fact). */
  readonly streamMaxOffset: number;
  close(): Promise<{ closed: boolean }>;
  /** Resolves when the connection closes, with the reason. */
  whenClosed(): Promise<ConnectionClosed>;
}

export interface RegistrationRpc {
  unregister(): Promise<{ unregistered: boolean }>;
}

export interface CallablesRpc {
  /** `target` is an RpcTarget (or function) passed by reference. */
  register(name: string, target: object): Promise<RegistrationRpc>;
  get(name: string): unknown;
  has(name: string): Promise<boolean>;
}

export interface ItxRootRpc {
  readonly streams: {
    get(path: string): StreamRpc;
    list(options?: { prefix?: string; after?: string; limit?: number }): Promise<{ streams: unknown[]; nextAfter?: string }>;
  };
  readonly workers: CallablesRpc;
  /** The project's subscriptions across its streams, one page (protocol §21.5). */
  listSubscriptions(options?: { status?: SubscriptionStatus[]; prefix?: string; limit?: number; after?: string }): Promise<SubscriptionListResponse>;
  /** Processor hosts (protocol §20): `register(name, host)` answers a registration. */
  readonly processors: CallablesRpc;
}

export type { ItxBatch } from '@rivulet/contract';
