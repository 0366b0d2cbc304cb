/**
 * What one stream's Durable Object runs: the same engine as the Node host, composed over the
 * Durable Object adapters — SQL storage (adapters/durable-object/do-storage.ts), the object's alarm
 * as the timer port, other streams reached through their objects (the StreamDirectory port over
 * Durable Object RPC), webhooks over fetch, itx-call and processor wakes through the project's RPC
 * hub (worker-processors.ts). Live connections and waits run on the engine's ConnectionHub of this
 * object, with callbacks and cancellation held by their caller (worker-connections.ts). The object
 * class (worker.ts) only forwards its RPC methods here.
 *
 * One object holds exactly one stream: the first call binds the object to its (project, path)
 * (recorded by the stream's own row once it exists) and a call naming another stream is refused,
 * so a routing mistake can never mix two streams' rows. Destroy erases the object's whole storage
 * (`deleteAll`) after the engine ended the lifetime, and recreates the empty schema.
 *
 * The project's index (listing) learns of a lifetime after the first call that created it, and
 * forgets it on destroy; the object remembers in memory which lifetime the index holds and
 * re-announces a lifetime the index may have missed (a crash between commit and announcement) on
 * the next call that touches the object.
 */
import {
  EventType,
  RivuletError,
  canonicalizePath,
  type DeliveryAttemptsResponse,
  type PreviewSubscriptionBody,
  type PreviewSubscriptionResponse,
  type SubscriptionListEntry,
  type CoreState,
  type OpenConnectionOptions,
  type WaitForEventBody,
  type WaitForEventResponse,
} from '@rivulet/contract';
import { DurableObjectAlarms } from '../../adapters/durable-object/do-alarm.js';
import type { DoStorageApi } from '../../adapters/durable-object/do-api.js';
import { DurableObjectStorage } from '../../adapters/durable-object/do-storage.js';
import type { StreamActor } from '../../engine/actor.js';
import { defaultEngineConfig, type EngineConfig } from '../../engine/config.js';
import { composeEngine, engineLog, type Engine } from '../../engine/compose.js';
import { copyReceiver } from '../../engine/receivers/copy.js';
import { itxCallReceiver, processorWakeReceiver } from '../../engine/receivers/itx.js';
import { webhookReceiver } from '../../engine/receivers/webhook.js';
import { createServerMetrics } from '../../engine/metrics.js';
import { openSchema } from '../../engine/schema.js';
import type { LocalStreamService } from '../../engine/service.js';
import type { ErrorLogger } from '../../http/errors.js';
import { systemClock, systemRandom } from '../../ports/clock.js';
import type { StreamDirectory } from '../../ports/directory.js';
import { systemTimer } from '../../ports/timer.js';
import type { ConnectionOpenerApi, OpenedConnection, RemoteStub, StreamSummary, TailRequest } from './api.js';
import { ConnectionControl, holdOpener } from './connections.js';
import { engineConfigOf, projectObjectName, streamObjectName, type WorkerEnv } from './env.js';
import { fetchOutbound } from './outbound.js';
import type { MetricsReporter } from './metrics-reporter.js';
import { actionOf, streamMetricsReporter } from './stream-metrics.js';
import { hubItx } from './processors.js';
import { unwrap } from './wire.js';

/** Facts that change what the project index holds of a stream's subscriptions (keys, halts). */
const SUBSCRIPTION_FACTS = new Set<string>([
  EventType.subscriptionConfigured,
  EventType.subscriptionRemoved,
  EventType.subscriptionDeliveryHalted,
  EventType.subscriptionDeliveryResumed,
]);

/** Slack added to an in-flight delivery's deadline before the safety alarm rings. */
const WATCHDOG_SLACK_MS = 1_000;

const encoder = new TextEncoder();
/** Cancels remembered for waits that have not arrived (bounded: the oldest are forgotten). */
const MAX_EARLY_CANCELS = 1_000;

export interface StreamHostDeps {
  storage: DoStorageApi;
  env: WorkerEnv;
  logger: ErrorLogger;
  /** Runs fn with no other event delivered to the object meanwhile (ctx.blockConcurrencyWhile). */
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
}

