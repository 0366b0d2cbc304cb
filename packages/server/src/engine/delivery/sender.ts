/**
 * The send loop of one source stream (SEMANTICS §5): level-triggered. After every commit and on
 * every alarm, each subscription row is looked at: halted, in flight or backing off rows wait;
 * any other row that is behind the head gets one delivery started (never awaited by the caller).
 * One alarm is re-armed at the earliest owed time and cleared when nothing is owed, so a quiet or
 * halted stream never wakes itself.
 *
 * A delivery belongs to a run (configuration offset, cursor-set offset). Its result is applied only
 * if the row is still on that run and the delivery is still the current one: a late success of a
 * superseded run cannot move the newer cursor, and a late failure cannot delay or fail it (S39).
 */
import { EventType, INTERNAL_IDEMPOTENCY_PREFIX, Limits, type CommittedEvent, type OutboundEntry } from '@rivulet/contract';
import { shapeEvent } from '../../core/filter.js';
import { afterFailure, ladderDefaults, type Failure, type LadderKnobs } from '../../core/ladder.js';
import { runGeneration, type SubscriptionRow } from '../../core/repair.js';
import type { Clock, Random } from '../../ports/clock.js';
import type { AlarmFactory, StreamAlarm } from '../../ports/timer.js';
import type { StreamActor } from '../actor.js';
import type { EngineConfig } from '../config.js';
import type { ServerMetrics } from '../metrics.js';
import { collectBatch } from './collect.js';
import { ProcessorDriver, type ProcessorWaker } from './processor-driver.js';
import { errorText, type DeliveredEvent, type DeliveryContext, type DeliveryOutcome, type Receivers } from './receiver.js';

export interface SenderDeps {
  clock: Clock;
  random: Random;
  alarms: AlarmFactory;
  config: EngineConfig;
  receivers: Receivers;
  metrics?: ServerMetrics | undefined;
  /** Wakes hosted processors (processor-wake); without it they are unavailable. */
  processorWaker?: ProcessorWaker | undefined;
  log(message: string, error?: unknown): void;
}

interface Flight {
  run: string;
}

const MAX_BATCH_EVENTS = 1000;
const MAX_BATCH_BYTES = 1_048_576;

/** A run is one lifetime of the source, one configuration and one cursor-set (protocol §12.1). */
const runOf = (streamId: string, row: SubscriptionRow) => `${streamId}:${row.runConfiguredAt}:${row.runCursorSetAt}`;

function cut(text: string): string {
  return text.length > Limits.errorTextMax ? `${text.slice(0, Limits.errorTextMax - 1)}…` : text;
}

function policyOf(entry: OutboundEntry): 'halt' | 'skip' {
  const receiver = entry.configuration.receiver;
  return receiver.action === 'itx-call' || receiver.action === 'webhook-post' ? receiver.delivery.onFailingEvent : 'halt';
}

export class StreamSender {
  private readonly flights = new Map<string, Flight>();
  private readonly alarm: StreamAlarm;
  private queued = false;
  private closed = false;
  /** Delivery of processor-wake rows (processor-driver.ts), created with the first such row. */
  private processors: ProcessorDriver | undefined;

  constructor(
    readonly actor: StreamActor,
    private readonly deps: SenderDeps,
  ) {
    this.alarm = deps.alarms.create(() => this.check());
  }

  get knobs(): LadderKnobs {
    const c = this.deps.config;
    return { maxAttempts: c.maxDeliveryAttempts, baseMs: c.retryBaseMs, maxMs: c.retryMaxMs, ...ladderDefaults };
  }

  get busy(): boolean {
    return this.flights.size > 0;
  }

  private get processorDriver(): ProcessorDriver {
    this.processors ??= new ProcessorDriver({
      actor: this.actor,
      clock: this.deps.clock,
      config: this.deps.config,
      metrics: this.deps.metrics,
      waker: this.deps.processorWaker,
      flights: this.flights,
      runOf: (streamId, row) => runOf(streamId, row),
      current: (key, flight) => this.current(key, flight),
      write: (row) => this.write(row),
      failed: (key, entry, flight, failure, error) => this.failed(key, entry, flight, failure, error),
      conditionFailed: (key, entry, flight, row, offset, error) => this.conditionFailed(key, entry, flight, row, offset, error),
      recheck: () => this.recheck(),
      poke: () => this.poke(),
      log: (message, error) => this.deps.log(message, error),
    });
    return this.processors;
  }

  /** A processor host registered in this stream's project: processor rows waiting for one are due now. */
  processorHostRegistered(): void {
    if (this.processors?.expedite(this.deps.clock.now())) this.poke();
  }

