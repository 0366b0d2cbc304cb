/**
 * The Cloudflare Workers host for end-to-end tests: the Worker of src/hosts/worker/entry.ts bundled from
 * the sources and run by Miniflare (workerd, SQLite-backed Durable Objects persisted in a fresh
 * temporary folder), listening on 127.0.0.1 with a free port. It takes the Node host's options
 * and passes them as the Worker's bindings (worker-env.ts). `restart()` disposes the runtime and
 * starts a new one over the same persisted storage and port — every object loses its memory, as
 * after an eviction or a deploy, and RPC clients reconnect to the same url. Lines the Worker logs as internal errors are collected: close() fails when
 * one was logged, as it does for the Node host. Without a given webhook secret one is generated
 * and stored as `<dataDir>/webhook-secret`, where the Node host keeps its own.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { Miniflare } from 'miniflare';
import type { NodeServerOptions } from '../../src/hosts/node/serve.js';
import { Api } from './http.js';
import { COMPATIBILITY_DATE, bundleWorker, serverFile } from './miniflare.js';

export type WorkerHostOptions = Omit<NodeServerOptions, 'port' | 'data' | 'host' | 'logger'>;

export interface WorkerTestHost {
  url: string;
  internalErrors: string[];
  /** Every line the Worker wrote through console (its logs: JSON lines, docs/operations.md "Logs"). */
  logs: string[];
  dataDir: string;
  api: Api;
  miniflare: Miniflare;
  /** Disposes the runtime and starts it again over the same storage and port (clients reconnect to the same url). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

const SUPPORTED = new Set([
  'tokens',
  'maxDeliveryAttempts',
  'retryBaseMs',
  'retryMaxMs',
  'deliveryTimeoutMs',
  'processorIdleMs',
  'allowPrivateWebhooks',
  'webhookSecret',
  'maxEventBytes',
  'maxBodyBytes',
  'maxCoreStateBytes',
  'ephemeralRetentionCount',
  'durability',
  'cors',
  'logLevel',
  'logSlowMs',
  'longPollTimeoutMs',
  'laggingAfterMs',
  'deliveryAttemptsKept',
]);

function bindingsOf(options: WorkerHostOptions): Record<string, string> {
  for (const key of Object.keys(options)) {
    if (!SUPPORTED.has(key) && (options as Record<string, unknown>)[key] !== undefined) {
      throw new Error(`the worker test host does not support the option "${key}"`);
    }
  }
  const b: Record<string, string> = {};
  if (options.tokens) b.RIVULET_TOKENS = [...options.tokens].map(([token, project]) => `${token} ${project}`).join('\n');
  else b.RIVULET_OPEN = 'true';
  const put = (key: string, value: number | boolean | string | undefined) => {
    if (value !== undefined) b[key] = String(value);
  };
  put('RIVULET_MAX_DELIVERY_ATTEMPTS', options.maxDeliveryAttempts);
  put('RIVULET_RETRY_BASE_MS', options.retryBaseMs);
  put('RIVULET_RETRY_MAX_MS', options.retryMaxMs);
  put('RIVULET_DELIVERY_TIMEOUT_MS', options.deliveryTimeoutMs);
  put('RIVULET_PROCESSOR_IDLE_MS', options.processorIdleMs);
  put('RIVULET_ALLOW_PRIVATE_WEBHOOKS', options.allowPrivateWebhooks);
  put('RIVULET_WEBHOOK_SECRET', options.webhookSecret);
  put('RIVULET_MAX_EVENT_BYTES', options.maxEventBytes);
  put('RIVULET_MAX_BODY_BYTES', options.maxBodyBytes);
  put('RIVULET_MAX_CORE_STATE_BYTES', options.maxCoreStateBytes);
  put('RIVULET_EPHEMERAL_RETENTION_COUNT', options.ephemeralRetentionCount);
  put('RIVULET_CORS_ORIGIN', options.cors?.origins.join(','));
  put('RIVULET_CORS_ALLOW_ANY_ORIGIN_WITH_TOKENS', options.cors?.allowAnyOriginWithTokens);
  put('RIVULET_LOG_LEVEL', options.logLevel);
  put('RIVULET_LOG_SLOW_MS', options.logSlowMs);
  put('RIVULET_LONG_POLL_TIMEOUT_MS', options.longPollTimeoutMs);
  put('RIVULET_LAGGING_AFTER_MS', options.laggingAfterMs);
  put('RIVULET_DELIVERY_ATTEMPTS_KEPT', options.deliveryAttemptsKept);
  return b;
}

/** The Miniflare options of the Worker host over `persist` (also used by the benchmark). */
export async function workerOptions(
  persist: string,
  bindings: Record<string, string>,
  onStderr?: (line: string) => void,
  onStdout?: (line: string) => void,
) {
  const script = await bundleWorker(serverFile('src/hosts/worker/entry.ts'));
  return {
    modules: [{ type: 'ESModule' as const, path: 'worker.js', contents: script }],
    compatibilityDate: COMPATIBILITY_DATE,
    host: '127.0.0.1',
    port: 0,
    bindings,
    durableObjects: {
      STREAMS: { className: 'StreamObject', useSQLite: true },
      STREAM_INDEX: { className: 'IndexObject', useSQLite: true },
      RPC_HUB: { className: 'HubObject', useSQLite: true },
    },
    durableObjectsPersist: persist,
    handleRuntimeStdio(stdout: Readable, stderr: Readable) {
      const lines = (stream: Readable, sink: (line: string) => void) => {
        let rest = '';
        // Decoded as a stream: a character whose UTF-8 bytes a pipe splits between two chunks stays whole.
        stream.setEncoding('utf8');
        stream.on('data', (s: string) => {
          rest += s;
          const parts = rest.split('\n');
          rest = parts.pop() ?? '';
          for (const line of parts) sink(line);
        });
      };
      lines(stdout, (line) => onStdout?.(line));
      lines(stderr, (line) => onStderr?.(line));
    },
  };
}

