/**
 * Fixed bounds of the protocol (protocol §1.1, §3, §9, §12, §13). Operator-tunable limits (event
 * and body bytes, retry ladder) are server configuration, not constants; their defaults live here.
 */

export const Limits = {
  typeMaxLength: 512,
  idempotencyKeyMaxLength: 1024,
  pathMaxLength: 1024,
  jsonMaxDepth: 128,
  readPageMax: 500,
  subscriptionKeyMaxLength: 500,
  subscriptionsPerPair: 64,
  maxHops: 32,
  inboundRecordsMax: 1000,
  expressionMaxSteps: 32,
  jsonataMaxLength: 16_384,
  descriptionMaxLength: 2048,
  errorTextMax: 4096,
  urlMaxLength: 2048,
} as const;

export const Defaults = {
  port: 7420,
  host: '127.0.0.1',
  data: './.rivulet',
  maxEventBytes: 1_048_576,
  maxBodyBytes: 8_388_608,
  maxCoreStateBytes: 1_048_576,
  maxDeliveryAttempts: 15,
  retryBaseMs: 1000,
  retryMaxMs: 1_800_000,
  deliveryTimeoutMs: 20_000,
  /** A caught-up hosted processor connection is closed after this long without a batch (protocol §20). */
  processorIdleMs: 30_000,
  ephemeralRetentionMs: 600_000,
  ephemeralRetentionCount: 10_000,
} as const;