export class StreamHost {
  private readonly storage: DurableObjectStorage;
  private readonly alarms: DurableObjectAlarms;
  private readonly engine: Engine;
  readonly config: EngineConfig;
  private identity: { projectId: string | null; path: string } | null = null;
  /** The lifetime the project's index is known to list, when known. */
  private indexed: string | null | undefined = undefined;
  /** What the project's index is known to hold of this stream's subscriptions (a fingerprint), when known. */
  private subscriptionsIndexed: string | undefined = undefined;
  /** Waits under way, by the caller's wait id (cancelWait). */
  private readonly waits = new Map<string, AbortController>();
  /** Ids cancelled before their wait arrived (calls on one stub arrive in order; this is the fallback). */
  private readonly cancelledEarly = new Set<string>();
  /** Reports this object's delivery, halt, skip and lag figures to the project's index (metrics-rollup.ts). */
  private readonly reporter: MetricsReporter;

  constructor(private readonly deps: StreamHostDeps) {
    const { env, logger } = deps;
    this.config = { ...defaultEngineConfig, ...engineConfigOf(env) };
    this.storage = new DurableObjectStorage(deps.storage);
    openSchema(this.storage);
    const directory: StreamDirectory = {
      receiveCopies: (projectId, path, batch) =>
        unwrap(`stream ${path}`, () => env.STREAMS.getByName(streamObjectName(projectId, path)).receiveCopies(projectId, path, batch)),
    };
    // Host policy: while a delivery is in flight the object's alarm stands no later than its
    // deadline, so a delivery cut short by an eviction is retried (adapters/durable-object/do-alarm.ts).
    this.alarms = new DurableObjectAlarms(deps.storage, {
      keepAwake: () => {
        const actor = this.actorIfBound();
        return actor && this.engine.delivery.isBusy(actor) ? systemClock.now() + this.config.deliveryTimeoutMs + WATCHDOG_SLACK_MS : null;
      },
      log: engineLog(logger),
    });
    const itx = hubItx(env);
    const metrics = createServerMetrics();
    this.reporter = streamMetricsReporter(
      {
        env,
        logger,
        projectId: () => this.identity?.projectId ?? null,
        actor: () => this.actorIfBound(),
        connections: () => this.engine.service.connections.size,
      },
      metrics,
    );
    this.engine = composeEngine({
      storage: this.storage,
      alarms: this.alarms,
      timer: systemTimer,
      clock: systemClock,
      random: systemRandom,
      config: this.config,
      metrics,
      logger,
      receivers: {
        'copy-to-stream': copyReceiver(directory),
        'itx-call': itxCallReceiver(itx),
        'webhook-post': webhookReceiver({
          http: fetchOutbound({ allowPrivate: this.config.allowPrivateWebhooks }),
          secret: env.RIVULET_WEBHOOK_SECRET?.trim() || undefined,
          missingSecret: 'this deployment has no webhook secret: set it with `wrangler secret put RIVULET_WEBHOOK_SECRET`',
          clock: systemClock,
        }),
      },
      processorWaker: processorWakeReceiver(itx),
      afterCommit: (actor, events) => {
        if (events.some((e) => SUBSCRIPTION_FACTS.has(e.type))) void this.announceSubscriptions(actor);
        const state = actor.exists ? actor.coreState : null;
        if (state) this.reporter.committed(state.streamId, events, (key) => actionOf(actor, key));
      },
    });
    const row = this.storage.exec<{ project: string; path: string }>(`SELECT project, path FROM streams LIMIT 1`)[0];
    if (row) this.identity = { projectId: row.project === '' ? null : row.project, path: row.path };
  }

  private actorIfBound(): StreamActor | undefined {
    return this.identity ? this.engine.registry.get(this.identity.projectId, this.identity.path) : undefined;
  }

  /** Binds the object to its stream on first use; refuses any other stream. */
  private bind(projectId: string | null, path: string): StreamActor {
    if (this.identity === null) this.identity = { projectId, path };
    else if (this.identity.projectId !== projectId || this.identity.path !== path) {
      throw new RivuletError(
        'INTERNAL',
        `the object of stream ${JSON.stringify([this.identity.projectId, this.identity.path])} was asked for ${JSON.stringify([projectId, path])}`,
      );
    }
    return this.engine.registry.get(projectId, path);
  }

