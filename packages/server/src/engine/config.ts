/** Engine configuration: operator limits and the delivery knobs of API.md §7 / SEMANTICS §4. */
import { Defaults } from '@rivulet/contract';

export interface EngineConfig {
  maxEventBytes: number;
  maxCoreStateBytes: number;
  ephemeralRetentionMs: number;
  ephemeralRetentionCount: number;
  maxDeliveryAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  deliveryTimeoutMs: number;
  /** A caught-up hosted processor connection is closed after this long without a batch, and woken again on the next matching event (protocol §20). */
  processorIdleMs: number;
  /** Whether webhooks may target loopback, private, link-local and metadata addresses (API.md §8). */
  allowPrivateWebhooks: boolean;
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
  processorIdleMs: Defaults.processorIdleMs,
  allowPrivateWebhooks: true,
};
