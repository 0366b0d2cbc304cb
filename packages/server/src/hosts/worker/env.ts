/**
 * The Worker host's bindings and configuration (wrangler.jsonc): the Durable Object namespaces,
 * secrets (`wrangler secret put`) and plain variables, read into the same EngineConfig the Node
 * host builds from its flags (protocol §16.1). Names of Durable Objects live here too, so that every
 * caller names an object the same way.
 */
import { Defaults, RivuletError } from '@rivulet/contract';
import { defaultEngineConfig, type EngineConfig } from '../../engine/config.js';
import { parseTokensFile, type TokenTable } from '../../http/auth.js';
import { checkCorsConfig, parseCorsOrigins, type CorsConfig } from '../../http/cors.js';
import { DEFAULT_LOG_SLOW_MS } from '../../http/request-log.js';
import type { HubObjectApi, IndexObjectApi, StreamObjectApi } from './api.js';

/** What a Durable Object namespace binding offers the host (developers.cloudflare.com, namespace API). */
export interface DoNamespace<T> {
  getByName(name: string): T;
}

export interface WorkerEnv {
  /** One Durable Object per stream, named by streamObjectName. */
  STREAMS: DoNamespace<StreamObjectApi>;
  /** One Durable Object per project: the stream listing. */
  STREAM_INDEX: DoNamespace<IndexObjectApi>;
  /** One Durable Object per project: RPC sessions, registered workers, itx-call. */
  RPC_HUB: DoNamespace<HubObjectApi>;
  /** Secret: the tokens file's text, lines "TOKEN PROJECT_ID". */
  RIVULET_TOKENS?: string;
  /** "true" serves without tokens (every caller is admin): local development and tests only. */
  RIVULET_OPEN?: string;
  /** Secret: `whsec_<base64 key>`; webhook-post deliveries are unavailable without it. */
  RIVULET_WEBHOOK_SECRET?: string;
  RIVULET_ALLOW_PRIVATE_WEBHOOKS?: string;
  RIVULET_MAX_DELIVERY_ATTEMPTS?: string;
  RIVULET_RETRY_BASE_MS?: string;
  RIVULET_RETRY_MAX_MS?: string;
  RIVULET_DELIVERY_TIMEOUT_MS?: string;
  RIVULET_PROCESSOR_IDLE_MS?: string;
  RIVULET_EXPRESSION_TIME_MS?: string;
  RIVULET_EXPRESSION_MEMORY_BYTES?: string;
  RIVULET_LAGGING_AFTER_MS?: string;
  RIVULET_DELIVERY_ATTEMPTS_KEPT?: string;
  RIVULET_MAX_EVENT_BYTES?: string;
  RIVULET_MAX_BODY_BYTES?: string;
  /** How long a Durable Streams long-poll waits (docs/durable-streams.md "Long-poll"). */
  RIVULET_LONG_POLL_TIMEOUT_MS?: string;
  RIVULET_MAX_CORE_STATE_BYTES?: string;
  RIVULET_EPHEMERAL_RETENTION_COUNT?: string;
  /** Origins answered cross-origin, comma-separated, or `*` (protocol §1.4; `--cors-origin`). */
  RIVULET_CORS_ORIGIN?: string;
  /** "true" allows RIVULET_CORS_ORIGIN `*` although tokens are configured. */
  RIVULET_CORS_ALLOW_ANY_ORIGIN_WITH_TOKENS?: string;
  /** error, warn, info (default) or debug (docs/operations.md, "Logs"). */
  RIVULET_LOG_LEVEL?: string;
  /** Requests answered after this many ms are logged at warn (default 1000; "0": never). */
  RIVULET_LOG_SLOW_MS?: string;
}

export const streamObjectName = (projectId: string | null, path: string): string => JSON.stringify([projectId, path]);
export const projectObjectName = (projectId: string | null): string => JSON.stringify([projectId]);

