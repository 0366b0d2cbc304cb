/**
 * What a live connection is asked for (its spec), the bounds it keeps, and the facts that record
 * its close; shared by the connection, the hub that holds connections and the open path.
 */
import { EventType, Limits, type ConnectionBatch, type ConnectionClosed, type ConnectionKind, type SubscriptionFilter } from '@rivulet/contract';
import type { AppendInput } from '../../core/append-input.js';

export interface ConnectionSpec {
  key: string;
  kind: Exclude<ConnectionKind, 'hosted'>;
  /** Present: replay durable matching events after it, then live; absent: live only. */
  replayAfterOffset: number | undefined;
  filter: SubscriptionFilter | undefined;
  /** False: batches carry no events, only the state (one per commit that holds a matching event). */
  events: boolean;
  /** False: batches carry `state: null`. */
  state: boolean;
  /** Events per batch at most. */
  maxDeliveryEvents: number;
}

export interface ConnectionLimits {
  /** Live events queued for a callback that is still busy; above it the connection closes. */
  maxBacklogEvents: number;
  /** The same bound in bytes of event JSON. */
  maxBacklogBytes: number;
  /** Bytes of event JSON per batch (the first event of a batch always goes). */
  maxBatchBytes: number;
}

export const defaultConnectionLimits: ConnectionLimits = {
  maxBacklogEvents: 10_000,
  maxBacklogBytes: 16 * 1024 * 1024,
  maxBatchBytes: 4 * 1024 * 1024,
};

/** Events per batch when the caller does not set `maxDeliveryEvents`. */
export const DEFAULT_BATCH_EVENTS = 1000;

export type BatchCallback = (batch: ConnectionBatch) => unknown;

export function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > Limits.errorTextMax ? `${text.slice(0, Limits.errorTextMax - 1)}…` : text;
}

export function closedFact(connectionKey: string, outcome: ConnectionClosed): AppendInput {
  const payload: Record<string, string> = { connectionKey, reason: outcome.reason };
  if (outcome.error !== undefined) payload.error = outcome.error.slice(0, Limits.errorTextMax);
  return { type: EventType.connectionClosed, payload };
}
