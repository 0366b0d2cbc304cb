/**
 * The send loop of one source stream (protocol §12.2): level-triggered. After every commit and on
 * every alarm, each subscription row is looked at: halted, in flight or backing off rows wait;
 * any other row that is behind the head gets one delivery started (never awaited by the caller).
 * One alarm is re-armed at the earliest owed time and cleared when nothing is owed, so a quiet or
 * halted stream never wakes itself.
 *
 * A delivery belongs to a run (configuration offset, cursor-set offset). Its result is applied only
 * if the row is still on that run and the delivery is still the current one: a late success of a
 * superseded run cannot move the newer cursor, and a late failure cannot delay or fail it
 * (protocol §12.4).
 *
 * Here: the loop, the flights, the watchdog and the call. What a delivery sends is prepare.ts (with
 * read-ahead.ts for webhooks); what a failure does to the row is failures.ts; processor-wake rows
 * are processor-driver.ts's. The sender is the one SendLoop (send-loop.ts) these helpers share.
 */
import type { CommittedEvent, OutboundEntry } from '@rivulet/contract';
import { ladderDefaults, type LadderKnobs } from '../../core/ladder.js';
import { succeeded, type SubscriptionRow } from '../../core/repair.js';
import type { Clock, Random } from '../../ports/clock.js';
import type { AlarmFactory, StreamAlarm, Timer } from '../../ports/timer.js';
import type { StreamActor } from '../actor.js';
import type { EngineConfig } from '../config.js';
import type { ServerMetrics } from '../metrics.js';
import { errorText, type DeliveryOutcome, type Receivers } from '../receivers/receiver.js';
import { outcomeOf, recordAttempt } from './attempt-record.js';
import { DeliveryFailures } from './failures.js';
import { FlightCalls } from './flight-calls.js';
import { DeliveryPreparer, readsAhead, type Prepared } from './prepare.js';
import { passOver, QuietIndex } from './pass-over.js';
import { ProcessorDriver } from './processor-driver.js';
import type { ProcessorWaker } from './processor-port.js';
import type { Flight, SendLoop } from './send-loop.js';
import { acknowledgeWhenDurable, BACKLOG_OFFSETS, WrittenThrough } from './written-through.js';

export interface SenderDeps {
  clock: Clock;
  random: Random;
  alarms: AlarmFactory;
  /** In-memory timers: the poke's next tick, a call's delivery timeout. */
  timer: Timer;
  config: EngineConfig;
  receivers: Receivers;
  metrics?: ServerMetrics | undefined;
  /** Wakes hosted processors (processor-wake); without it they are unavailable. */
  processorWaker?: ProcessorWaker | undefined;
  log(message: string, error?: unknown): void;
}

/** After one delivery: whether the same key is owed another at once, and that one if prepared. */
type Step = { again: false } | { again: true; next: Prepared | undefined };
const STOP: Step = { again: false };

/** A run is one lifetime of the source, one configuration and one cursor-set (protocol §12.1). */
const runOf = (streamId: string, row: SubscriptionRow) => `${streamId}:${row.runConfiguredAt}:${row.runCursorSetAt}`;

/** The sender is the SendLoop its helpers share (send-loop.ts). */
export class StreamSender implements SendLoop {
  readonly flights = new Map<string, Flight>();
  readonly writtenThrough = new WrittenThrough();
  private readonly alarm: StreamAlarm;
  /** The alarm is set (a retry, a deadline or an idle teardown is due at some time). */
  private armed = false;
  private queued = false;
  private closed = false;
  /** Delivery of processor-wake rows (processor-driver.ts), created with the first such row. */
  private processors: ProcessorDriver | undefined;
  readonly failures: DeliveryFailures;
  private readonly preparer: DeliveryPreparer;
  /** Which subscriptions passOver may move, and which types start copies early, for the stream's current subscriptions. */
  private quiet: QuietIndex | undefined;
  /** Copies go into the source's own storage (Receiver.durableWithSource, docs/architecture.md "Copies in the source's commit"). */
  private readonly copiesWithSource: boolean;

  constructor(
    readonly actor: StreamActor,
    private readonly deps: SenderDeps,
  ) {
    this.alarm = deps.alarms.create(() => this.check());
    this.copiesWithSource = deps.receivers['copy-to-stream']?.durableWithSource === true;
    this.failures = new DeliveryFailures(this);
    this.preparer = new DeliveryPreparer(this);
  }

