/**
 * The shape of the ITX root as an RPC client sees it (API.md §5). These are the server's methods;
 * over Cap'n Web every call answers a promise.
 */
import type {
  CommittedEvent,
  ReadResponse,
  RuntimeState,
  StreamStateResponse,
  SubscribeToEventsFromBody,
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
}

export type { ItxBatch } from '@rivulet/contract';
