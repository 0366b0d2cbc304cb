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
  type CallOptions,
  type ClientOptions,
  type DestroyResponse,
  type ListOptions,
  type ReadOptions,
  type RivuletClient,
  type SubscribeResponse,
  type UnsubscribeResponse,
} from './client.js';
export type { FetchLike } from './http.js';
export type { ReconnectInfo, ReconnectOptions, TailOptions } from './tail.js';
export { SseParser, readSse, type SseMessage } from './sse.js';
export { encodeStreamPath, streamUrl } from './urls.js';
