/**
 * Live connections and waitForEvent (protocol §19): the
 * options of `openConnection`, the batch its callback receives, and the platform facts
 * `connection-opened` / `connection-closed` every open and close appends on the stream.
 */
import { z } from 'zod';
import type { CommittedEvent } from './events.js';
import { Limits } from './limits.js';
import type { CoreState } from './state.js';
import { FilterSchema, type SubscriptionFilter, type WaitForEventBodySchema } from './subscriptions.js';

/** Connection keys share one namespace with subscription keys on a stream (protocol §9.2, §19.2). */
export const ConnectionKeySchema = z
  .string()
  .trim()
  .min(1, 'connectionKey must not be empty')
  .max(Limits.subscriptionKeyMaxLength, `connectionKey is longer than ${Limits.subscriptionKeyMaxLength} characters`);

/** The most events one batch may carry when `maxDeliveryEvents` asks for more. */
export const MAX_DELIVERY_EVENTS = 10_000;

/** `openConnection` options without the callback (protocol §19.1). */
export const OpenConnectionOptionsSchema = z.strictObject({
  connectionKey: ConnectionKeySchema.optional(),
  replayAfterOffset: z
    .int({ error: 'replayAfterOffset must be a safe integer (NaN, fractions and unsafe integers are refused)' })
    .min(0, 'replayAfterOffset must be at least 0')
    .optional()
    .meta({ description: 'Replay durable matching events after this offset, then live; absent: live only' }),
  expectedStreamId: z.string().min(1).max(64).optional(),
  maxReplayOffsetGap: z.int().min(0).optional(),
  filter: FilterSchema.optional(),
  events: z.boolean().optional(),
  state: z.boolean().optional(),
  maxDeliveryEvents: z.int().min(1).max(MAX_DELIVERY_EVENTS).optional(),
});
export type OpenConnectionOptions = z.infer<typeof OpenConnectionOptionsSchema>;

/** What a connection's callback (`processEventBatch`) is called with. */
export interface ConnectionBatch {
  projectId: string | null;
  path: string;
  streamId: string;
  /** The stream head this batch was built at; `state` is the core state at this offset. */
  streamMaxOffset: number;
  /** Committed events (empty in the first batch of a live-only connection, and with `events: false`). */
  events: CommittedEvent[];
  /** The core state at `streamMaxOffset`; null with `state: false`. */
  state: CoreState | null;
}

export type ConnectionKind = 'live' | 'wait' | 'hosted';

/**
 * Why a connection closed (the `reason` of `connection-closed`):
 * - `requested`: its handle's close() was called;
 * - `replaced`: another openConnection took its key;
 * - `delivery-failed`: its filter threw, or its callback rejected (`error` says which);
 * - `backlog-exceeded`: its callback fell too far behind the stream (`error` gives the bound);
 * - `session-ended`: the RPC session that opened it ended;
 * - `matched` / `timed-out` / `cancelled`: the end of a waitForEvent;
 * - `server-stopped`: the server shut down;
 * - `destroyed`: the stream was destroyed (no fact is appended: that would start a new lifetime).
 */
export const ConnectionCloseReasonSchema = z.enum([
  'requested',
  'replaced',
  'delivery-failed',
  'backlog-exceeded',
  'session-ended',
  'matched',
  'timed-out',
  'cancelled',
  'server-stopped',
  'destroyed',
]);
export type ConnectionCloseReason = z.infer<typeof ConnectionCloseReasonSchema>;

export interface ConnectionOpenedPayload {
  connectionKey: string;
  kind: ConnectionKind;
  replayAfterOffset?: number;
  expectedStreamId?: string;
  filter?: SubscriptionFilter;
  events?: false;
  state?: false;
  maxDeliveryEvents?: number;
  /** waitForEvent only. */
  timeoutMs?: number;
}

export interface ConnectionClosedPayload {
  connectionKey: string;
  reason: ConnectionCloseReason;
  error?: string;
}

/** How a connection ended, as its handle reports it. */
export interface ConnectionClosed {
  reason: ConnectionCloseReason;
  error?: string;
}

/** `:waitForEvent` (protocol §19.7): `{afterOffset?, eventTypes?, jsonataCondition?, timeoutMs}`. */
export type WaitForEventBody = z.infer<typeof WaitForEventBodySchema>;

export interface WaitForEventResponse {
  event: CommittedEvent;
}
