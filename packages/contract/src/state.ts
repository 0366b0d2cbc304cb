/**
 * Reduced core state (protocol §10) and runtime state
 * (protocol §11). Core state is durable and replayable; runtime state
 * is mutable send progress and measurements, never a copy of configuration.
 */
import type { EffectiveSubscriptionConfiguration } from './subscriptions.js';

export interface InboundRecord {
  streamId: string;
  streamCreatedAt: string;
  cursorChangedAtSourceOffset: number;
  numEventsReceived: number;
  lastEventReceivedAt?: string;
}

export interface DeliveryHalted {
  reason: 'delivery-failed';
  afterOffset: number;
  attempts: number;
  error?: string;
}

export interface OutboundEntry {
  configuration: EffectiveSubscriptionConfiguration;
  configuredAtOffset: number;
  configuredAt: string;
  subscriptionKeyWasGenerated?: true;
  cursorSet?: { afterOffset: number; setAtSourceOffset: number };
  deliveryHalted?: DeliveryHalted;
}

export interface SubscriptionsState {
  inbound: { bySourcePath: Record<string, Record<string, InboundRecord>> };
  outbound: { byKey: Record<string, OutboundEntry> };
}

export interface CoreState {
  projectId: string | null;
  path: string;
  streamId: string;
  createdAt: string;
  /** Durable (non-ephemeral) events folded so far. */
  eventCount: number;
  /** Highest durable offset folded; ephemeral offsets are never folded (protocol §4.4, §10.1). */
  maxOffset: number;
  paused: boolean;
  pauseReason: string | null;
  subscriptions: SubscriptionsState;
}

export interface LatencyStats {
  count: number;
  min: number;
  max: number;
  mean: number;
  p50: number;
  p99: number;
}

export interface SubscriptionRuntimeState {
  acknowledgedOffset: number;
  lag: number;
  attempt: number;
  nextAttemptAt: number | null;
  inFlightDeadlineAt: number | null;
  lastError: string | null;
  bytesSent?: number;
  completionLatencyMs?: LatencyStats;
  deliveryDurationMs?: LatencyStats;
}

export interface ConnectionRuntimeState {
  kind: 'live' | 'hosted' | 'wait';
  startedAt: string;
  deliveredThroughOffset: number;
  lag: number;
  batchesSent: number;
  eventsSent: number;
}

export interface RuntimeState {
  /** The stream head including ephemeral offsets. */
  streamMaxOffset: number;
  subscriptions: Record<string, SubscriptionRuntimeState>;
  connections: Record<string, ConnectionRuntimeState>;
}

export interface StreamStateResponse {
  core: CoreState | null;
  runtime: RuntimeState | null;
}