  get clock(): Clock {
    return this.deps.clock;
  }

  get timer(): Timer {
    return this.deps.timer;
  }

  get random(): Random {
    return this.deps.random;
  }

  get config(): EngineConfig {
    return this.deps.config;
  }

  get metrics(): ServerMetrics | undefined {
    return this.deps.metrics;
  }

  get receivers(): Receivers {
    return this.deps.receivers;
  }

  get processorWaker(): ProcessorWaker | undefined {
    return this.deps.processorWaker;
  }

  runOf(streamId: string, row: SubscriptionRow): string {
    return runOf(streamId, row);
  }

  headFor(entry: OutboundEntry): number {
    return this.copiesWithSource && entry.configuration.receiver.action === 'copy-to-stream' ? this.actor.head : this.actor.durableHead;
  }

  /** `events` were just written (only where copies are durable with their source): a copy that may match is checked next microtask. */
  written(events: readonly { readonly event: CommittedEvent }[]): void {
    if (!this.closed && this.quietIndex()?.copyMayMatch(events)) this.recheck();
  }

  /** Of the stream's current subscriptions: a commit that changes them replaces `outbound` (actor-commit.ts repairs on it). */
  private quietIndex(): QuietIndex | undefined {
    const outbound = this.actor.coreState?.subscriptions.outbound;
    if (outbound && this.quiet?.outbound !== outbound) this.quiet = new QuietIndex(outbound);
    return outbound ? this.quiet : undefined;
  }

  log(message: string, error?: unknown): void {
    this.deps.log(message, error);
  }

  get knobs(): LadderKnobs {
    const c = this.deps.config;
    return { maxAttempts: c.maxDeliveryAttempts, baseMs: c.retryBaseMs, maxMs: c.retryMaxMs, ...ladderDefaults };
  }

  /**
   * Whether this stream's delivery needs its actor in memory: a call in flight, a hosted processor
   * connection, a retry or deadline armed, or an owed event the next check would send. A sender
   * that is not busy may be dropped with its actor (the registry's eviction): nothing is owed until
   * the stream's next commit, which loads the actor and pokes a new sender.
   */
  get busy(): boolean {
    if (this.flights.size > 0 || this.armed || this.writtenThrough.size > 0 || (this.processors?.connections ?? 0) > 0) return true;
    const state = this.actor.coreState;
    if (!state || this.closed) return false;
    for (const row of this.actor.subscriptions.all()) {
      const entry = state.subscriptions.outbound.byKey[row.key];
      if (row.halted || entry === undefined) continue;
      if (row.cursor < this.headFor(entry) || row.inflightDeadlineAt !== null || row.nextAttemptAt !== null) return true;
    }
    return false;
  }

  private get processorDriver(): ProcessorDriver {
    this.processors ??= new ProcessorDriver(this);
    return this.processors;
  }

  /** A processor host registered in this stream's project: processor rows waiting for one are due now. */
  processorHostRegistered(): void {
    if (this.processors?.expedite(this.deps.clock.now())) this.poke();
  }

  /**
   * Moves caught-up subscriptions whose event types match none of `committed` past them, without a
   * read or a delivery (pass-over.ts). Answers true when no subscription of the stream needs a
   * check for these events.
   */
  passOver(committed: readonly CommittedEvent[]): boolean {
    const quiet = this.quietIndex();
    return quiet !== undefined && passOver(quiet, this.actor.subscriptions, this.flights, committed);
  }

  /** Schedules a send check soon, outside the caller's promise chain (protocol §4.1). */
  poke(): void {
    if (this.queued || this.closed) return;
    this.queued = true;
    this.deps.timer.set(0, () => {
      this.queued = false;
      this.check();
    });
  }

  private recheckQueued = false;

  recheck(): void {
    if (this.recheckQueued || this.closed) return;
    this.recheckQueued = true;
    queueMicrotask(() => {
      this.recheckQueued = false;
      this.check();
    });
  }

  close(): void {
    this.closed = true;
    this.writtenThrough.close();
    this.armed = false;
    this.alarm.clear();
    this.processors?.close();
    this.preparer.retain();
    if (this.actor.exists) this.actor.subscriptions.persistDirty();
  }

