/**
 * @rivulet/client: the typed SDK over Rivulet's HTTP interface. Runs wherever a WHATWG fetch does
 * (Node 20+, browsers, workers); it talks to the server over the wire only.
 */
export { RivuletError, canonicalizePath, type CommittedEvent, type ErrorCode } from '@rivulet/contract';
export type {
  ListResponse,
  ReadResponse,
  StreamListEntry,
  StreamStateResponse,
  CoreState,
  RuntimeState,
  SubscribeToEventsFromBody,
} from '@rivulet/contract';
export {
  createClient,
  type AppendEvent,
  type AppendOptions,
  type BackupDownload,
  type CallOptions,
  type ClientOptions,
  type DestroyResponse,
  LATEST_MAX,
  type LatestOptions,
  type ListOptions,
  type ReadOptions,
  type RivuletClient,
  type SubscribeResponse,
  type SubscriptionSummary,
  type UnsubscribeResponse,
} from './client.js';
export type { FetchLike } from './http.js';
export { MAX_RETRY_ATTEMPTS, type RetryOptions } from './retry.js';
export type { TokenSource } from './token.js';
export type { ReconnectInfo, ReconnectOptions, TailOptions } from './tail.js';
export { SseParser, readSse, type SseMessage } from './sse.js';
export { encodeStreamPath, streamUrl } from './urls.js';
export { connect, type ConnectOptions, type ItxConnection, type ItxRoot } from './rpc.js';
export { serveWorker, WorkerError, type ServedWorker, type WorkerHandler } from './worker.js';
export { watch, type LiveWatch, type WatchEnded, type WatchOptions } from './watch.js';
export type {
  ConnectionBatch,
  ConnectionClosed,
  ConnectionCloseReason,
  OpenConnectionOptions,
  WaitForEventBody,
  WaitForEventResponse,
} from '@rivulet/contract';
export { defineProcessor, type ProcessorDefinition, type ProcessorEventContext } from './processor.js';
export type {
  ProcessorBatch,
  ProcessorDeliveryResult,
  ProcessorReportReceipt,
  ProcessorWakeRequest,
  ProcessorWakeResponse,
} from '@rivulet/contract';
export type {
  ItxBatch,
  ItxRootRpc,
  StreamRpc,
  CallablesRpc,
  RegistrationRpc,
  RpcReadOptions,
  LiveConnectionRpc,
  OpenConnectionRpcOptions,
} from './rpc-types.js';
export { RpcTarget } from 'capnweb';
export {
  verifyWebhook,
  WEBHOOK_TOLERANCE_SECONDS,
  type VerifyWebhookOptions,
  type WebhookEnvelope,
  type WebhookRequestLike,
} from './webhooks.js';
export type { DeliveryAttemptsOptions, ListSubscriptionsOptions, SubscriptionAdminApi } from './subscription-admin.js';
export type {
  DeliveryAttempt,
  DeliveryAttemptsResponse,
  PreviewSubscriptionBody,
  PreviewSubscriptionResponse,
  SubscriptionListEntry,
  SubscriptionListResponse,
  SubscriptionStatus,
} from '@rivulet/contract';
