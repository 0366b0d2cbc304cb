/** `rivulet serve`: start the server on embedded SQLite (protocol §16.1). */
import { Defaults } from '@rivulet/contract';
import type * as NodeHost from '@rivulet/server/node';
import { boolOption, intOption, parse, UsageError, type Command } from '../command.js';
import { webhookProxy } from './webhook-proxy.js';

const usage = `Usage: rivulet serve [options]

Starts the Rivulet server on embedded SQLite. Every option can also be set by its environment variable.

Options:
  --port N                     listen port (RIVULET_PORT, default ${Defaults.port})
  --host ADDR                  listen address (RIVULET_HOST, default ${Defaults.host})
  --data DIR                   data folder (RIVULET_DATA, default ${Defaults.data})
  --tokens FILE                tokens file, lines "TOKEN PROJECT_ID" (RIVULET_TOKENS); required off loopback
  --durability full|relaxed    full: fsync before answering (survives power loss, default);
                               relaxed: survives a process crash, not a power loss (RIVULET_DURABILITY)
  --max-event-bytes N          largest event as JSON (RIVULET_MAX_EVENT_BYTES, default ${Defaults.maxEventBytes})
  --max-body-bytes N           largest request body (RIVULET_MAX_BODY_BYTES, default ${Defaults.maxBodyBytes})
  --max-delivery-attempts N    failures before a subscription halts (RIVULET_MAX_DELIVERY_ATTEMPTS, default ${Defaults.maxDeliveryAttempts})
  --retry-base-ms N            first retry delay (RIVULET_RETRY_BASE_MS, default ${Defaults.retryBaseMs})
  --retry-max-ms N             longest retry delay (RIVULET_RETRY_MAX_MS, default ${Defaults.retryMaxMs})
  --delivery-timeout-ms N      per receiver call (RIVULET_DELIVERY_TIMEOUT_MS, default ${Defaults.deliveryTimeoutMs})
  --processor-idle-ms N        close a caught-up hosted processor connection after this long without a batch
                               (RIVULET_PROCESSOR_IDLE_MS, default ${Defaults.processorIdleMs})
  --expression-time-ms N       time budget of one JSONata evaluation (RIVULET_EXPRESSION_TIME_MS, default 10)
  --expression-memory-bytes N  memory budget of one JSONata evaluation, estimated
                               (RIVULET_EXPRESSION_MEMORY_BYTES, default 33554432)
  --lagging-after-ms N         a subscription owing an event older than this is "lagging" in the listing
                               (RIVULET_LAGGING_AFTER_MS, default 60000)
  --delivery-attempts-kept N   delivery attempts kept per subscription (RIVULET_DELIVERY_ATTEMPTS_KEPT, default 50)
  --allow-private-webhooks     let webhooks reach loopback, private, link-local and metadata addresses
                               (RIVULET_ALLOW_PRIVATE_WEBHOOKS=true|false; default true in open mode, false with tokens)
  --webhook-secret SECRET      signs webhooks, whsec_<base64 key of 24-64 bytes> (RIVULET_WEBHOOK_SECRET;
                               default: generated once and stored in DATA/webhook-secret, see rivulet webhook-secret)
  --webhook-proxy URL          send webhooks through this http:// or https:// proxy (CONNECT tunnels to the vetted
                               address; RIVULET_WEBHOOK_PROXY; default: HTTP_PROXY / HTTPS_PROXY; NO_PROXY hosts go direct)
  --shutdown-grace-ms N        on SIGTERM or SIGINT, how long requests in flight get to be answered before
                               they are cut (RIVULET_SHUTDOWN_GRACE_MS, default 10000); a second signal cuts at once
  --cors-origin ORIGIN[,…]     answer cross-origin requests from these origins (scheme://host[:port]), or *
                               (RIVULET_CORS_ORIGIN; default: none, no CORS); * with --tokens needs the next flag
  --cors-allow-any-origin-with-tokens
                               allow --cors-origin * although tokens are configured: any web page may then call
                               the server with a token it holds (RIVULET_CORS_ALLOW_ANY_ORIGIN_WITH_TOKENS)
  --log-level LEVEL            error, warn, info or debug (RIVULET_LOG_LEVEL, default info): info adds start,
                               shutdown, subscription halts, resumes, cursor sets, skips, drops and destroys
  --log-format json|pretty     json: one JSON object per line, for a log collector; pretty: readable lines
                               (RIVULET_LOG_FORMAT; default pretty on a terminal, json otherwise)
  --log-slow-ms N              log requests slower than N ms at warn (RIVULET_LOG_SLOW_MS, default 1000; 0: never)
  --long-poll-timeout-ms N     how long a Durable Streams long-poll waits before answering 204
                               (RIVULET_LONG_POLL_TIMEOUT_MS, default 30000)
  --read-cache-mb N            memory for the events of pages read again, so that they are answered without
                               SQL (RIVULET_READ_CACHE_MB, default 128; 0: off)
  -h, --help                   show this help

Logs go to standard output. Refused requests worth seeing (bad credentials, limits, invalid input)
are logged at warn, at most 20 lines a second; the next line says how many were suppressed.`;

