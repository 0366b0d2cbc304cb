/**
 * The delivery engine in-process, composed by engine/compose.ts as the hosts compose it:
 * StreamStore, StreamRegistry whose afterCommit pokes the DeliveryEngine, and a real copy receiver
 * over the in-process StreamDirectory of the Node host. The itx-call and webhook-post receivers
 * are scripted fakes, so the sender's generic behaviour (batches, ladder, skips, watchdog, runs)
 * can be driven without a network. The alarm factory wraps the real Node one and records every
 * set/clear/fire. The payloads the tests append are in payloads.ts.
 */
import {
  EventType,
  type CommittedEvent,
  type CoreState,
  type EventInput,
  type JsonObject,
  type RuntimeState,
  type SubscriptionConfiguredPayload,
  type SubscriptionRuntimeState,
} from '@rivulet/contract';
import { MemoryStorage } from '../../src/adapters/memory/memory-storage.js';
import { checkInput } from '../../src/core/append-input.js';
import type { StreamActor } from '../../src/engine/actor.js';
import { defaultEngineConfig, type EngineConfig } from '../../src/engine/config.js';
import { composeEngine, localDirectory } from '../../src/engine/compose.js';
import { copyReceiver } from '../../src/engine/receivers/copy.js';
import type { DeliveryEngine } from '../../src/engine/delivery/engine.js';
import type { DeliveredEvent, DeliveryContext, DeliveryOutcome, Receiver } from '../../src/engine/receivers/receiver.js';
import type { ProcessorWaker } from '../../src/engine/delivery/processor-port.js';
import { createServerMetrics } from '../../src/engine/metrics.js';
import type { StreamRegistry } from '../../src/engine/registry.js';
import { openSchema } from '../../src/engine/schema.js';
import type { StreamStore } from '../../src/engine/stream-store.js';
import { nodeAlarms } from '../../src/hosts/node/alarms.js';
import { systemClock, type Random } from '../../src/ports/clock.js';
import type { LogFields } from '../../src/ports/logger.js';
import type { SqlStorage } from '../../src/ports/storage.js';
import { systemTimer, type AlarmFactory, type StreamAlarm } from '../../src/ports/timer.js';

export const PROJECT = 'proj';

// ---------------------------------------------------------------- waiting

/** Polls `probe` until it answers something other than undefined/false, or fails after the deadline. */
export async function waitFor<T>(probe: () => T | undefined | false, what: string, timeoutMs = 3000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = probe();
      if (value !== undefined && value !== false) return value;
      last = value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${last instanceof Error ? last.message : String(last)})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 3));
  }
}

/** Lets timers and microtasks run for `ms` (only to show that something does NOT happen, after a positive sync). */
export const settle = (ms = 40) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------- fake receivers

export interface FakeCall {
  ctx: DeliveryContext;
  offsets: number[];
  events: readonly DeliveredEvent[];
  /** When the call arrived (ms since the epoch). */
  at: number;
  /** Settles a hanging call (no effect on a call that already settled). */
  release(outcome: DeliveryOutcome): void;
  settled: boolean;
}

/** What a call answers: an outcome, 'hang' (until released or timed out), or a thrown error. */
export type Script = (call: FakeCall, index: number) => DeliveryOutcome | 'hang' | Error;

export const ok = (): DeliveryOutcome => ({ ok: true });
export const failing = (error = 'receiver refused the batch'): DeliveryOutcome => ({ ok: false, kind: 'failing', error });
export const unavailable = (error = 'receiver not connected'): DeliveryOutcome => ({ ok: false, kind: 'unavailable', error });

export class FakeReceiver implements Receiver {
  readonly calls: FakeCall[] = [];
  script: Script = () => ok();

  deliver(ctx: DeliveryContext, events: readonly DeliveredEvent[]): Promise<DeliveryOutcome> {
    let settle!: (outcome: DeliveryOutcome) => void;
    const promise = new Promise<DeliveryOutcome>((resolve) => {
      settle = resolve;
    });
    const call: FakeCall = {
      ctx,
      offsets: events.map((e) => e.event.offset),
      events,
      at: Date.now(),
      settled: false,
      release(outcome) {
        if (call.settled) return;
        call.settled = true;
        settle(outcome);
      },
    };
    this.calls.push(call);
    const answer = this.script(call, this.calls.length - 1);
    if (answer instanceof Error) {
      call.settled = true;
      return Promise.reject(answer);
    }
    if (answer !== 'hang') call.release(answer);
    return promise;
  }