  /** Runs one call for the stream (projectId, path), then keeps the project's index in step. */
  async call<T>(projectId: string | null, path: string, fn: (service: LocalStreamService, actor: StreamActor) => Promise<T>): Promise<T> {
    const actor = this.bind(projectId, path);
    try {
      return await fn(this.engine.service, actor);
    } finally {
      this.reporter.poke();
      await this.announce(actor);
      await this.announceSubscriptions(actor);
    }
  }

  /**
   * Tells the project's index this stream's subscription keys and halts (protocol §21) when they
   * changed since it was last told. A failure is logged; the next call or commit tells it again.
   */
  private announceSubscriptions(actor: StreamActor): Promise<void> {
    // One at a time, so that an older announcement never lands after a newer one.
    this.announcing = this.announcing.then(() => this.announceSubscriptionsNow(actor));
    return this.announcing;
  }

  private announcing: Promise<void> = Promise.resolve();

  private async announceSubscriptionsNow(actor: StreamActor): Promise<void> {
    const state: CoreState | null = actor.exists ? actor.coreState : null;
    if (state === null) return;
    const entries = Object.entries(state.subscriptions.outbound.byKey).map(([key, e]) => ({ key, halted: e.deliveryHalted !== undefined }));
    const fingerprint = JSON.stringify([state.streamId, entries]);
    if (this.subscriptionsIndexed === fingerprint || (this.subscriptionsIndexed === undefined && entries.length === 0)) return;
    try {
      await unwrap('the stream index', () =>
        this.deps.env.STREAM_INDEX.getByName(projectObjectName(actor.projectId)).putSubscriptions(actor.projectId, actor.path, state.streamId, entries),
      );
      this.subscriptionsIndexed = fingerprint;
    } catch (error) {
      this.deps.logger.warn?.(`rivulet: could not list the subscriptions of ${actor.path} in its project's index (retried on its next call): ${String(error)}`);
    }
  }

  /** This stream's subscriptions as the listing shows them (protocol §21). */
  subscriptionEntries(projectId: string | null, path: string): Promise<SubscriptionListEntry[]> {
    return this.call(projectId, path, async (s) => (await s.listSubscriptions(projectId, { prefix: path, limit: 1_000_000 })).subscriptions);
  }

  deliveryAttempts(projectId: string | null, path: string, query: { subscriptionKey: string; limit?: number | undefined }): Promise<DeliveryAttemptsResponse> {
    return this.call(projectId, path, (s) => s.deliveryAttempts(projectId, path, query));
  }

  previewSubscription(projectId: string | null, path: string, body: PreviewSubscriptionBody): Promise<PreviewSubscriptionResponse> {
    return this.call(projectId, path, (s) => s.previewSubscription(projectId, path, body));
  }

  /**
   * Tells the project's index about the current lifetime if it may not know it yet. The call's
   * own outcome stands either way: an index that cannot be reached is told on a later call.
   */
  private async announce(actor: StreamActor): Promise<void> {
    const state: CoreState | null = actor.exists ? actor.coreState : null;
    if (state === null || this.indexed === state.streamId) return;
    try {
      await unwrap('the stream index', () =>
        this.deps.env.STREAM_INDEX.getByName(projectObjectName(actor.projectId)).put(actor.projectId, {
          path: actor.path,
          streamId: state.streamId,
          createdAt: state.createdAt,
        }),
      );
      this.indexed = state.streamId;
    } catch (error) {
      this.deps.logger.warn?.(`rivulet: could not list ${actor.path} in its project's index (retried on its next call): ${String(error)}`);
    }
  }

  subscriptionSource(body: { sourceStreamPath: string }): string {
    return canonicalizePath(body.sourceStreamPath);
  }

  summary(projectId: string | null, path: string): StreamSummary | null {
    const actor = this.bind(projectId, path);
    const state = actor.exists ? actor.coreState : null;
    return state ? { streamId: state.streamId, createdAt: state.createdAt, maxOffset: actor.durableHead } : null;
  }

