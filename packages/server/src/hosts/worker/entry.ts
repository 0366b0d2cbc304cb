/**
 * The Cloudflare Workers host: the Worker entry and its three Durable Object classes. They are
 * adapters only — the logic lives in the engine and the shared edges:
 * - the entry serves the same Hono app as the Node host (http/app.ts) over a stream service that
 *   forwards each call to the stream's own Durable Object (worker-service.ts), and hands
 *   authenticated `/v1/rpc` WebSocket upgrades to the project's hub;
 * - `StreamObject`: one per (project, canonical path), running one stream actor and its sender
 *   over the object's SQLite storage and alarm (worker-stream-host.ts);
 * - `IndexObject`: one per project, the stream and subscription listings and the project's /metrics
 *   figures (worker-index.ts, metrics-rollup.ts); one more, named `["*"]`, lists the projects;
 * - `HubObject`: one per project, RPC sessions, registered workers and processor hosts, itx-call
 *   and processor wakes (worker-hub.ts); live connections keep their callbacks there and run in
 *   the stream's object (worker-connections.ts).
 * Configuration comes from the bindings of wrangler.jsonc (worker-env.ts).
 */
import { DurableObject } from 'cloudflare:workers';
import {
  RivuletError,
  type EventInput,
  type ItxBatch,
  type ItxExpression,
  type OpenConnectionOptions,
  type PreviewSubscriptionBody,
  type ProcessorWakeRequest,
  type SubscribeToEventsFromBody,
  type WaitForEventBody,
} from '@rivulet/contract';
import type { Hono } from 'hono';
import { DurableObjectStorage } from '../../adapters/durable-object/do-storage.js';
import type { CopyBatch } from '../../core/copy-builder.js';
import { useRegexEngine } from '../../core/jsonata.js';
import type { ListOptions, ReadOptions } from '../../engine/service.js';
import { createApp } from '../../http/app.js';
import { composeRequestHooks, metricsHook } from '../../http/request-hooks.js';
import { corsHook } from '../../http/cors.js';
import { authenticate } from '../../http/auth.js';
import { errorResponse } from '../../http/errors.js';
import { requestLogHook } from '../../http/request-log.js';
import { VERSION } from '../../version.js';
import type { ConnectionOpenerApi, IndexEntry, RemoteFunction, RemoteStub, StreamObjectApi, SubscribedQuery, TailRequest } from './api.js';
import { corsOf, logSlowMsOf, longPollTimeoutOf, maxBodyBytesOf, openModeRefusal, projectObjectName, tokensOf, type WorkerEnv } from './env.js';
import { createWorkerLogger, workerLogLevel } from './logger.js';
import { PRINCIPAL_HEADER, RpcHub } from './hub.js';
import { StreamIndex } from './stream-index.js';
import { durableStreamService } from './service.js';
import { StreamHost } from './stream-host.js';
import { applyRollup, createWorkerMetrics, metricsRegistryName, type Appended, type MetricsReport, type WorkerMetrics } from './metrics-rollup.js';
import { answer, unwrap } from './wire.js';

const RPC_PATH = '/v1/rpc';
// workerd takes no V8 flags: JSONata's regular expressions run on the linear-time engine (protocol §16.8).
useRegexEngine('linear');
// One logger per isolate; its level is the RIVULET_LOG_LEVEL of the env each entrance is given.
const logger = createWorkerLogger();
const configureLogs = (env: WorkerEnv): void => logger.setLevel(workerLogLevel(env.RIVULET_LOG_LEVEL));

let app: Hono | undefined;

function appFor(env: WorkerEnv): Hono {
  if (!app) {
    configureLogs(env);
    const metrics = createWorkerMetrics(VERSION);
    metrics.registry.beforeScrape(() => rollUp(env, metrics));
    const cors = corsOf(env);
    const longPollTimeoutMs = longPollTimeoutOf(env);
    app = createApp({
      ...(longPollTimeoutMs !== undefined ? { longPollTimeoutMs } : {}),
      service: durableStreamService(env, metrics),
      tokens: tokensOf(env),
      metrics,
      maxBodyBytes: maxBodyBytesOf(env),
      version: VERSION,
      logger,
      hooks: composeRequestHooks(
        [metricsHook(metrics), requestLogHook(logger, { slowMs: logSlowMsOf(env) }), ...(cors ? [corsHook(cors)] : [])],
        logger,
      ),
    });
  }
  return app;
}

/**
 * The delivery, halt, skip, appended, lag and RPC-session families of /metrics: every project's totals, from its index
 * object (metrics-rollup.ts; docs/cloudflare.md §4.2). A project that cannot be read fails the
 * scrape (UNAVAILABLE) rather than answering totals that went down.
 */