  callsFor(key: string): FakeCall[] {
    return this.calls.filter((c) => c.ctx.subscriptionKey === key);
  }

  offsetsFor(key: string): number[][] {
    return this.callsFor(key).map((c) => c.offsets);
  }

  /** Releases every call still hanging (test cleanup). */
  releaseAll(outcome: DeliveryOutcome = unavailable('test over')): void {
    for (const call of this.calls) call.release(outcome);
  }
}

// ---------------------------------------------------------------- recording alarms

export interface AlarmRecord {
  id: number;
  /** The time the alarm is armed for, or null when it is not armed. */
  armedAt: number | null;
  sets: number;
  clears: number;
  fires: number;
  /** Every time it was set for, in order. */
  setTimes: number[];
}

/** The real Node alarms, with every set, clear and fire recorded. */
export class RecordingAlarms implements AlarmFactory {
  readonly records: AlarmRecord[] = [];

  create(fire: () => void): StreamAlarm {
    const record: AlarmRecord = { id: this.records.length, armedAt: null, sets: 0, clears: 0, fires: 0, setTimes: [] };
    this.records.push(record);
    const inner = nodeAlarms.create(() => {
      record.armedAt = null;
      record.fires++;
      fire();
    });
    return {
      set(atMs) {
        record.sets++;
        record.setTimes.push(atMs);
        record.armedAt = atMs;
        inner.set(atMs);
      },
      clear() {
        record.clears++;
        record.armedAt = null;
        inner.clear();
      },
    };
  }

  /** Alarms currently armed. */
  get armed(): AlarmRecord[] {
    return this.records.filter((r) => r.armedAt !== null);
  }

  get totalSets(): number {
    return this.records.reduce((n, r) => n + r.sets, 0);
  }

  get totalFires(): number {
    return this.records.reduce((n, r) => n + r.fires, 0);
  }
}

// ---------------------------------------------------------------- the engine

export interface HarnessOptions {
  config?: Partial<EngineConfig>;
  /** Storage to build on (schema opened here); a fresh MemoryStorage by default. */
  storage?: SqlStorage;
  /** The injected random source's next() (0.5 = no jitter). */
  random?: number;
  /** Build with the delivery engine closed from the start (commits poke nothing). */
  withoutDelivery?: boolean;
  /** Register only the real copy receiver (the other actions are answered unavailable). */
  copyOnly?: boolean;
  /** A real webhook-post receiver instead of the scripted fake (test/delivery/webhook*.test.ts). */
  webhookReceiver?: Receiver;
  /** Wakes hosted processors (test/delivery/processors.test.ts); none by default. */
  processorWaker?: ProcessorWaker;
  /** Actors the registry keeps in memory before it evicts idle ones (test/delivery/eviction.test.ts). */
  maxActors?: number;
  /** The registry's idle sweep period (registry.ts; off when absent, as on the Worker host). */
  actorIdleSweepMs?: number;
}

export const testConfig: EngineConfig = {
  ...defaultEngineConfig,
  maxDeliveryAttempts: 4,
  retryBaseMs: 10,
  retryMaxMs: 80,
  deliveryTimeoutMs: 100,
  allowPrivateWebhooks: true,
};

export class Harness {
  readonly itx = new FakeReceiver();
  readonly webhook = new FakeReceiver();
  readonly alarms = new RecordingAlarms();
  readonly logs: string[] = [];
  /** The engine's metrics (test/delivery/metrics.test.ts). */
  readonly metrics = createServerMetrics();
  /** The info lines (engine/lifecycle-log.ts): message and fields. */
  readonly infos: Array<[string, LogFields | undefined]> = [];
  readonly store: StreamStore;
  readonly registry: StreamRegistry;
  readonly delivery: DeliveryEngine | null;
  readonly config: EngineConfig;
  private readonly resume: () => void;
  private closed = false;

