/**
 * The engine's one composition (compose.ts): every part takes time, randomness and timers from
 * the ports it is given (a manual clock and timer here: nothing below waits for real time),
 * commits count in the metrics and poke delivery, the receivers it is given are the ones called,
 * and owed work resumes, is not evicted, and is logged the same way on every host.
 */
import { EventType, type JsonObject, type SubscriptionConfiguredPayload } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../adapters/memory/memory-storage.js';
import type { Clock, Random } from '../ports/clock.js';
import type { AlarmFactory, Timer } from '../ports/timer.js';
import { composeEngine, engineLog, localDirectory, type Engine, type EngineOptions } from './compose.js';
import { defaultEngineConfig } from './config.js';
import { copyReceiver } from './receivers/copy.js';
import type { DeliveryContext, DeliveryOutcome, Receiver } from './receivers/receiver.js';
import { createServerMetrics, type ServerMetrics } from './metrics.js';
import { openSchema } from './schema.js';

const START = Date.parse('2030-01-01T00:00:00.000Z');

/** A clock, a one-shot timer and per-stream alarms that move only when the test says so. */
class ManualTime implements Clock, Timer, AlarmFactory {
  private at = START;
  private nextId = 0;
  private readonly due = new Map<number, { at: number; fn: () => void }>();
  /** Every delay the engine asked the timer for, in order. */
  readonly delays: number[] = [];

  now(): number {
    return this.at;
  }

  set(delayMs: number, fn: () => void): () => void {
    const id = ++this.nextId;
    this.delays.push(delayMs);
    this.due.set(id, { at: this.at + delayMs, fn });
    return () => this.due.delete(id);
  }

  create(fire: () => void) {
    let cancel: (() => void) | undefined;
    return {
      set: (atMs: number) => {
        cancel?.();
        cancel = this.set(Math.max(0, atMs - this.at), fire);
      },
      clear: () => {
        cancel?.();
        cancel = undefined;
      },
    };
  }

  /** Moves the clock by `ms`, running every timer that falls due (and what those set), in time order. */
  async advance(ms = 0): Promise<void> {
    const until = this.at + ms;
    for (let rounds = 0; rounds < 10_000; rounds++) {
      await settle();
      const next = [...this.due].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
      if (!next) break;
      this.due.delete(next[0]);
      this.at = Math.max(this.at, next[1].at);
      next[1].fn();
    }
    this.at = until;
    await settle();
  }
}

/** Lets promise chains (storage flushes, receiver answers) run; no timer of the engine fires. */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

class FakeItx implements Receiver {
  readonly calls: { ctx: DeliveryContext; offsets: number[] }[] = [];
  answer: () => Promise<DeliveryOutcome> = async () => ({ ok: true });

  deliver(ctx: DeliveryContext, events: readonly { event: { offset: number } }[]): Promise<DeliveryOutcome> {
    this.calls.push({ ctx, offsets: events.map((e) => e.event.offset) });
    return this.answer();
  }
}