  tail(projectId: string | null, path: string, options: TailRequest): ReadableStream<Uint8Array> {
    this.bind(projectId, path);
    const abort = new AbortController();
    const items = this.engine.service.tail(projectId, path, {
      afterOffset: options.afterOffset,
      expectedStreamId: options.expectedStreamId,
      eventTypes: options.eventTypes,
      signal: abort.signal,
    });
    const iterator = items[Symbol.asyncIterator]();
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = await iterator.next();
        if (next.done) {
          controller.close();
          return;
        }
        controller.enqueue(encoder.encode(`${JSON.stringify(next.value)}\n`));
      },
      async cancel() {
        abort.abort();
        await iterator.return?.();
      },
    });
  }

  /** Ends the lifetime in the engine, then erases the object's storage and forgets it in the index. */
  async destroy(projectId: string | null, path: string): Promise<boolean> {
    const actor = this.bind(projectId, path);
    const streamId = actor.exists ? actor.coreState?.streamId : undefined;
    // What the lifetime counted goes to the index before its log is erased.
    if (streamId !== undefined) await this.reporter.flush();
    // Its appended figures as it ends: read in the same synchronous step as the destroy starts.
    const appended = streamId !== undefined ? this.reporter.appended(streamId) : null;
    const destroyed = await this.engine.service.destroy(projectId, path);
    if (!destroyed || streamId === undefined) return destroyed;
    await this.reporter.forget(streamId);
    await this.deps.exclusive(async () => {
      await this.deps.storage.deleteAll();
      await this.deps.storage.deleteAlarm();
      this.alarms.forget();
      openSchema(this.storage);
    });
    this.indexed = null;
    this.subscriptionsIndexed = undefined;
    try {
      await unwrap('the stream index', () =>
        this.deps.env.STREAM_INDEX.getByName(projectObjectName(projectId)).remove(projectId, path, streamId, appended ?? undefined),
      );
    } catch (error) {
      // The listing asks each listed stream's object, which answers that the stream is gone.
      this.deps.logger.warn?.(`rivulet: could not remove ${path} from its project's index: ${String(error)}`);
    }
    return destroyed;
  }

  /**
   * A live connection of this stream (worker-connections.ts): the engine's own, with a callback that
   * calls the hub's function; the hub drives it through the ConnectionControl answered by reference.
   */
  async openConnection(
    projectId: string | null,
    path: string,
    options: OpenConnectionOptions,
    opener: RemoteStub<ConnectionOpenerApi>,
  ): Promise<OpenedConnection> {
    const held = holdOpener(opener);
    try {
      const handle = await this.call(projectId, path, (s) => s.openConnection(projectId, path, options, held.callback));
      held.watch(handle);
      return { connectionKey: handle.connectionKey, streamMaxOffset: handle.streamMaxOffset, control: new ConnectionControl(handle) };
    } catch (error) {
      held.release();
      throw error;
    }
  }

  /** The engine's waitForEvent; `cancelWait(waitId)` cancels it (the HTTP client or RPC session went away). */
  async waitForEvent(projectId: string | null, path: string, body: WaitForEventBody, waitId: string): Promise<WaitForEventResponse> {
    const cancel = new AbortController();
    if (this.cancelledEarly.delete(waitId)) cancel.abort();
    this.waits.set(waitId, cancel);
    try {
      return await this.call(projectId, path, (s) => s.waitForEvent(projectId, path, body, cancel.signal));
    } finally {
      if (this.waits.get(waitId) === cancel) this.waits.delete(waitId);
    }
  }

  cancelWait(waitId: string): boolean {
    const cancel = this.waits.get(waitId);
    if (cancel) {
      cancel.abort();
      return true;
    }
    this.cancelledEarly.add(waitId);
    if (this.cancelledEarly.size > MAX_EARLY_CANCELS) this.cancelledEarly.delete(this.cancelledEarly.values().next().value!);
    return false;
  }

  /** A processor host registered in the project (worker-hub.ts): rows waiting for one are due now. */
  processorHostRegistered(projectId: string | null, path: string): void {
    const actor = this.bind(projectId, path);
    if (!actor.exists) return;
    this.engine.delivery.processorHostRegistered(projectId);
    this.engine.delivery.poke(actor);
  }

  /** The object's alarm rang: whatever delivery is owed resumes (after an eviction too). */
  alarm(): void {
    this.alarms.ring();
    const actor = this.actorIfBound();
    if (actor) {
      this.engine.delivery.poke(actor);
      this.reporter.poke();
    }
  }
}