export async function startWorkerHost(options: WorkerHostOptions = {}): Promise<WorkerTestHost> {
  const dir = await mkdtemp(join(tmpdir(), 'rivulet-worker-'));
  // Like the Node host's generated secret, stored where readStoredWebhookSecret(dataDir) finds it.
  const webhookSecret = options.webhookSecret ?? `whsec_${randomBytes(32).toString('base64')}`;
  if (options.webhookSecret === undefined) await writeFile(join(dir, 'webhook-secret'), `${webhookSecret}\n`, { mode: 0o600 });
  const internalErrors: string[] = [];
  const logs: string[] = [];
  const config = await workerOptions(
    join(dir, 'objects'),
    bindingsOf({ ...options, webhookSecret }),
    (line) => {
      logs.push(line);
      if (/internal error/i.test(line)) internalErrors.push(line);
    },
    (line) => logs.push(line),
  );
  let mf: Miniflare;
  let url: string;
  const start = async (port = 0) => {
    mf = new Miniflare({ ...config, port });
    url = (await mf.ready).origin;
  };
  try {
    await start();
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  let closing: Promise<void> | undefined;
  const host: WorkerTestHost = {
    get url() {
      return url;
    },
    internalErrors,
    logs,
    dataDir: dir,
    get api() {
      return new Api(url);
    },
    get miniflare() {
      return mf;
    },
    async restart() {
      const port = Number(new URL(url).port);
      await mf.dispose();
      await start(port);
    },
    close() {
      closing ??= mf
        .dispose()
        .finally(() => rm(dir, { recursive: true, force: true }))
        .then(() => {
          if (internalErrors.length > 0) {
            throw new Error(`the Worker answered INTERNAL ${internalErrors.length} time(s):\n${internalErrors.join('\n')}`);
          }
        });
      return closing;
    },
  };
  return host;
}
