/**
 * The one composition of the engine, shared by every host: over the ports it is given (storage,
 * the per-stream alarms, a one-shot timer, clock and randomness) it builds the StreamStore, the
 * StreamRegistry of actors, the DeliveryEngine the actors poke after every commit, and the
 * LocalStreamService the edges call. The receivers (one per action) and the processor waker come
 * built from the host, which alone knows how to reach other streams (the StreamDirectory port),
 * webhooks and processor hosts. What differs between hosts stays an explicit option here or in
 * the host: the Node host's deferred erase and actor limit, the Durable Object's keep-awake alarm
 * (hosts/worker/stream-host.ts), the stored watchdog's lease (config.watchdogLeaseMs).
 */
import type { CommittedEvent } from '@rivulet/contract';
import type { Clock, Random } from '../ports/clock.js';
import type { Logger } from '../ports/logger.js';
import type { StreamDirectory } from '../ports/directory.js';
import type { SqlStorage } from '../ports/storage.js';
import type { AlarmFactory, Timer } from '../ports/timer.js';
import type { StreamActor } from './actor.js';
import type { EngineConfig } from './config.js';
import type { ConnectionLimits } from './connections/index.js';
import { DeliveryEngine } from './delivery/engine.js';
import { lifecycleLog } from './lifecycle-log.js';
import type { ProcessorWaker } from './delivery/processor-port.js';
import type { Receivers } from './receivers/receiver.js';
import type { ServerMetrics } from './metrics.js';
import { StreamRegistry } from './registry.js';
import { LocalStreamService } from './service.js';
import { StreamStore, type StreamStoreOptions } from './stream-store.js';

/** Where the engine's messages go (ports/logger.ts). */
export type EngineLogger = Logger;

export interface EnginePorts {
  /** The engine's database, its schema already opened (engine/schema.ts). */
  storage: SqlStorage;
  /** One alarm per source stream: delivery retries, deadlines and idle teardown (protocol §12.2). */
  alarms: AlarmFactory;
  /** In-memory one-shot timers: call timeouts, deferred persistence, waitForEvent's timeout. */
  timer: Timer;
  clock: Clock;
  random: Random;
}

export interface EngineOptions extends EnginePorts {
  config: EngineConfig;
  metrics: ServerMetrics;
  logger: EngineLogger;
  /** The receiver of each action; an action without one is answered *unavailable* (protocol §12.8). */
  receivers: Receivers;
  /** Reaches hosted processors (processor-wake, protocol §20); without it they are unavailable. */
  processorWaker?: ProcessorWaker | undefined;
  /** The store's host policy: the Node host erases destroyed lifetimes later, in chunks. */
  store?: StreamStoreOptions;
  /** Actors kept in memory before idle ones are evicted (the registry's default otherwise). */
  maxActors?: number;
  /** Drop actors unused for a whole period of this many ms too (registry.ts; off when absent). */
  actorIdleSweepMs?: number;
  /** Told how many actors each idle sweep dropped and kept (registry.ts `afterSweep`). */
  afterActorSweep?(dropped: number, loaded: number): void;
  /** Backlog and batch bounds of live connections (tests make them small). */
  connectionLimits?: Partial<ConnectionLimits>;
  /** Told after every commit, after delivery was poked (the Worker host keeps its project index in step). */
  afterCommit?(actor: StreamActor, events: readonly CommittedEvent[]): void;
}

export interface Engine {
  readonly store: StreamStore;
  readonly registry: StreamRegistry;
  readonly delivery: DeliveryEngine;
  readonly service: LocalStreamService;
  /** Pokes every stream with subscription rows, so owed deliveries resume after a restart (protocol §12.2). */
  resumeDeliveries(): void;
}

/**
 * The engine's log function over a logger: a message with an error is a fault of the server
 * (logger.error, with what was thrown); one without is a notable fact (logger.warn).
 */
export function engineLog(logger: EngineLogger): (message: string, error?: unknown) => void {
  return (message, error) => (error === undefined ? logger.warn?.(`rivulet: ${message}`) : logger.error(`rivulet: ${message}`, error));
}

/** The StreamDirectory of a host whose streams all live in one engine (the Node host's one database). */
export function localDirectory(registry: () => StreamRegistry): StreamDirectory {
  return {
    receiveCopies: (projectId, path, batch) => registry().get(projectId, path).receiveCopies(batch),
    writeCopies: (projectId, path, batch) => registry().get(projectId, path).writeCopies(batch),
  };
}

export function composeEngine(options: EngineOptions): Engine {
  const { storage, alarms, timer, clock, random, config, metrics } = options;
  const log = engineLog(options.logger);
  const store = new StreamStore(storage, { timer, ...options.store });
  // Halts, resumes, cursor sets, skips, drops and destroys, logged from here alone (lifecycle-log.ts).
  const lifecycle = lifecycleLog(options.logger);
  const delivery = new DeliveryEngine({
    clock,
    random,
    alarms,
    timer,
    config,
    receivers: options.receivers,
    processorWaker: options.processorWaker,
    metrics,
    log,
  });
  const registry = new StreamRegistry(
    {
      store,
      clock,
      random,
      timer,
      config,
      afterCommit: (actor, events: readonly CommittedEvent[], bytes: number) => {
        metrics.appendedEvents.inc({}, events.length);
        metrics.appendedBytes.inc({}, bytes);
        delivery.poke(actor, events);
        lifecycle?.committed(actor, events);
        options.afterCommit?.(actor, events);
      },
      // Copies into this storage join their source's group commit (docs/architecture.md "Copies in the source's commit").
      ...(options.receivers['copy-to-stream']?.durableWithSource === true ? { afterWrite: (actor: StreamActor, fresh: readonly { readonly event: CommittedEvent }[]) => delivery.written(actor, fresh) } : {}),
      ...(lifecycle ? { afterDestroy: (actor: StreamActor) => lifecycle.destroyed(actor) } : {}),
    },
    {
      // An actor whose sender still owes or awaits something stays: its sender holds it.
      canEvict: (actor: StreamActor) => !delivery.isBusy(actor),
      onEvict: (actor: StreamActor) => delivery.forget(actor),
      ...(options.maxActors !== undefined ? { maxActors: options.maxActors } : {}),
      ...(options.actorIdleSweepMs !== undefined ? { idleSweepMs: options.actorIdleSweepMs } : {}),
      ...(options.afterActorSweep ? { afterSweep: options.afterActorSweep } : {}),
    },
  );
  // Delivery progress is persisted lazily (subscription-runtime.ts): bring the rows up to date first.
  metrics.subscriptionsHalted.collect = () => {
    for (const actor of registry.loaded()) if (actor.exists) actor.subscriptions.persistDirty();
    return [{ labels: {}, value: store.countHaltedSubscriptions() }];
  };
  metrics.subscriptionLag.collect = () =>
    store.largestLags(100).map((l) => ({ labels: { project: l.projectId ?? '', stream: l.path, key: l.key }, value: l.lag }));
  const service = new LocalStreamService(registry, store, metrics, {
    clock,
    random,
    timer,
    log,
    laggingAfterMs: config.laggingAfterMs,
    ...(options.connectionLimits ? { connectionLimits: options.connectionLimits } : {}),
  });
  metrics.liveConnections.collect = () => [{ labels: {}, value: service.connections.size }];
  return {
    store,
    registry,
    delivery,
    service,
    resumeDeliveries() {
      for (const { projectId, path } of store.streamsWithSubscriptions()) delivery.poke(registry.get(projectId, path));
    },
  };
}