function int(env: WorkerEnv, key: keyof WorkerEnv, fallback: number): number {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${key} must be a positive integer, got "${String(raw)}"`);
  return n;
}

function bool(env: WorkerEnv, key: keyof WorkerEnv): boolean | undefined {
  const raw = env[key];
  if (raw === undefined || raw === '') return undefined;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new Error(`${key} must be "true" or "false", got "${String(raw)}"`);
}

export function tokensOf(env: WorkerEnv): TokenTable | null {
  return env.RIVULET_TOKENS ? parseTokensFile(env.RIVULET_TOKENS, 'RIVULET_TOKENS') : null;
}

/** Open mode must be asked for: a Worker is public, and without tokens every caller is admin. */
export function openModeRefusal(env: WorkerEnv): string | null {
  if (env.RIVULET_TOKENS || bool(env, 'RIVULET_OPEN') === true) return null;
  return 'this deployment has no tokens: set them with `wrangler secret put RIVULET_TOKENS` (lines "TOKEN PROJECT_ID"), or set RIVULET_OPEN = "true" for local development only';
}

/**
 * CORS from RIVULET_CORS_ORIGIN, or undefined without it. A setting that cannot be served makes
 * every request `UNAVAILABLE`, naming the variable, as the flag makes `rivulet serve` refuse to start.
 */
export function corsOf(env: WorkerEnv): CorsConfig | undefined {
  const origins = env.RIVULET_CORS_ORIGIN;
  if (origins === undefined || origins === '') return undefined;
  try {
    const cors = { origins: parseCorsOrigins(origins), allowAnyOriginWithTokens: bool(env, 'RIVULET_CORS_ALLOW_ANY_ORIGIN_WITH_TOKENS') === true };
    checkCorsConfig(cors, Boolean(env.RIVULET_TOKENS));
    return cors;
  } catch (error) {
    throw new RivuletError('UNAVAILABLE', `RIVULET_CORS_ORIGIN: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * One SQLite row of a Durable Object holds at most 2 MB (string, blob or whole row): an event is
 * one row, a stream's state another, so neither limit may come near it.
 */
const MAX_ROW_VALUE_BYTES = 1_900_000;

function rowBound(env: WorkerEnv, key: 'RIVULET_MAX_EVENT_BYTES' | 'RIVULET_MAX_CORE_STATE_BYTES', fallback: number): number {
  const n = int(env, key, fallback);
  if (n > MAX_ROW_VALUE_BYTES) {
    throw new Error(`${key} may be at most ${MAX_ROW_VALUE_BYTES} on Cloudflare: a Durable Object's SQLite row holds at most 2 MB`);
  }
  return n;
}

export function engineConfigOf(env: WorkerEnv): EngineConfig {
  const open = !env.RIVULET_TOKENS;
  return {
    ...defaultEngineConfig,
    maxEventBytes: rowBound(env, 'RIVULET_MAX_EVENT_BYTES', defaultEngineConfig.maxEventBytes),
    maxCoreStateBytes: rowBound(env, 'RIVULET_MAX_CORE_STATE_BYTES', defaultEngineConfig.maxCoreStateBytes),
    ephemeralRetentionCount: int(env, 'RIVULET_EPHEMERAL_RETENTION_COUNT', defaultEngineConfig.ephemeralRetentionCount),
    maxDeliveryAttempts: int(env, 'RIVULET_MAX_DELIVERY_ATTEMPTS', defaultEngineConfig.maxDeliveryAttempts),
    retryBaseMs: int(env, 'RIVULET_RETRY_BASE_MS', defaultEngineConfig.retryBaseMs),
    retryMaxMs: int(env, 'RIVULET_RETRY_MAX_MS', defaultEngineConfig.retryMaxMs),
    deliveryTimeoutMs: int(env, 'RIVULET_DELIVERY_TIMEOUT_MS', defaultEngineConfig.deliveryTimeoutMs),
    processorIdleMs: int(env, 'RIVULET_PROCESSOR_IDLE_MS', defaultEngineConfig.processorIdleMs),
    expressionTimeMs: int(env, 'RIVULET_EXPRESSION_TIME_MS', defaultEngineConfig.expressionTimeMs),
    expressionMemoryBytes: int(env, 'RIVULET_EXPRESSION_MEMORY_BYTES', defaultEngineConfig.expressionMemoryBytes),
    laggingAfterMs: int(env, 'RIVULET_LAGGING_AFTER_MS', defaultEngineConfig.laggingAfterMs),
    deliveryAttemptsKept: int(env, 'RIVULET_DELIVERY_ATTEMPTS_KEPT', defaultEngineConfig.deliveryAttemptsKept),
    allowPrivateWebhooks: bool(env, 'RIVULET_ALLOW_PRIVATE_WEBHOOKS') ?? open,
  };
}

/** RIVULET_LOG_SLOW_MS: a whole number of ms, 0 turning slow-request lines off. */
export function logSlowMsOf(env: WorkerEnv): number {
  const raw = env.RIVULET_LOG_SLOW_MS;
  if (raw === undefined || raw === '') return DEFAULT_LOG_SLOW_MS;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n)) throw new Error(`RIVULET_LOG_SLOW_MS must be a whole number of milliseconds, got "${raw}"`);
  return n;
}

export function maxBodyBytesOf(env: WorkerEnv): number {
  return int(env, 'RIVULET_MAX_BODY_BYTES', Defaults.maxBodyBytes);
}

/** `RIVULET_LONG_POLL_TIMEOUT_MS`, or undefined for the app's default. */
export function longPollTimeoutOf(env: WorkerEnv): number | undefined {
  return env.RIVULET_LONG_POLL_TIMEOUT_MS === undefined ? undefined : int(env, 'RIVULET_LONG_POLL_TIMEOUT_MS', 0);
}