function uuids(): Random {
  let n = 0;
  return { next: () => 0.5, uuid: () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}` };
}

interface Setup {
  engine: Engine;
  time: ManualTime;
  itx: FakeItx;
  storage: MemoryStorage;
  metrics: ServerMetrics;
}

async function setup(overrides: Partial<EngineOptions> & { storage?: MemoryStorage; time?: ManualTime } = {}): Promise<Setup> {
  const storage = overrides.storage ?? (await MemoryStorage.create());
  openSchema(storage);
  const time = overrides.time ?? new ManualTime();
  const itx = new FakeItx();
  const metrics = createServerMetrics();
  const engine: Engine = composeEngine({
    storage,
    alarms: time,
    timer: time,
    clock: time,
    random: uuids(),
    config: { ...defaultEngineConfig, retryBaseMs: 100, retryMaxMs: 100, deliveryTimeoutMs: 1_000, maxDeliveryAttempts: 3 },
    metrics,
    logger: { error: () => undefined },
    receivers: { 'copy-to-stream': copyReceiver(localDirectory(() => engine.registry)), 'itx-call': itx },
    ...overrides,
  });
  return { engine, time, itx, storage, metrics };
}

const itxSub = (key: string, start: 'now' | 'beginning' = 'now'): SubscriptionConfiguredPayload => ({
  subscriptionKey: key,
  receiver: { action: 'itx-call', expression: ['workers', ['get', 'w'], 'processEventBatch'], delivery: { start, onFailingEvent: 'halt' } },
});

const configure = (engine: Engine, path: string, payload: SubscriptionConfiguredPayload) =>
  engine.service.append('p', path, [{ type: EventType.subscriptionConfigured, payload: payload as unknown as JsonObject }]);

const x = (n: number) => ({ type: 'app/x', payload: { n } });

describe('composeEngine', () => {
  it('takes time and randomness from its ports, and counts every commit in the metrics', async () => {
    const { engine, time, metrics } = await setup();
    const [event] = await engine.service.append('p', '/s', [x(1)]);
    expect(event).toMatchObject({ offset: 2, createdAt: new Date(START).toISOString() });
    expect(engine.registry.get('p', '/s').coreState?.streamId).toBe('00000000-0000-4000-8000-000000000001');
    // the created fact and the event, both counted (on the Worker host too, now)
    expect(metrics.appendedEvents.get()).toBe(2);
    expect(metrics.appendedBytes.get()).toBeGreaterThan(0);
    expect(metrics.appends.get()).toBe(1);
    expect(time.delays).toEqual([]);
  });

  it('pokes delivery after a commit on the timer, calling the receiver it was given', async () => {
    const { engine, time, itx } = await setup();
    await configure(engine, '/s', itxSub('k'));
    await engine.service.append('p', '/s', [x(1)]);
    expect(itx.calls).toEqual([]);
    await time.advance(0);
    expect(itx.calls.map((c) => c.offsets)).toEqual([[3]]);
    expect(engine.service.actor('p', '/s').runtimeState()?.subscriptions.k).toMatchObject({ acknowledgedOffset: 3, inFlightDeadlineAt: null });
  });

  it('copies reach the receiving stream in-process through localDirectory', async () => {
    const { engine, time } = await setup();
    await engine.service.append('p', '/src', [
      {
        type: EventType.subscriptionConfigured,
        payload: {
          subscriptionKey: 'c',
          receiver: { action: 'copy-to-stream', receivingStreamPath: '/dst', delivery: { start: 'beginning', onFailingEvent: 'halt' } },
        },
      },
    ]);
    await engine.service.append('p', '/src', [x(1), x(2)]);
    await time.advance(0);
    const copied = engine.registry.get('p', '/dst').read({ afterOffset: 0, limit: 100, includeEphemeral: false }).events.filter((e) => e.type === 'app/x');
    expect(copied.map((e) => e.payload)).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('ends a call that outlives the delivery timeout on the timer, and backs off on the alarm', async () => {
    const { engine, time, itx } = await setup();
    itx.answer = () => new Promise<DeliveryOutcome>(() => undefined);
    await configure(engine, '/s', itxSub('k'));
    await engine.service.append('p', '/s', [x(1)]);
    await time.advance(0);
    expect(itx.calls).toHaveLength(1);
    await time.advance(999);
    expect(engine.service.actor('p', '/s').runtimeState()?.subscriptions.k?.lastError).toBeNull();
    await time.advance(1);
    expect(engine.service.actor('p', '/s').runtimeState()?.subscriptions.k).toMatchObject({
      attempt: 1,
      lastError: 'delivery timed out after 1000 ms',
      nextAttemptAt: START + 1_000 + 100,
    });
    await time.advance(100);
    expect(itx.calls).toHaveLength(2);
  });

  it('times waitForEvent out on the timer, not on the wall clock', async () => {
    const { engine, time } = await setup();
    await engine.service.append('p', '/w', [x(1)]);
    const waiting = engine.service.waitForEvent('p', '/w', { timeoutMs: 60_000, eventTypes: ['app/never'] });
    let answer: string | undefined;
    const outcome = waiting.then(
      () => (answer = 'answered'),
      (error: { code?: string }) => (answer = error.code),
    );
    await time.advance(59_999);
    expect(answer).toBeUndefined();
    await time.advance(1);
    await outcome;
    expect(answer).toBe('TIMEOUT');
    expect(time.delays).toContain(60_000);
  });

  it('cancels a wait whose caller went away while its opening fact was being made durable', async () => {
    // The wait is listed once its opening fact commits, before that fact is durable: a caller
    // that sees it listed and leaves at once aborts the signal before the wait listens to it.
    const { engine, time, storage } = await setup();
    await engine.service.append('p', '/w', [x(1)]);
    const caller = new AbortController();
    const flush = storage.flush.bind(storage);
    storage.flush = () => {
      storage.flush = flush;
      caller.abort();
      return flush();
    };
    const waiting = engine.service.waitForEvent('p', '/w', { timeoutMs: 60_000, eventTypes: ['app/never'] }, caller.signal);
    let answer: string | undefined;
    const outcome = waiting.then(
      () => (answer = 'answered'),
      (error: { code?: string; message?: string }) => (answer = `${error.code}: ${error.message}`),
    );
    await time.advance(0);
    // Without the cancel the wait would run to its timeout.
    if (answer === undefined) await time.advance(60_000);
    await outcome;
    expect(answer).toBe('UNAVAILABLE: waitForEvent on /w was cancelled: its caller went away');
    const read = await engine.service.read('p', '/w', { afterOffset: 0, limit: 100, includeEphemeral: false });
    const closed = read.events.map((e) => JSON.parse(e.json) as { type: string; payload: { reason?: string } }).filter((e) => e.type === EventType.connectionClosed);
    expect(closed.map((e) => e.payload.reason)).toEqual(['cancelled']);
  });

  it('resumes owed deliveries of a reopened database (resumeDeliveries)', async () => {
    const first = await setup();
    await configure(first.engine, '/s', itxSub('k', 'beginning'));
    first.engine.delivery.close();
    await first.engine.service.append('p', '/s', [x(1)]);
    const second = await setup({ storage: first.storage });
    await second.time.advance(0);
    expect(second.itx.calls).toEqual([]);
    second.engine.resumeDeliveries();
    await second.time.advance(0);
    expect(second.itx.calls.map((c) => c.offsets)).toEqual([[1, 2, 3]]);
  });

  it('keeps an actor whose delivery is busy when the registry evicts idle ones', async () => {
    const { engine, time, itx } = await setup({ maxActors: 1 });
    let release!: (outcome: DeliveryOutcome) => void;
    itx.answer = () => new Promise<DeliveryOutcome>((resolve) => (release = resolve));
    await configure(engine, '/busy', itxSub('k'));
    await engine.service.append('p', '/busy', [x(1)]);
    await time.advance(0);
    const busy = engine.registry.get('p', '/busy');
    await engine.service.append('p', '/other', [x(1)]);
    await engine.service.append('p', '/third', [x(1)]);
    expect([...engine.registry.loaded()]).toContain(busy);
    release({ ok: true });
    await time.advance(0);
    await engine.service.append('p', '/fourth', [x(1)]);
    expect([...engine.registry.loaded()]).not.toContain(busy);
  });

  it('serves the halted-subscriptions and lag gauges from the store', async () => {
    const { engine, time, itx, metrics } = await setup();
    itx.answer = async () => ({ ok: false, kind: 'failing', error: 'refused' });
    await configure(engine, '/s', itxSub('k'));
    await engine.service.append('p', '/s', [x(1)]);
    await time.advance(0);
    await time.advance(100);
    await time.advance(100);
    expect(engine.registry.get('p', '/s').coreState?.subscriptions.outbound.byKey.k?.deliveryHalted).toBeDefined();
    const text = metrics.registry.render();
    expect(text).toContain('rivulet_subscriptions_halted 1');
    // cursor 2; the event (3) and the halt fact (4) are after it
    expect(text).toContain('rivulet_subscription_lag_events{key="k",project="p",stream="/s"} 2');
  });

  it('logs faults with their error and notable facts as warnings, on every host alike', async () => {
    const logged: string[] = [];
    const log = engineLog({ error: (message, error) => logged.push(`error ${message} ${String(error)}`), warn: (message) => logged.push(`warn ${message}`) });
    log('a subscription halted');
    log('a delivery failed unexpectedly', new Error('boom'));
    expect(logged).toEqual(['warn rivulet: a subscription halted', 'error rivulet: a delivery failed unexpectedly Error: boom']);
    // a logger without warn drops the facts and still gets the faults
    const errors: string[] = [];
    engineLog({ error: (message) => errors.push(message) })('only a fact');
    expect(errors).toEqual([]);
  });
});