  /**
   * Moves caught-up subscriptions whose event types match none of `committed` past them, without a
   * read or a delivery (skip-not-defer, SEMANTICS §5.2): what a send check would have concluded.
   * Answers true when no subscription of the stream needs a check for these events.
   */
  passOver(committed: readonly CommittedEvent[]): boolean {
    const state = this.actor.coreState;
    const first = committed[0];
    const last = committed[committed.length - 1];
    if (!state || !first || !last) return false;
    let allPassed = true;
    for (const row of [...this.actor.subscriptions.all()]) {
      const entry = state.subscriptions.outbound.byKey[row.key];
      const types = entry?.configuration.filter?.eventTypes;
      const quiet =
        entry !== undefined &&
        types !== undefined &&
        entry.configuration.receiver.action !== 'processor-wake' &&
        !row.halted &&
        row.inflightDeadlineAt === null &&
        row.nextAttemptAt === null &&
        !this.flights.has(row.key) &&
        row.cursor === first.offset - 1 &&
        committed.every((e) => e.ephemeral === true || !types.includes(e.type));
      if (quiet) this.actor.subscriptions.advanceQuietly(row, last.offset);
      else allPassed = false;
    }
    return allPassed;
  }

  /** Events of the source read by receivers (the run's configure event): immutable per lifetime. */
  private readonly sourceEvents = new Map<string, CommittedEvent>();

  private sourceEvent(streamId: string, offset: number): CommittedEvent | undefined {
    const key = `${streamId}:${offset}`;
    let event = this.sourceEvents.get(key);
    if (!event) {
      event = this.actor.read({ afterOffset: offset - 1, limit: 1, includeEphemeral: false }).events.find((e) => e.offset === offset);
      if (!event) return undefined;
      if (this.sourceEvents.size >= 64) this.sourceEvents.delete(this.sourceEvents.keys().next().value as string);
      this.sourceEvents.set(key, event);
    }
    return event;
  }

  /** Schedules a send check soon, outside the caller's promise chain (SEMANTICS §8). */
  poke(): void {
    if (this.queued || this.closed) return;
    this.queued = true;
    setTimeout(() => {
      this.queued = false;
      this.check();
    }, 0);
  }

  private recheckQueued = false;

  private recheck(): void {
    if (this.recheckQueued || this.closed) return;
    this.recheckQueued = true;
    queueMicrotask(() => {
      this.recheckQueued = false;
      this.check();
    });
  }

  close(): void {
    this.closed = true;
    this.alarm.clear();
    this.processors?.close();
    if (this.actor.exists) this.actor.subscriptions.persistDirty();
  }

  check(): void {
    if (this.closed) return;
    const state = this.actor.coreState;
    this.processors?.sweep(state);
    if (!state) {
      this.alarm.clear();
      return;
    }
    const now = this.deps.clock.now();
    const head = this.actor.durableHead;
    let earliest = Number.POSITIVE_INFINITY;
    for (const row of [...this.actor.subscriptions.all()]) {
      const entry = state.subscriptions.outbound.byKey[row.key];
      if (!entry || row.halted) continue;
      const flight = this.flights.get(row.key);
      if (flight && flight.run === runOf(state.streamId, row)) {
        if (row.inflightDeadlineAt !== null) earliest = Math.min(earliest, row.inflightDeadlineAt);
        continue;
      }
      if (row.nextAttemptAt !== null && row.nextAttemptAt > now) {
        earliest = Math.min(earliest, row.nextAttemptAt);
        continue;
      }
      if (entry.configuration.receiver.action === 'processor-wake') {
        earliest = Math.min(earliest, this.processorDriver.check(row, entry, now));
        continue;
      }
      if (row.cursor >= head && row.inflightDeadlineAt === null) continue;
      void this.deliver(row.key, entry);
    }
    if (Number.isFinite(earliest)) this.alarm.set(earliest);
    else this.alarm.clear();
  }

  private current(key: string, flight: Flight): SubscriptionRow | undefined {
    const row = this.actor.subscriptions.get(key);
    const streamId = this.actor.coreState?.streamId;
    if (this.closed || !row || row.halted || streamId === undefined || this.flights.get(key) !== flight) return undefined;
    return runOf(streamId, row) === flight.run ? row : undefined;
  }

  private async deliver(key: string, entry: OutboundEntry): Promise<void> {
    const row = this.actor.subscriptions.get(key)!;
    const flight: Flight = { run: runOf(this.actor.coreState!.streamId, row) };
    this.flights.set(key, flight);
    try {
      await this.deliverOnce(key, entry, row, flight);
    } catch (error) {
      // Our own fault, not the event's: it backs off and counts towards the halt like an outage,
      // so a persistent fault ends in a visible halt instead of a quiet loop.
      this.deps.log(`delivery of ${this.actor.path} subscription "${key}" failed unexpectedly`, error);
      const now = this.current(key, flight);
      if (now) {
        await this.failed(key, entry, flight, { kind: 'unavailable', batchSize: 1, firstOffset: now.cursor + 1 }, `internal error: ${errorText(error)}`).catch(
          (again: unknown) => this.deps.log(`could not record the failure of ${this.actor.path} subscription "${key}"`, again),
        );
      }
    } finally {
      if (this.flights.get(key) === flight) this.flights.delete(key);
      // The next batch may be owed at once: look again on the next microtask, not a timer tick.
      this.recheck();
    }
  }