  check(): void {
    if (this.closed) return;
    const state = this.actor.coreState;
    this.processors?.sweep(state);
    if (!state) {
      this.armed = false;
      this.alarm.clear();
      this.preparer.retain();
      return;
    }
    this.preparer.retain((key) => state.subscriptions.outbound.byKey[key] !== undefined);
    const now = this.deps.clock.now();
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
      // A stored watchdog of copies that wait for durability is cleared when they are (written-through.ts).
      const from = this.writtenThrough.cursor(row.key, runOf(state.streamId, row), row);
      if (from >= this.headFor(entry) && (row.inflightDeadlineAt === null || from > row.cursor)) continue;
      void this.deliver(row.key);
    }
    this.armed = Number.isFinite(earliest);
    if (this.armed) this.alarm.set(earliest);
    else this.alarm.clear();
    this.letWrittenGo();
  }

  /** Nothing in flight, nothing written but not yet durable: no one wants the events the actor holds (written-events.ts). */
  letWrittenGo(): void {
    if (this.flights.size === 0 && this.actor.head === this.actor.durableHead) this.actor.releaseWritten();
  }

  current(key: string, flight: Flight): SubscriptionRow | undefined {
    const row = this.actor.subscriptions.get(key);
    const streamId = this.actor.coreState?.streamId;
    if (this.closed || !row || row.halted || streamId === undefined || this.flights.get(key) !== flight) return undefined;
    return runOf(streamId, row) === flight.run ? row : undefined;
  }

  private entryOf(key: string): OutboundEntry | undefined {
    return this.actor.coreState?.subscriptions.outbound.byKey[key];
  }

  /**
   * One key's flight: one delivery, and for webhooks, while each succeeds and more is owed, the
   * next at once (what the level-triggered check would start anyway), with the next one read and
   * prepared while the previous POST is in flight.
   */
  private async deliver(key: string): Promise<void> {
    const row = this.actor.subscriptions.get(key)!;
    const flight: Flight = { run: runOf(this.actor.coreState!.streamId, row) };
    this.flights.set(key, flight);
    try {
      let step = await this.deliverOnce(key, flight, undefined);
      while (step.again) step = await this.deliverOnce(key, flight, step.next);
    } catch (error) {
      // Our own fault, not the event's: it backs off and counts towards the halt like an outage,
      // so a persistent fault ends in a visible halt instead of a quiet loop.
      this.deps.log(`delivery of ${this.actor.path} subscription "${key}" failed unexpectedly`, error);
      const now = this.current(key, flight);
      const entry = this.entryOf(key);
      if (now && entry) {
        await this.failures
          .failed(key, entry, flight, { kind: 'unavailable', batchSize: 1, firstOffset: now.cursor + 1 }, `internal error: ${errorText(error)}`)
          .catch((again: unknown) => this.deps.log(`could not record the failure of ${this.actor.path} subscription "${key}"`, again));
      }
    } finally {
      flight.calls?.end();
      if (this.flights.get(key) === flight) this.flights.delete(key);
      // The next batch may be owed at once: look again on the next microtask, not a timer tick.
      this.recheck();
    }
  }

  /**
   * Delivery progress is not durable against power loss (a restart may redo a delivery: at least
   * once), so these writes never wait for the disk (ports/storage.ts).
   */
  write(row: SubscriptionRow): void {
    this.actor.store.storage.transaction(() => this.actor.subscriptions.write(row), { durable: false });
  }

  private async deliverOnce(key: string, flight: Flight, ahead: Prepared | undefined): Promise<Step> {
    let current = this.current(key, flight);
    const entry = this.entryOf(key);
    if (!current || !entry) return STOP;
    const action = entry.configuration.receiver.action;
    // Copies written but not yet durable are read past (written-through.ts).
    const from = this.writtenThrough.cursor(key, flight.run, current);
    // A delivery prepared during the previous call was read after that call's cursor, as attempt 1.
    const usable = ahead !== undefined && ahead.cursorBefore === from && current.attempt === 0 && !current.isolate;
    const prepared = usable ? ahead : await this.preparer.prepare(key, entry, from === current.cursor ? current : { ...current, cursor: from }, flight);
    if (!prepared) return STOP;
    current = this.current(key, flight);
    if (!current) return STOP;
    const timeout = this.deps.config.deliveryTimeoutMs;
    const started = this.deps.clock.now();
    // The watchdog is stored before the call leaves (protocol §12.7): a deadline by which this call
    // will have ended. One stored earlier in this flight that still covers it is kept (a lease,
    // config.watchdogLeaseMs); otherwise it is written now, reaching up to the lease beyond.
    const deadline = started + timeout;
    if (current.inflightDeadlineAt === null || current.inflightDeadlineAt < deadline) {
      current = { ...current, inflightDeadlineAt: deadline + this.deps.config.watchdogLeaseMs };
      this.write(current);
    }
    // While the call is out, the next webhook is read and its body built (never sent before this
    // one is acknowledged: one event per POST, in order). That starts once the request is on its
    // way, or answered if the port cannot tell: on the Node host undici writes a POST on a kept-alive
    // connection only in the event loop's next check phase, and work begun at once would all run
    // before that write, delaying every POST by the preparation of the next (decision 007,
    // "Consequences").
    let sent!: () => void;
    const out = new Promise<void>((resolve) => (sent = resolve));
    const answer = this.call(flight, prepared, timeout, sent);
    answer.then(sent, sent);
    const { cursorAfter } = prepared;
    // Copies written with their source read their next batch only if they wait for this one's sync (below).
    const copyAhead = action === 'copy-to-stream' && !current.isolate;
    const next = readsAhead(entry, current)
      ? out.then(() => this.preparer.ahead(key, entry, flight, cursorAfter))
      : copyAhead && !this.copiesWithSource
        ? this.preparer.copyAhead(key, entry, flight, cursorAfter)
        : undefined;
    const outcome = await answer;
    current = this.current(key, flight);
    if (!current) return STOP;
    const finished = this.deps.clock.now();
    this.deps.metrics?.deliveries.inc({ action, outcome: outcome.ok ? 'ok' : outcome.kind });
    recordAttempt(this, key, current, {
      startedMs: started,
      attempt: prepared.ctx.attempt,
      fromOffset: prepared.delivered[0]!.event.offset,
      toOffset: prepared.delivered[prepared.delivered.length - 1]!.event.offset,
      outcome: outcomeOf(outcome, prepared.delivered.length),
      status: outcome.status,
      responseExcerpt: outcome.responseExcerpt,
      error: outcome.ok ? undefined : outcome.error,
      durationMs: finished - started,
    });
    if (!outcome.ok) {
      const failure = { kind: outcome.kind, batchSize: prepared.delivered.length, firstOffset: prepared.delivered[0]!.event.offset };
      await this.failures.failed(key, entry, flight, failure, outcome.error);
      return STOP;
    }
    const completion = Math.max(0, finished - Date.parse(prepared.delivered.at(-1)!.event.createdAt));
    this.actor.subscriptions.measure(key, completion, finished - started);
    this.deps.metrics?.deliveryLatency.observe(completion / 1000, { action });
    const cursor = Math.max(from, cursorAfter);
    if (outcome.durable !== undefined) {
      // The cursor moves once the copies are durable. A backlog waits for each batch's sync, reading
      // the next batch meanwhile; fewer owed events are copied by the check that follows, at once
      // (written-through.ts BACKLOG_OFFSETS).
      acknowledgeWhenDurable(this, key, flight.run, cursor, prepared.bytes, outcome.durable);
      if (!copyAhead || this.headFor(entry) - cursor < BACKLOG_OFFSETS) return STOP;
      const ahead = this.preparer.copyAhead(key, entry, flight, cursorAfter);
      await outcome.durable.catch(() => undefined);
      return { again: true, next: await ahead };
    }
    const done = succeeded(current, cursor, prepared.bytes);
    if (next === undefined || cursor >= this.headFor(entry)) {
      this.actor.subscriptions.update(done);
      return STOP;
    }
    // The flight goes on: the stored watchdog stays (it may cover the next call).
    this.actor.subscriptions.update({ ...done, inflightDeadlineAt: current.inflightDeadlineAt });
    return { again: true, next: await next };
  }

  /** The receiver call, ended as *unavailable* by the delivery timeout (which aborts it; flight-calls.ts); `onSent` as in ports/outbound.ts. */
  private call(flight: Flight, prepared: Prepared, timeoutMs: number, onSent: () => void): Promise<DeliveryOutcome> {
    const action = prepared.ctx.entry.configuration.receiver.action;
    const receiver = this.deps.receivers[action];
    if (!receiver) return Promise.resolve({ ok: false, kind: 'unavailable', error: `this server has no ${action} receiver` });
    const calls = (flight.calls ??= new FlightCalls(this.deps.clock, this.deps.timer, receiver.ignoresSignal !== true));
    return calls.call((signal) => (prepared.call ? prepared.call.send(signal, onSent) : receiver.deliver({ ...prepared.ctx, signal }, prepared.delivered)), timeoutMs);
  }
}
