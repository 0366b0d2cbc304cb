/**
 * The Node.js host: composition root for `rivulet serve`. Embedded SQLite (better-sqlite3, WAL,
 * group commit) under the data folder, the shared Hono app on node:http, timers from Node.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { Defaults } from '@rivulet/contract';
import { SqliteStorage, type Durability } from '../../adapters/sqlite/sqlite-storage.js';
import { defaultEngineConfig, type EngineConfig } from '../../engine/config.js';
import { composeEngine, localDirectory } from '../../engine/compose.js';
import { createServerMetrics, type ServerMetrics } from '../../engine/metrics.js';
import { FORMAT_VERSION, openSchema } from '../../engine/schema.js';
import type { LocalStreamService } from '../../engine/service.js';
import { ErasedPurger } from './purge.js';
import { backupBeforeUpgrade } from './upgrade.js';
import { Backups, removeBackupLeftovers } from './backup.js';
import { createApp } from '../../http/app.js';
import { composeRequestHooks, metricsHook } from '../../http/request-hooks.js';
import { checkCorsConfig, corsHook, type CorsConfig } from '../../http/cors.js';
import { parseTokensFile } from '../../http/auth.js';
import type { ErrorLogger } from '../../http/errors.js';
import { requestLogHook } from '../../http/request-log.js';
import type { LogLevel } from '../../ports/logger.js';
import { createNodeLogger, type LogFormat } from './logger.js';
import { copyReceiver } from '../../engine/receivers/copy.js';
import { nodeAlarms } from './alarms.js';
import { eventLoopDelay, nodeMetrics } from './node-metrics.js';
import { DEFAULT_READ_CACHE_BYTES, ReadCache } from '../../engine/read-cache.js';
import type { HostResolver, WebhookProxy } from './outbound.js';
import { nodeWebhooks } from './webhooks.js';
import { enableRegexpFallback } from './regexp-fallback.js';
import { tunePretenuring } from './pretenuring.js';
import { releaseAfterSweep } from './heap-release.js';
import { loadWebhookSecret } from './webhook-secret.js';
import { attachRpc } from './rpc.js';
import { CallableRegistry } from '../../engine/itx/worker-registry.js';
import { ItxRoot, type ItxDeps } from '../../rpc/root.js';
import { rootItx } from '../../rpc/itx-port.js';
import { itxCallReceiver, processorWakeReceiver } from '../../engine/receivers/itx.js';
import { SessionClosers } from '../../rpc/session-closers.js';
import { nodeAssets } from './assets.js';
import { DEFAULT_LONG_POLL_TIMEOUT_MS, durableStreams } from '../../http/durable-streams/routes.js';
import { nodeEntrances } from './entrances.js';
import { nodeReadiness } from './readiness.js';
import { systemClock, systemRandom, type Clock, type Random } from '../../ports/clock.js';
import { systemTimer } from '../../ports/timer.js';
import { DATABASE_FILE, lockDataFolder } from './data-lock.js';
import { isLoopbackHost } from './loopback.js';
import { VERSION } from '../../version.js';

export { checkWebhookSecret, readStoredWebhookSecret } from './webhook-secret.js';
export { compactDataFolder, type CompactReport } from './compact.js';
export { checkCorsConfig, parseCorsOrigins, type CorsConfig } from '../../http/cors.js';
export { VERSION, FORMAT_VERSION, DEFAULT_READ_CACHE_BYTES };
export { checkBackupFile, restoreDataFolder, type BackupFileReport, type RestoreOptions } from './restore.js';
export { createNodeLogger, isLogFormat, isLogLevel, DEFAULT_LOG_LEVEL, type LogFormat } from './logger.js';
export { DEFAULT_LOG_SLOW_MS } from '../../http/request-log.js';

export interface NodeServerOptions extends Partial<EngineConfig> {
  port?: number;
  host?: string;
  data?: string;
  /** Path of a tokens file ("TOKEN PROJECT_ID" lines). */
  tokensFile?: string;
  /** Tokens given directly (tests); wins over tokensFile. */
  tokens?: ReadonlyMap<string, string>;
  durability?: Durability;
  maxBodyBytes?: number;
  /** Where lines go; default a pino logger (logger.ts) of `logLevel` and `logFormat`. */
  logger?: ErrorLogger;
  /** The default logger's level (default info; docs/operations.md, "Logs"). */
  logLevel?: LogLevel;
  /** The default logger's format (default pretty on a terminal, else json). */
  logFormat?: LogFormat;
  /** Requests answered after this many ms are logged at warn (default 1000; 0: never). */
  logSlowMs?: number;
  clock?: Clock;
  random?: Random;
  /** The web UI's built files (default: packages/ui/dist of this checkout). */
  uiDir?: string;
  /** `whsec_<base64 key>`; default: the one stored under the data folder, generated on first start. */
  webhookSecret?: string;
  /** How webhook host names resolve (tests; default node:dns). */
  webhookResolver?: HostResolver;
  /** An egress proxy for webhooks (`--webhook-proxy`, HTTP_PROXY/HTTPS_PROXY/NO_PROXY; protocol §17.4). */
  webhookProxy?: WebhookProxy;
  /** How long an idle keep-alive connection stays open (node:http's `keepAliveTimeout`, default 5 s). */
  keepAliveTimeoutMs?: number;
  /** How long a request's head may take to arrive (node:http's `headersTimeout`, default 60 s). */
  headersTimeoutMs?: number;
  /** How long `close()` waits for requests in flight to be answered before it cuts them (default 10 s; protocol §16.9). */
  shutdownGraceMs?: number;
  /** Cross-origin requests (protocol §1.4; `--cors-origin`): off without it. */
  cors?: CorsConfig;
  /** How long a Durable Streams long-poll waits before answering 204 (`--long-poll-timeout-ms`; docs/durable-streams.md). */
  longPollTimeoutMs?: number;
  /** Memory for event texts of pages read again (`--read-cache-mb`; docs/architecture.md "Storage", the read cache); 0 turns it off. */
  readCacheBytes?: number;
  /** Free bytes under the data folder, for `/readyz` (tests; default statfs). */
  freeBytes?(dir: string): number;
}