  /**
   * Delivery progress is not durable against power loss (a restart may redo a delivery: at least
   * once), so these writes never wait for the disk (ports/storage.ts).
   */
  private write(row: SubscriptionRow): void {
    this.actor.store.storage.transaction(() => this.actor.subscriptions.write(row), { durable: false });
  }

  private async deliverOnce(key: string, entry: OutboundEntry, row: SubscriptionRow, flight: Flight): Promise<void> {
    const action = entry.configuration.receiver.action;
    const single = row.isolate || action === 'webhook-post';
    const collected = await collectBatch(this.actor, entry, row.cursor, {
      maxEvents: single ? 1 : MAX_BATCH_EVENTS,
      maxBytes: MAX_BATCH_BYTES,
      scanRows: 1000,
    });
    let current = this.current(key, flight);
    if (!current) return;
    if (collected.kind === 'none') {
      const cursor = Math.max(current.cursor, collected.scannedTo);
      if (current.inflightDeadlineAt !== null) this.write({ ...current, cursor, inflightDeadlineAt: null });
      else if (cursor !== current.cursor) this.actor.subscriptions.advanceQuietly(current, cursor);
      return;
    }
    if (collected.kind === 'condition-error' && collected.events.length === 0) {
      await this.conditionFailed(key, entry, flight, row, collected.failingOffset, collected.error);
      return;
    }

    const transform = 'jsonataTransform' in entry.configuration.receiver ? entry.configuration.receiver.jsonataTransform : undefined;
    const delivered: DeliveredEvent[] = [];
    for (const event of collected.events) {
      try {
        delivered.push({ event, shaped: await shapeEvent(transform, event) });
      } catch (error) {
        if (delivered.length > 0) break;
        await this.failed(key, entry, flight, { kind: 'failing', batchSize: 1, firstOffset: event.offset }, `jsonataTransform failed on offset ${event.offset}: ${errorText(error)}`);
        return;
      }
    }
    const first = delivered[0]!.event.offset;
    const last = delivered[delivered.length - 1]!.event.offset;
    const complete = collected.kind === 'events' && delivered.length === collected.events.length;
    const cursorAfter = complete ? collected.scannedTo : last;

    current = this.current(key, flight);
    if (!current) return;
    const state = this.actor.coreState!;
    const timeout = this.deps.config.deliveryTimeoutMs;
    const started = this.deps.clock.now();
    // The watchdog is stored before the call leaves (SEMANTICS §4).
    this.write({ ...current, inflightDeadlineAt: started + timeout });
    const generation = runGeneration(current);
    const ctx: Omit<DeliveryContext, 'signal'> = {
      projectId: this.actor.projectId,
      path: this.actor.path,
      streamId: state.streamId,
      streamCreatedAt: state.createdAt,
      subscriptionKey: key,
      cursorChangedAtSourceOffset: generation,
      deliveryId: `delivery:${JSON.stringify([state.streamId, key, generation, first, last])}`,
      attempt: current.attempt + 1,
      streamMaxOffset: this.actor.durableHead,
      entry,
      sourceEvent: (offset) => this.sourceEvent(state.streamId, offset),
    };
    const outcome = await this.call(ctx, delivered, timeout);
    current = this.current(key, flight);
    if (!current) return;
    const finished = this.deps.clock.now();
    this.deps.metrics?.deliveries.inc({ action, outcome: outcome.ok ? 'ok' : outcome.kind });
    if (outcome.ok) {
      const bytes = delivered.reduce((n, d) => n + JSON.stringify(d.shaped).length, 0);
      const completion = finished - Date.parse(delivered[delivered.length - 1]!.event.createdAt);
      this.actor.subscriptions.measure(key, Math.max(0, completion), finished - started);
      this.actor.subscriptions.update({
        ...current,
        cursor: Math.max(current.cursor, cursorAfter),
        attempt: 0,
        nextAttemptAt: null,
        inflightDeadlineAt: null,
        lastError: null,
        isolate: false,
        confirmations: 0,
        confirmOffset: null,
        skipsWithoutSuccess: 0,
        bytesSent: current.bytesSent + bytes,
      });
      return;
    }
    await this.failed(key, entry, flight, { kind: outcome.kind, batchSize: delivered.length, firstOffset: first }, outcome.error);
  }