  constructor(
    readonly storage: SqlStorage,
    options: HarnessOptions,
  ) {
    openSchema(storage);
    this.config = { ...testConfig, ...options.config };
    const random: Random = { next: () => options.random ?? 0.5, uuid: () => globalThis.crypto.randomUUID() };
    const copy = copyReceiver(localDirectory(() => this.registry));
    const engine = composeEngine({
      storage,
      alarms: this.alarms,
      timer: systemTimer,
      clock: systemClock,
      random,
      config: this.config,
      metrics: this.metrics,
      logger: {
        error: (message, error) => this.logs.push(`${message}: ${String(error)}`),
        warn: (message) => this.logs.push(message),
        info: (message, fields) => this.infos.push([message, fields]),
      },
      receivers: options.copyOnly
        ? { 'copy-to-stream': copy }
        : { 'copy-to-stream': copy, 'itx-call': this.itx, 'webhook-post': options.webhookReceiver ?? this.webhook },
      processorWaker: options.processorWaker,
      ...(options.maxActors !== undefined ? { maxActors: options.maxActors } : {}),
      ...(options.actorIdleSweepMs !== undefined ? { actorIdleSweepMs: options.actorIdleSweepMs } : {}),
    });
    this.store = engine.store;
    this.registry = engine.registry;
    this.resume = () => engine.resumeDeliveries();
    if (options.withoutDelivery) engine.delivery.close();
    this.delivery = options.withoutDelivery ? null : engine.delivery;
  }

  /** Pokes every stream with subscription rows, as the Node host does at start (protocol §12.2). */
  start(): void {
    this.resume();
  }

  actor(path: string, projectId: string | null = PROJECT): StreamActor {
    return this.registry.get(projectId, path);
  }

  /** A public append, checked at the edge as the service does. */
  append(path: string, ...events: EventInput[]): Promise<CommittedEvent[]> {
    return this.actor(path).append(
      events.map((e, i) => checkInput(e, 'public', i)),
      'public',
    );
  }

  async configure(path: string, payload: SubscriptionConfiguredPayload): Promise<CommittedEvent> {
    const [event] = await this.append(path, { type: EventType.subscriptionConfigured, payload: payload as unknown as JsonObject });
    return event!;
  }

  /** Every durable event of a stream, read back from storage. */
  events(path: string): CommittedEvent[] {
    const out: CommittedEvent[] = [];
    for (;;) {
      const page = this.actor(path).read({ afterOffset: out[out.length - 1]?.offset ?? 0, limit: 500, includeEphemeral: false });
      out.push(...page.events);
      if (page.events.length < 500) return out;
    }
  }

  eventsOfType(path: string, type: string): CommittedEvent[] {
    return this.events(path).filter((e) => e.type === type);
  }

  core(path: string): CoreState {
    const state = this.actor(path).coreState;
    if (!state) throw new Error(`${path} does not exist`);
    return state;
  }

  runtime(path: string): RuntimeState {
    const runtime = this.actor(path).runtimeState();
    if (!runtime) throw new Error(`${path} does not exist`);
    return runtime;
  }

  /** runtime.subscriptions[key] of :state. */
  sub(path: string, key: string): SubscriptionRuntimeState {
    const view = this.runtime(path).subscriptions[key];
    if (!view) throw new Error(`${path} has no runtime row for "${key}"`);
    return view;
  }

  head(path: string): number {
    return this.actor(path).durableHead;
  }

  /** Waits until the subscription's cursor reached the stream head and nothing is in flight or owed. */
  async caughtUp(path: string, key: string, timeoutMs = 3000): Promise<void> {
    await waitFor(
      () => {
        const s = this.sub(path, key);
        return s.acknowledgedOffset === this.head(path) && s.inFlightDeadlineAt === null && s.nextAttemptAt === null;
      },
      `${path} "${key}" caught up`,
      timeoutMs,
    );
  }

  /** Waits until the subscription is halted in core state; answers the halt. */
  halted(path: string, key: string, timeoutMs = 3000) {
    return waitFor(() => this.core(path).subscriptions.outbound.byKey[key]?.deliveryHalted, `${path} "${key}" halted`, timeoutMs);
  }

  /** Stops delivery (alarms cleared), releases hanging calls; the storage is closed unless kept. */
  async close(options: { keepStorage?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.registry.close();
    this.delivery?.close();
    this.itx.releaseAll();
    this.webhook.releaseAll();
    await this.storage.flush().catch(() => undefined);
    if (!options.keepStorage) this.storage.close();
  }
}

export async function createHarness(options: HarnessOptions = {}): Promise<Harness> {
  return new Harness(options.storage ?? (await MemoryStorage.create()), options);
}