/** The default of `shutdownGraceMs` (`--shutdown-grace-ms`). */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;

/**
 * The web UI's built files: `dist/ui` of this package when it was built or installed (the build copies
 * the UI there, so an installed @rivulet/server serves it), else packages/ui/dist of the checkout.
 */
function defaultUiDir(): string {
  const candidates = [new URL('../../ui/', import.meta.url), new URL('../../../../ui/dist/', import.meta.url)].map((u) => fileURLToPath(u));
  return candidates.find((dir) => existsSync(join(dir, 'index.html'))) ?? candidates[0]!;
}

export interface RunningServer {
  url: string;
  port: number;
  host: string;
  dataDir: string;
  metrics: ServerMetrics;
  service: LocalStreamService;
  /** Workers registered over RPC (for tests and diagnostics). */
  workers: CallableRegistry;
  /** Processor hosts registered over RPC (for tests and diagnostics). */
  processors: CallableRegistry;
  /** Open RPC sessions. */
  readonly rpcSessions: number;
  /** Destroyed lifetimes' rows are still being deleted in the background (diagnostics, tests). */
  readonly erasing: boolean;
  /** The connection front (node-front.ts): connections it still reads, and those handed to node:http. */
  readonly front: { readonly connections: number; readonly handedOver: number };
  close(): Promise<void>;
}

function loadTokens(options: NodeServerOptions): ReadonlyMap<string, string> | null {
  if (options.tokens) return options.tokens;
  if (options.tokensFile) return parseTokensFile(readFileSync(options.tokensFile, 'utf8'), options.tokensFile);
  return null;
}

