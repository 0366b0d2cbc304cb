/** Engine configuration: operator limits and the delivery knobs of protocol §16.1 (their meaning: §12.3–§12.7). */
import { Defaults } from '@rivulet/contract';
import { defaultExpressionLimits } from '../core/expression-budget.js';

export interface EngineConfig {
  maxEventBytes: number;
  maxCoreStateBytes: number;
  ephemeralRetentionMs: number;
  ephemeralRetentionCount: number;
  maxDeliveryAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  deliveryTimeoutMs: number;
  /**
   * How far beyond a call's deadline the stored in-flight watchdog may reach, so that calls that
   * follow one another in one flight (a webhook backlog) rewrite it only when it no longer covers
   * the next call (protocol §12.7). 0: written before every call, with exactly its deadline — the
   * Worker host, where the stored value arms the alarm that resumes an evicted object. The Node
   * host times its calls in memory and uses the delivery timeout.
   */
  watchdogLeaseMs: number;
  /** A caught-up hosted processor connection is closed after this long without a batch, and woken again on the next matching event (protocol §20). */
  processorIdleMs: number;
  /** Whether webhooks may target loopback, private, link-local and metadata addresses (protocol §16.1, §17.4). */
  allowPrivateWebhooks: boolean;
  /** Time budget of one JSONata evaluation, in milliseconds (protocol §16.8). */
  expressionTimeMs: number;
  /** Memory budget of one JSONata evaluation, in estimated bytes (protocol §16.8). */
  expressionMemoryBytes: number;
  /** Delivery attempts kept per subscription (protocol §22); 0 keeps none. */
  deliveryAttemptsKept: number;
  /** A subscription owing an event appended at least this long ago is "lagging" (protocol §21.2). */
  laggingAfterMs: number;
}

export const defaultEngineConfig: EngineConfig = {
  maxEventBytes: Defaults.maxEventBytes,
  maxCoreStateBytes: Defaults.maxCoreStateBytes,
  ephemeralRetentionMs: Defaults.ephemeralRetentionMs,
  ephemeralRetentionCount: Defaults.ephemeralRetentionCount,
  maxDeliveryAttempts: Defaults.maxDeliveryAttempts,
  retryBaseMs: Defaults.retryBaseMs,
  retryMaxMs: Defaults.retryMaxMs,
  deliveryTimeoutMs: Defaults.deliveryTimeoutMs,
  watchdogLeaseMs: 0,
  processorIdleMs: Defaults.processorIdleMs,
  allowPrivateWebhooks: true,
  expressionTimeMs: defaultExpressionLimits.timeMs,
  expressionMemoryBytes: defaultExpressionLimits.memoryBytes,
  deliveryAttemptsKept: 50,
  laggingAfterMs: 60_000,
};