async function rollUp(env: WorkerEnv, metrics: WorkerMetrics): Promise<void> {
  const projects = await unwrap('the metrics registry', () => env.STREAM_INDEX.getByName(metricsRegistryName).metricsProjects());
  const totals = await Promise.all(
    projects.map(async (project) => ({
      project,
      totals: await unwrap(`the stream index of project ${JSON.stringify(project)}`, () => env.STREAM_INDEX.getByName(projectObjectName(project)).metricsTotals(project)),
    })),
  );
  applyRollup(metrics, totals);
}

/** `/v1/rpc`: authenticated like HTTP before the upgrade (protocol §18.1), then the project's hub. */
async function rpcUpgrade(request: Request, env: WorkerEnv): Promise<Response> {
  const url = new URL(request.url);
  const token = url.searchParams.get('token');
  const project = url.searchParams.get('project');
  const principal = authenticate(
    {
      get(name) {
        const header = request.headers.get(name);
        if (header !== null) return header;
        if (name === 'authorization' && token) return `Bearer ${token}`;
        if (name === 'x-project-id' && project) return project;
        return null;
      },
    },
    tokensOf(env),
  );
  const headers = new Headers(request.headers);
  headers.set(PRINCIPAL_HEADER, JSON.stringify(principal));
  return env.RPC_HUB.getByName(projectObjectName(principal.projectId)).fetch(new Request(request, { headers }));
}

export default {
  async fetch(request: Request, env: WorkerEnv, ctx: unknown): Promise<Response> {
    try {
      const url = new URL(request.url);
      const refusal = openModeRefusal(env);
      if (refusal !== null) {
        // The process answers (liveness), but it is not fit to serve (readiness): protocol §15.1.
        if (url.pathname === '/readyz') throw new RivuletError('UNAVAILABLE', `not ready: ${refusal}`);
        if (url.pathname !== '/healthz' && url.pathname !== '/livez') throw new RivuletError('UNAVAILABLE', refusal);
      }
      if (request.headers.get('upgrade')?.toLowerCase() === 'websocket') {
        if (url.pathname !== RPC_PATH) throw new RivuletError('NOT_FOUND', `no WebSocket endpoint at ${url.pathname}; RPC is at ${RPC_PATH}`);
        return await rpcUpgrade(request, env);
      }
      return await appFor(env).fetch(request, env, ctx as never);
    } catch (error) {
      return errorResponse(error, logger);
    }
  },
};

type P = string | null;

/** One stream: its actor, sender and storage (worker-stream-host.ts). Methods forward, nothing more. */
export class StreamObject extends DurableObject<WorkerEnv> implements StreamObjectApi {
  readonly #host: StreamHost;

  constructor(ctx: DurableObject['ctx'], env: WorkerEnv) {
    super(ctx, env);
    configureLogs(env);
    this.#host = new StreamHost({ storage: ctx.storage, env, logger, exclusive: (fn) => ctx.blockConcurrencyWhile(fn) });
  }