export async function startNodeServer(options: NodeServerOptions = {}): Promise<RunningServer> {
  enableRegexpFallback();
  tunePretenuring();
  const host = options.host ?? Defaults.host;
  const port = options.port ?? Defaults.port;
  const tokens = loadTokens(options);
  if (!tokens && !isLoopbackHost(host)) {
    throw new Error(
      `refusing to listen on ${host} without tokens: anyone who can reach it would be admin. ` +
        'Pass --tokens FILE (lines "TOKEN PROJECT_ID") or listen on 127.0.0.1.',
    );
  }
  const cors = options.cors !== undefined && options.cors.origins.length > 0 ? options.cors : undefined;
  if (cors) checkCorsConfig(cors, tokens !== null);
  const logger = options.logger ?? createNodeLogger({ level: options.logLevel, format: options.logFormat });
  const dataDir = resolve(options.data ?? Defaults.data);
  mkdirSync(dataDir, { recursive: true });
  const unlock = lockDataFolder(dataDir);
  let storage: SqliteStorage | undefined;
  let webhookSecret: string;
  const metrics = createServerMetrics(undefined, { version: VERSION });
  // Read at scrape time, once the RPC endpoint is attached below.
  const readCacheBytes = options.readCacheBytes ?? DEFAULT_READ_CACHE_BYTES;
  const readCache = readCacheBytes > 0 ? new ReadCache(readCacheBytes) : undefined;
  const delay = eventLoopDelay();
  const onCommit = nodeMetrics(metrics, { databaseFile: join(dataDir, DATABASE_FILE), rpcSessions: () => rpc.sessions, readCache });
  try {
    webhookSecret = loadWebhookSecret(dataDir, options.webhookSecret);
    // A worker thread checkpoints the WAL (docs/architecture.md "Checkpoints in the background"); if it fails, the commits do.
    // The process holds the file's lock: other programs cannot open it while the server runs.
    const onFailure = (reason: string) => logger.warn?.('checkpoints: the worker failed; the commits checkpoint the WAL again', { reason });
    storage = new SqliteStorage(join(dataDir, DATABASE_FILE), { durability: options.durability ?? 'full', processLock: true, backgroundCheckpoints: { onFailure }, onCommit });
    if (!storage.processLocked) logger.warn?.('storage: the database is opened with shared locking (SQLite could not open it through the unix-excl VFS: URI filenames are off in this process, or the platform lacks that VFS): other programs can open it while the server runs');
    // An older format is upgraded in place after a copy is kept (protocol §16.4).
    openSchema(storage, { beforeUpgrade: backupBeforeUpgrade(storage, dataDir, logger) });
  } catch (error) {
    await storage?.closeFully();
    unlock();
    throw error;
  }

  const config: EngineConfig = {
    ...defaultEngineConfig,
    allowPrivateWebhooks: options.allowPrivateWebhooks ?? tokens === null,
  };
  for (const key of Object.keys(defaultEngineConfig) as (keyof EngineConfig)[]) {
    const value = options[key];
    if (value !== undefined) (config as unknown as Record<string, unknown>)[key] = value;
  }
  // Calls are timed in memory here; the stored watchdog only has to cover them (protocol §12.7).
  if (options.watchdogLeaseMs === undefined) config.watchdogLeaseMs = config.deliveryTimeoutMs;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  // Destroyed lifetimes' events are deleted in chunks between requests (StreamStore.purgeErased).
  const purger = new ErasedPurger(() => engine.store, (message, error) => logger.error(message, error));
  const workers = new CallableRegistry('worker');
  const processors = new CallableRegistry('processor');
  // The service is composed below; the ITX root reaches it lazily (deliveries start after start-up).
  const itxDeps: ItxDeps = {
    get service() {
      return service;
    },
    workers,
    processors,
    sessions: new SessionClosers(),
  };
  const webhooks = nodeWebhooks({
    secret: webhookSecret,
    allowPrivate: config.allowPrivateWebhooks,
    clock,
    resolve: options.webhookResolver,
    proxy: options.webhookProxy,
    metrics: metrics.registry,
  });
  const itx = rootItx((projectId) => new ItxRoot({ projectId, sessionId: null, deps: itxDeps }));
  // Every stream lives in this one database: copies reach the receiving actor in-process.
  const engine = composeEngine({
    storage,
    alarms: nodeAlarms,
    timer: systemTimer,
    clock,
    random,
    config,
    metrics,
    logger,
    store: { onDeferredErase: () => purger.schedule(), ...(readCache ? { readCache } : {}) },
    receivers: {
      'copy-to-stream': copyReceiver(localDirectory(() => engine.registry)),
      'itx-call': itxCallReceiver(itx),
      'webhook-post': webhooks.receiver,
    },
    processorWaker: processorWakeReceiver(itx),
    // Quiet streams leave memory after 30–60 s unused (architecture.md, "Actors come and go").
    actorIdleSweepMs: 30_000,
    // What a large sweep dropped is collected at once, not whenever V8 next needs room (heap-release.ts).
    afterActorSweep: releaseAfterSweep(),
  });
  const { delivery, service } = engine;
  // Online backups through the server's own connection (backup.ts, protocol §15.5).
  removeBackupLeftovers(dataDir);
  const backups = new Backups(storage, dataDir, FORMAT_VERSION);
  // A processor host that (re)registers wakes what waited for it, without waiting out the backoff.
  processors.onRegistered((projectId) => delivery.processorHostRegistered(projectId));
  let ready = false;
  let storageOpen = true;
  /** Aborted when close() begins: live SSE answers end cleanly. */
  const stopping = new AbortController();
  // Every entrance (the app, the native append path, the front) reports to the same hooks.
  const hooks = composeRequestHooks(
    [metricsHook(metrics), requestLogHook(logger, { slowMs: options.logSlowMs }), ...(cors ? [corsHook(cors)] : [])],
    logger,
  );
  const maxBodyBytes = options.maxBodyBytes ?? Defaults.maxBodyBytes;
  // One Durable Streams layer for the app and the fast append paths below (they share its state).
  const durable = durableStreams({
    service,
    tokens,
    maxBodyBytes,
    longPollTimeoutMs: options.longPollTimeoutMs ?? DEFAULT_LONG_POLL_TIMEOUT_MS,
    logger,
    stopping: stopping.signal,
    hooks,
    batchWrites: true,
  });
  const app = createApp({
    service,
    tokens,
    metrics,
    maxBodyBytes,
    version: VERSION,
    logger,
    ready: () => ready,
    readiness: nodeReadiness({ dataDir, running: () => ready, storageOpen: () => storageOpen, storageFailure: () => storage.failure?.message ?? null, ...(options.freeBytes ? { freeBytes: options.freeBytes } : {}) }),
    stopping: stopping.signal,
    durableStreams: durable,
    assets: nodeAssets(options.uiDir ?? defaultUiDir()),
    hooks,
    backup: () => backups.snapshot(),
  });

  const { server, http, front } = nodeEntrances({
    fetch: app.fetch,
    service,
    tokens,
    maxBodyBytes,
    logger,
    hooks,
    durable,
    hostname: host,
    keepAliveTimeoutMs: options.keepAliveTimeoutMs,
    headersTimeoutMs: options.headersTimeoutMs,
    metrics: metrics.registry,
    // A request wakes the event-loop delay monitor that an idle period paused (node-metrics.ts).
    onRequest: () => delay.busy(),
  });
  const rpc = attachRpc(server, { tokens, deps: itxDeps, logger, ready: () => ready });
  await new Promise<void>((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolvePromise();
    });
  });
  const address = server.address() as AddressInfo;
  ready = true;
  // Owed deliveries resume after a restart without any new append (protocol §12.2).
  engine.resumeDeliveries();
  // Erasures a previous run left unfinished go on.
  purger.schedule();
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${urlHost}:${address.port}`;
  const durability = options.durability ?? 'full';
  const mode = tokens ? 'tokens' : 'open';
  logger.info?.(`rivulet listening on ${url} (data ${dataDir}, durability ${durability}, ${mode === 'open' ? 'open mode' : 'tokens'})`, {
    version: VERSION,
    url,
    data: dataDir,
    durability,
    mode,
  });

  let closing: Promise<void> | undefined;
  return {
    url,
    port: address.port,
    host,
    dataDir,
    metrics,
    service,
    workers,
    processors,
    get rpcSessions() {
      return rpc.sessions;
    },
    get erasing() {
      return purger.active;
    },
    front,
    close() {
      // The shutdown sequence of protocol §16.9.
      closing ??= (async () => {
        const started = performance.now();
        const deadline = started + (options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS);
        ready = false; // /healthz answers 503 and RPC upgrades are refused from here on
        http.stopListening();
        logger.info?.('shutdown: not ready, listener closed', { inFlight: http.inFlight, frontConnections: front.connections });
        stopping.abort(); // live SSE answers end; their readers reconnect to the next server
        rpc.close(); // RPC sessions get a close frame (1001)
        // Live connections and waits end now (waitForEvent answers at once) and record their close
        // while storage is still there (protocol §19.4); then what is in flight is answered.
        await service.connections.closeAll('server-stopped');
        await Promise.all([front.drain(deadline), http.drain(deadline)]);
        if (performance.now() >= deadline) logger.warn?.('shutdown: the grace period is over, cutting what is still open', { inFlight: http.inFlight });
        else logger.info?.('shutdown: requests in flight answered');
        await service.connections.closeAll('server-stopped');
        rpc.terminate();
        engine.registry.close();
        delivery.close();
        await webhooks.close();
        logger.info?.('shutdown: delivery stopped');
        purger.stop();
        front.close();
        // Whatever is still open (past the grace period) is cut; the listener closed at the start.
        server.closeAllConnections();
        await http.closed;
        await storage.flush().catch(() => undefined);
        storageOpen = false;
        await storage.closeFully();
        unlock();
        logger.info?.('shutdown: stopped (storage closed, data folder unlocked)', { durationMs: Math.round(performance.now() - started) });
      })();
      return closing;
    },
  };
}