  /** A JSONata condition threw on `offset`: one audit, then an ordered failure (SEMANTICS §5.2). */
  private async conditionFailed(key: string, entry: OutboundEntry, flight: Flight, row: SubscriptionRow, offset: number, conditionError: string): Promise<void> {
    const error = cut(`filter.jsonataCondition threw on offset ${offset}: ${conditionError}`);
    await this.audit(key, row, offset, 'condition', {
      message: cut(`subscription "${key}" ${error}`),
      subscriptionKey: key,
      offset,
      error,
    });
    await this.failed(key, entry, flight, { kind: 'failing', batchSize: 1, firstOffset: offset }, error);
  }

  private async call(ctx: Omit<DeliveryContext, 'signal'>, events: DeliveredEvent[], timeoutMs: number): Promise<DeliveryOutcome> {
    const receiver = this.deps.receivers[ctx.entry.configuration.receiver.action];
    if (!receiver) {
      return { ok: false, kind: 'unavailable', error: `this server has no ${ctx.entry.configuration.receiver.action} receiver` };
    }
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<DeliveryOutcome>((resolve) => {
      timer = setTimeout(() => {
        abort.abort();
        resolve({ ok: false, kind: 'unavailable', error: `delivery timed out after ${timeoutMs} ms` });
      }, timeoutMs);
    });
    try {
      return await Promise.race([
        receiver.deliver({ ...ctx, signal: abort.signal }, events).catch(
          (error: unknown): DeliveryOutcome => ({ ok: false, kind: 'failing', error: errorText(error) }),
        ),
        timedOut,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Appends one idempotent audit line per (key, run, offset) on the source stream; answers whether it is stored. */
  private async audit(key: string, row: SubscriptionRow, offset: number, kind: string, payload: Record<string, unknown>): Promise<boolean> {
    try {
      await this.actor.append(
        [
          {
            type: EventType.errorOccurred,
            idempotencyKey: `${INTERNAL_IDEMPOTENCY_PREFIX}${kind}:${JSON.stringify([key, runGeneration(row), offset])}`,
            payload: payload as never,
          },
        ],
        'platform',
      );
      return true;
    } catch (error) {
      this.deps.log(`could not append the ${kind} audit of ${this.actor.path} subscription "${key}"`, error);
      return false;
    }
  }

  private async failed(key: string, entry: OutboundEntry, flight: Flight, failure: Failure, error: string): Promise<void> {
    const row = this.current(key, flight);
    if (!row) return;
    const lastError = cut(error);
    const now = this.deps.clock.now();
    const decision = afterFailure(row, failure, policyOf(entry), now, this.deps.random.next(), this.knobs);
    switch (decision.action) {
      case 'retry':
        this.write({
          ...row,
          attempt: decision.attempt,
          confirmations: decision.confirmations,
          confirmOffset: decision.confirmOffset,
          nextAttemptAt: decision.nextAttemptAt,
          inflightDeadlineAt: null,
          lastError,
          isolate: true,
        });
        return;
      case 'halt': {
        this.write({ ...row, attempt: decision.attempts, nextAttemptAt: null, inflightDeadlineAt: null, lastError, isolate: true });
        try {
          await this.actor.append(
            [
              {
                type: EventType.subscriptionDeliveryHalted,
                payload: { subscriptionKey: key, reason: 'delivery-failed', afterOffset: row.cursor, attempts: decision.attempts, error: lastError },
              },
            ],
            'platform',
          );
          this.deps.log(`subscription "${key}" of ${this.actor.path} halted after ${decision.attempts} attempts: ${lastError}`);
        } catch (appendError) {
          this.deps.log(`could not append the halt of ${this.actor.path} subscription "${key}"`, appendError);
          const still = this.current(key, flight);
          if (still) this.write({ ...still, nextAttemptAt: now + this.knobs.baseMs });
        }
        return;
      }
      case 'skip': {
        const audited = await this.audit(key, row, decision.offset, 'skip', {
          message: cut(`subscription "${key}" skipped offset ${decision.offset} after it failed alone ${this.knobs.skipConfirmations} times: ${lastError}`),
          subscriptionKey: key,
          offset: decision.offset,
          error: lastError,
        });
        const still = this.current(key, flight);
        if (!still) return;
        if (!audited) {
          // A skip is never applied without its durable audit (SEMANTICS §5.4): try again later.
          this.write({ ...still, nextAttemptAt: now + this.knobs.baseMs, inflightDeadlineAt: null, lastError });
          return;
        }
        this.write({
          ...still,
          cursor: Math.max(still.cursor, decision.offset),
          attempt: 0,
          confirmations: 0,
          confirmOffset: null,
          skipsWithoutSuccess: still.skipsWithoutSuccess + 1,
          nextAttemptAt: null,
          inflightDeadlineAt: null,
          lastError,
          isolate: true,
        });
        return;
      }
    }
  }
}