  append(projectId: P, path: string, inputs: readonly EventInput[]) {
    return answer(logger, () => this.#host.call(projectId, path, (s) => s.append(projectId, path, inputs)));
  }
  read(projectId: P, path: string, options: ReadOptions) {
    return answer(logger, () => this.#host.call(projectId, path, (s) => s.read(projectId, path, options)));
  }
  state(projectId: P, path: string) {
    return answer(logger, () => this.#host.call(projectId, path, (s) => s.state(projectId, path)));
  }
  destroy(projectId: P, path: string) {
    return answer(logger, () => this.#host.destroy(projectId, path));
  }
  summary(projectId: P, path: string) {
    return answer(logger, () => this.#host.summary(projectId, path));
  }
  tail(projectId: P, path: string, options: TailRequest) {
    return answer(logger, () => this.#host.tail(projectId, path, options));
  }
  subscribeToEventsFrom(projectId: P, receivingPath: string, body: SubscribeToEventsFromBody) {
    return answer(logger, () =>
      this.#host.call(projectId, this.#host.subscriptionSource(body), (s) => s.subscribeToEventsFrom(projectId, receivingPath, body)),
    );
  }
  unsubscribeFromEvents(projectId: P, receivingPath: string, body: { sourceStreamPath: string; subscriptionKey: string }) {
    return answer(logger, () =>
      this.#host.call(projectId, this.#host.subscriptionSource(body), (s) => s.unsubscribeFromEvents(projectId, receivingPath, body)),
    );
  }
  setSubscriptionCursor(projectId: P, path: string, body: { subscriptionKey: string; afterOffset: number }) {
    return answer(logger, () => this.#host.call(projectId, path, (s) => s.setSubscriptionCursor(projectId, path, body)));
  }
  resumeSubscription(projectId: P, path: string, body: { subscriptionKey: string }) {
    return answer(logger, () => this.#host.call(projectId, path, (s) => s.resumeSubscription(projectId, path, body)));
  }
  setSubscriptionCursorAndResume(projectId: P, path: string, body: { subscriptionKey: string; afterOffset: number }) {
    return answer(logger, () => this.#host.call(projectId, path, (s) => s.setSubscriptionCursorAndResume(projectId, path, body)));
  }
  receiveCopies(projectId: P, path: string, batch: CopyBatch) {
    return answer(logger, () => this.#host.call(projectId, path, (_s, actor) => actor.receiveCopies(batch)));
  }
  openConnection(projectId: P, path: string, options: OpenConnectionOptions, opener: RemoteStub<ConnectionOpenerApi>) {
    return answer(logger, () => this.#host.openConnection(projectId, path, options, opener));
  }
  waitForEvent(projectId: P, path: string, body: WaitForEventBody, waitId: string) {
    return answer(logger, () => this.#host.waitForEvent(projectId, path, body, waitId));
  }
  cancelWait(_projectId: P, _path: string, waitId: string) {
    return answer(logger, () => this.#host.cancelWait(waitId));
  }
  processorHostRegistered(projectId: P, path: string) {
    return answer(logger, () => this.#host.processorHostRegistered(projectId, path));
  }
  subscriptionEntries(projectId: P, path: string) {
    return answer(logger, () => this.#host.subscriptionEntries(projectId, path));
  }
  deliveryAttempts(projectId: P, path: string, query: { subscriptionKey: string; limit?: number | undefined }) {
    return answer(logger, () => this.#host.deliveryAttempts(projectId, path, query));
  }
  previewSubscription(projectId: P, path: string, body: PreviewSubscriptionBody) {
    return answer(logger, () => this.#host.previewSubscription(projectId, path, body));
  }
  alarm(): void {
    this.#host.alarm();
  }
}

/**
 * The stream listing and /metrics figures of one project (worker-index.ts, metrics-rollup.ts); the
 * object named metricsRegistryName lists the projects whose indexes hold figures.
 */
export class IndexObject extends DurableObject<WorkerEnv> {
  readonly #index: StreamIndex;
  /** Whether the registry is known to list this project. */
  #registered = false;

  constructor(ctx: DurableObject['ctx'], env: WorkerEnv) {
    super(ctx, env);
    configureLogs(env);
    this.#index = new StreamIndex(new DurableObjectStorage(ctx.storage));
  }

  reportMetrics(projectId: P, report: MetricsReport) {
    return answer(logger, async () => {
      this.#index.reportMetrics(report);
      await this.#register(projectId);
    });
  }
  reportSessions(projectId: P, reporter: string, count: number) {
    return answer(logger, async () => {
      this.#index.metrics.reportSessions(reporter, count);
      await this.#register(projectId);
    });
  }
  /** Told on every instance's first report: a scrape reads the indexes the registry lists. */
  async #register(projectId: P): Promise<void> {
    if (this.#registered) return;
    await unwrap('the metrics registry', () => this.env.STREAM_INDEX.getByName(metricsRegistryName).registerMetricsProject(projectId));
    this.#registered = true;
  }
  metricsMark(_projectId: P, streamId: string) {
    return answer(logger, () => this.#index.metrics.mark(streamId));
  }
  metricsTotals(_projectId: P) {
    return answer(logger, () => this.#index.metricsTotals());
  }
  registerMetricsProject(projectId: P) {
    return answer(logger, () => this.#index.metrics.registerProject(projectId));
  }
  metricsProjects() {
    return answer(logger, () => this.#index.metrics.projects());
  }

  put(_projectId: P, entry: IndexEntry) {
    return answer(logger, () => this.#index.put(entry));
  }
  remove(_projectId: P, path: string, streamId: string, appended?: Appended) {
    return answer(logger, () => this.#index.remove(path, streamId, appended));
  }
  list(_projectId: P, options: ListOptions) {
    return answer(logger, () => this.#index.list(options));
  }
  putSubscriptions(_projectId: P, path: string, streamId: string, entries: Array<{ key: string; halted: boolean }>) {
    return answer(logger, () => this.#index.putSubscriptions(path, streamId, entries));
  }
  subscribed(_projectId: P, query: SubscribedQuery) {
    return answer(logger, () => this.#index.subscribed(query));
  }
}

/** RPC sessions, registered workers and processor hosts, itx-call and processor wakes of one project (worker-hub.ts). */
export class HubObject extends DurableObject<WorkerEnv> {
  readonly #hub: RpcHub;

  constructor(ctx: DurableObject['ctx'], env: WorkerEnv) {
    super(ctx, env);
    configureLogs(env);
    this.#hub = new RpcHub(env, logger);
  }

  fetch(request: Request): Response {
    return this.#hub.accept(request);
  }
  callItx(projectId: P, expression: ItxExpression, batch: ItxBatch) {
    return this.#hub.callItx(projectId, expression, batch);
  }
  wakeProcessor(projectId: P, path: string, expression: ItxExpression, request: ProcessorWakeRequest, untilReleased: RemoteFunction<void, void>) {
    return this.#hub.wakeProcessor(projectId, path, expression, request, untilReleased);
  }
}