const MIB = 1024 * 1024;
/** `--read-cache-mb` at most: 1 TiB, far beyond any machine's memory, but a typo like 1e12 is refused. */
const MAX_READ_CACHE_MB = 1024 * 1024;

type ServerModule = Pick<typeof NodeHost, 'parseCorsOrigins' | 'checkCorsConfig'>;

/** `--cors-origin` with its companion flag, checked before anything starts (a usage error, exit 2). */
function corsOption(origins: string | undefined, anyWithTokens: string | boolean | undefined, tokens: boolean, nodeHost: ServerModule) {
  const allowAnyOriginWithTokens = boolOption('--cors-allow-any-origin-with-tokens', anyWithTokens, false);
  if (origins === undefined || origins === '') {
    if (allowAnyOriginWithTokens) throw new UsageError('--cors-allow-any-origin-with-tokens needs --cors-origin *');
    return undefined;
  }
  try {
    const cors = { origins: nodeHost.parseCorsOrigins(origins), allowAnyOriginWithTokens };
    nodeHost.checkCorsConfig(cors, tokens);
    return cors;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

export const serveCommand: Command = {
  name: 'serve',
  summary: 'start the server on embedded SQLite',
  usage,
  async run(argv, io) {
    const { values, positionals } = parse(argv, {
      port: { type: 'string' },
      host: { type: 'string' },
      data: { type: 'string' },
      tokens: { type: 'string' },
      durability: { type: 'string' },
      'max-event-bytes': { type: 'string' },
      'max-body-bytes': { type: 'string' },
      'max-delivery-attempts': { type: 'string' },
      'retry-base-ms': { type: 'string' },
      'retry-max-ms': { type: 'string' },
      'delivery-timeout-ms': { type: 'string' },
      'processor-idle-ms': { type: 'string' },
      'expression-time-ms': { type: 'string' },
      'expression-memory-bytes': { type: 'string' },
      'lagging-after-ms': { type: 'string' },
      'delivery-attempts-kept': { type: 'string' },
      'allow-private-webhooks': { type: 'boolean' },
      'webhook-secret': { type: 'string' },
      'webhook-proxy': { type: 'string' },
      'shutdown-grace-ms': { type: 'string' },
      'cors-origin': { type: 'string' },
      'cors-allow-any-origin-with-tokens': { type: 'boolean' },
      'log-level': { type: 'string' },
      'log-format': { type: 'string' },
      'log-slow-ms': { type: 'string' },
      'long-poll-timeout-ms': { type: 'string' },
      'read-cache-mb': { type: 'string' },
    });
    if (values.help) {
      io.out(usage);
      return 0;
    }
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    const env = io.env;
    const pick = (flag: keyof typeof values, variable: string) => (values[flag] as string | undefined) ?? env[variable];
    const durability = pick('durability', 'RIVULET_DURABILITY') ?? 'full';
    if (durability !== 'full' && durability !== 'relaxed') {
      throw new UsageError(`--durability must be "full" or "relaxed", got "${durability}"`);
    }
    const tokensFile = pick('tokens', 'RIVULET_TOKENS');
    const allowPrivate = values['allow-private-webhooks'] ?? env.RIVULET_ALLOW_PRIVATE_WEBHOOKS;
    const webhookSecret = pick('webhook-secret', 'RIVULET_WEBHOOK_SECRET') || undefined;
    const proxy = webhookProxy(values['webhook-proxy'], env);
    // The expression budgets default in the engine (protocol §16.8): only what is given is passed.
    const expressionTime = pick('expression-time-ms', 'RIVULET_EXPRESSION_TIME_MS') || undefined;
    const expressionMemory = pick('expression-memory-bytes', 'RIVULET_EXPRESSION_MEMORY_BYTES') || undefined;
    // Loaded here, not at the top: the other commands should not pay for SQLite and the HTTP stack.
    const nodeHost = await import('@rivulet/server/node');
    const { startNodeServer, createNodeLogger, isLogFormat, isLogLevel, DEFAULT_SHUTDOWN_GRACE_MS, DEFAULT_LOG_LEVEL, DEFAULT_LOG_SLOW_MS, DEFAULT_READ_CACHE_BYTES } = nodeHost;
    const cors = corsOption(pick('cors-origin', 'RIVULET_CORS_ORIGIN'), values['cors-allow-any-origin-with-tokens'] ?? env.RIVULET_CORS_ALLOW_ANY_ORIGIN_WITH_TOKENS, tokensFile !== undefined && tokensFile !== '', nodeHost);
    const logLevel = pick('log-level', 'RIVULET_LOG_LEVEL') || DEFAULT_LOG_LEVEL;
    if (!isLogLevel(logLevel)) throw new UsageError(`--log-level must be "error", "warn", "info" or "debug", got "${logLevel}"`);
    const logFormat = pick('log-format', 'RIVULET_LOG_FORMAT') || undefined;
    if (logFormat !== undefined && !isLogFormat(logFormat)) throw new UsageError(`--log-format must be "json" or "pretty", got "${logFormat}"`);
    const logSlowMs = intOption('--log-slow-ms', pick('log-slow-ms', 'RIVULET_LOG_SLOW_MS'), DEFAULT_LOG_SLOW_MS, 0);
    const logger = createNodeLogger({ level: logLevel, format: logFormat });
    const shutdownGraceMs = intOption('--shutdown-grace-ms', pick('shutdown-grace-ms', 'RIVULET_SHUTDOWN_GRACE_MS'), DEFAULT_SHUTDOWN_GRACE_MS, 0);
    const server = await startNodeServer({
      port: intOption('--port', pick('port', 'RIVULET_PORT'), Defaults.port),
      host: pick('host', 'RIVULET_HOST') ?? Defaults.host,
      data: pick('data', 'RIVULET_DATA') ?? Defaults.data,
      ...(tokensFile ? { tokensFile } : {}),
      ...(cors ? { cors } : {}),
      ...(webhookSecret !== undefined ? { webhookSecret } : {}),
      ...(proxy ? { webhookProxy: proxy } : {}),
      ...(allowPrivate !== undefined ? { allowPrivateWebhooks: boolOption('--allow-private-webhooks', allowPrivate, false) } : {}),
      durability,
      maxEventBytes: intOption('--max-event-bytes', pick('max-event-bytes', 'RIVULET_MAX_EVENT_BYTES'), Defaults.maxEventBytes, 1),
      maxBodyBytes: intOption('--max-body-bytes', pick('max-body-bytes', 'RIVULET_MAX_BODY_BYTES'), Defaults.maxBodyBytes, 1),
      maxDeliveryAttempts: intOption(
        '--max-delivery-attempts',
        pick('max-delivery-attempts', 'RIVULET_MAX_DELIVERY_ATTEMPTS'),
        Defaults.maxDeliveryAttempts,
        1,
      ),
      retryBaseMs: intOption('--retry-base-ms', pick('retry-base-ms', 'RIVULET_RETRY_BASE_MS'), Defaults.retryBaseMs, 1),
      retryMaxMs: intOption('--retry-max-ms', pick('retry-max-ms', 'RIVULET_RETRY_MAX_MS'), Defaults.retryMaxMs, 1),
      deliveryTimeoutMs: intOption(
        '--delivery-timeout-ms',
        pick('delivery-timeout-ms', 'RIVULET_DELIVERY_TIMEOUT_MS'),
        Defaults.deliveryTimeoutMs,
        1,
      ),
      shutdownGraceMs,
      logger,
      logSlowMs,
      longPollTimeoutMs: intOption('--long-poll-timeout-ms', pick('long-poll-timeout-ms', 'RIVULET_LONG_POLL_TIMEOUT_MS'), 30_000, 1),
      readCacheBytes: intOption('--read-cache-mb', pick('read-cache-mb', 'RIVULET_READ_CACHE_MB'), DEFAULT_READ_CACHE_BYTES / MIB, 0, MAX_READ_CACHE_MB) * MIB,
      processorIdleMs: intOption('--processor-idle-ms', pick('processor-idle-ms', 'RIVULET_PROCESSOR_IDLE_MS'), Defaults.processorIdleMs, 1),
      ...(expressionTime !== undefined ? { expressionTimeMs: intOption('--expression-time-ms', expressionTime, 0, 1) } : {}),
      ...(expressionMemory !== undefined ? { expressionMemoryBytes: intOption('--expression-memory-bytes', expressionMemory, 0, 1024) } : {}),
      laggingAfterMs: intOption('--lagging-after-ms', pick('lagging-after-ms', 'RIVULET_LAGGING_AFTER_MS'), 60_000, 1),
      deliveryAttemptsKept: intOption('--delivery-attempts-kept', pick('delivery-attempts-kept', 'RIVULET_DELIVERY_ATTEMPTS_KEPT'), 50, 0),
    });
    // The start line is the server's own (at info, with version, address, data folder, durability, mode).
    // SIGTERM or SIGINT: drain, then exit (protocol §16.9); a second signal while draining exits at once.
    const forced = await new Promise<boolean>((resolve) => {
      let stopping = false;
      const stop = (signal: NodeJS.Signals) => {
        if (stopping) {
          logger.warn?.(`rivulet: ${signal} again: exiting without waiting for requests in flight`, { signal });
          resolve(true);
          return;
        }
        stopping = true;
        logger.info?.(`rivulet: ${signal}: shutting down (requests in flight get up to ${shutdownGraceMs} ms; ${signal} again to cut them)`, {
          signal,
          shutdownGraceMs,
        });
        // close() logs each step of the shutdown, its last line with the time it took.
        void server.close().then(() => resolve(false));
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
    // Cut short: whatever is still open would keep the process alive.
    if (forced) process.exit(1);
    return 0;
  },
};
