/**
 * Delivery to hosted processors (`processor-wake`, protocol §20), one driver per
 * source stream, run by that stream's sender (sender.ts routes processor-wake rows here), whose
 * SendLoop (send-loop.ts) it takes.
 *
 * With no hosted connection for the key and a matching event after the last known checkpoint, the
 * driver WAKES the processor: it evaluates the expression from the source project's root and calls
 * it with `{stream: {projectId, path, streamId, streamMaxOffset}, subscriptionKey}`. The answer
 * `{streamId, checkpointOffset, processEventBatch}` is validated (core/processor-wake.ts) and opens
 * a *hosted* connection keyed by the subscription key (runtime.connections[key], kind "hosted").
 * The processor owns its checkpoint: the runtime row's cursor follows the checkpoint it answered.
 *
 * Then ONE matching event per batch from the checkpoint on (filter applied, never ephemeral, never
 * transformed). The batch call itself is not awaited for its result (a processor may append to its
 * own stream while folding): the result arrives through the batch's `reportDeliveryResult`. A
 * checkpoint that grew is progress; an error, a checkpoint that did not grow, no report within the
 * delivery timeout, or a lost connection go through the same ladder as every delivery (the
 * loop's failures.ts): error → failing, `retryable: false` → fatal, timeout / disconnect / no host
 * → unavailable (backoff, never a skip; processor-wake always halts at the limit). A lost or timed
 * out connection is dropped, so the next attempt wakes again and learns the checkpoint afresh.
 *
 * A caught-up connection is closed after `processorIdleMs` without a batch and woken again by the
 * next matching event. Hosted connections append no connection facts: a fact would be a matching
 * event of an unfiltered processor, and every idle teardown would wake it again.
 */
import {
  type CommittedEvent,
  type ConnectionRuntimeState,
  type CoreState,
  type OutboundEntry,
  type ProcessorWakeRequest,
} from '@rivulet/contract';
import type { FailureKind } from '../../core/ladder.js';
import { judgeWakeAnswer } from '../../core/processor-wake.js';
import { succeeded, type SubscriptionRow } from '../../core/repair.js';
import { committedJson } from '../event-json.js';
import { errorText } from '../receivers/receiver.js';
import { recordAttempt } from './attempt-record.js';
import { collectBatch, passOver } from './collect.js';
import { callBatch, type Hosted } from './processor-batch.js';
import { within, type WakeOutcome } from './processor-port.js';
import { ReadAhead, type Owed } from './read-ahead.js';
import type { Flight, SendLoop } from './send-loop.js';

const ONE = { maxEvents: 1, maxBytes: Number.MAX_SAFE_INTEGER, scanRows: 1000 } as const;

export class ProcessorDriver {
  private readonly hosted = new Map<string, Hosted>();
  /** Matching events read a page at a time and sent one per batch (valid per run and cursor). */
  private readonly readAhead: ReadAhead;
  private readonly detachView: () => void;
  private stopWatch: (() => void) | undefined;
  private closedForGood = false;

  constructor(private readonly loop: SendLoop) {
    this.readAhead = new ReadAhead(loop.actor);
    this.detachView = loop.actor.addConnectionView(() => this.view());
  }

  /** Hosted connections currently open (tests, diagnostics). */
  get connections(): number {
    return this.hosted.size;
  }

  /**
   * One look at a processor-wake row that is not halted, not in flight and not backing off (the
   * sender checked those). Starts a step when something is owed; answers when it wants to be looked
   * at again (the idle teardown of a caught-up connection), or Infinity.
   */
  check(row: SubscriptionRow, entry: OutboundEntry, now: number): number {
    const hosted = this.hosted.get(row.key);
    const owed = row.cursor < this.loop.actor.durableHead || row.inflightDeadlineAt !== null;
    if (owed) {
      void this.step(row.key, entry);
      return Number.POSITIVE_INFINITY;
    }
    if (!hosted) return Number.POSITIVE_INFINITY;
    const due = hosted.lastActiveAt + this.loop.config.processorIdleMs;
    if (now < due) return due;
    this.drop(row.key, hosted);
    return Number.POSITIVE_INFINITY;
  }

  /** Closes the connections whose subscription is gone, halted, or of another run or lifetime. */
  sweep(state: CoreState | null): void {
    this.readAhead.retain((key) => state?.subscriptions.outbound.byKey[key]?.configuration.receiver.action === 'processor-wake');
    for (const [key, hosted] of [...this.hosted]) {
      const entry = state?.subscriptions.outbound.byKey[key];
      const row = state ? this.loop.actor.subscriptions.get(key) : undefined;
      const keep =
        state !== null &&
        entry?.configuration.receiver.action === 'processor-wake' &&
        row !== undefined &&
        !row.halted &&
        this.loop.runOf(state.streamId, row) === hosted.run;
      if (!keep) this.drop(key, hosted);
    }
  }

  /**
   * A processor host registered: processor-wake rows that back off without a connection (their
   * host was away) are due now rather than at the end of their backoff. The attempt count stays.
   */
  expedite(now: number): boolean {
    const state = this.loop.actor.coreState;
    if (!state) return false;
    let any = false;
    for (const row of [...this.loop.actor.subscriptions.all()]) {
      const entry = state.subscriptions.outbound.byKey[row.key];
      if (entry?.configuration.receiver.action !== 'processor-wake' || row.halted || this.hosted.has(row.key)) continue;
      if (this.loop.flights.has(row.key) || row.nextAttemptAt === null || row.nextAttemptAt <= now) continue;
      this.loop.write({ ...row, nextAttemptAt: now });
      any = true;
    }
    return any;
  }

  /** runtime.connections entries of the open hosted connections (protocol §20.6). */
  view(): Record<string, ConnectionRuntimeState> {
    const out: Record<string, ConnectionRuntimeState> = {};
    const head = this.loop.actor.durableHead;
    for (const [key, hosted] of this.hosted) {
      const through = this.loop.actor.subscriptions.get(key)?.cursor ?? hosted.checkpoint;
      out[key] = {
        kind: 'hosted',
        startedAt: hosted.startedAt,
        deliveredThroughOffset: through,
        lag: Math.max(0, head - through),
        batchesSent: hosted.batchesSent,
        eventsSent: hosted.eventsSent,
      };
    }
    return out;
  }

  /** Closes every connection for good (the sender closed). */
  close(): void {
    this.closedForGood = true;
    this.readAhead.clear();
    for (const [key, hosted] of [...this.hosted]) this.drop(key, hosted);
    this.detachView();
  }

  private drop(key: string, hosted: Hosted): void {
    if (!hosted.closed) {
      hosted.closed = true;
      hosted.pending?.finish({ kind: 'lost', failure: { kind: 'unavailable', error: 'the hosted connection was closed' } });
      hosted.callable.close();
    }
    if (this.hosted.get(key) === hosted) this.hosted.delete(key);
    if (this.hosted.size === 0) {
      this.stopWatch?.();
      this.stopWatch = undefined;
    }
  }

  private open(key: string, hosted: Hosted): void {
    const previous = this.hosted.get(key);
    if (previous) this.drop(key, previous);
    this.hosted.set(key, hosted);
    // A destroyed stream ends its hosted connections at once (its rows went with it).
    this.stopWatch ??= this.loop.actor.watch({
      onEvents: () => undefined,
      onDestroyed: () => {
        this.stopWatch = undefined;
        for (const [k, h] of [...this.hosted]) this.drop(k, h);
      },
    }).stop;
  }

  private async step(key: string, entry: OutboundEntry): Promise<void> {
    const { loop } = this;
    const row = loop.actor.subscriptions.get(key)!;
    const flight: Flight = { run: loop.runOf(loop.actor.coreState!.streamId, row) };
    loop.flights.set(key, flight);
    try {
      await this.stepOnce(key, entry, flight);
    } catch (error) {
      loop.log(`processor delivery of ${loop.actor.path} subscription "${key}" failed unexpectedly`, error);
      const now = loop.current(key, flight);
      if (now) {
        await loop.failures
          .failed(key, entry, flight, { kind: 'unavailable', batchSize: 1, firstOffset: now.cursor + 1 }, `internal error: ${errorText(error)}`)
          .catch((again: unknown) => loop.log(`could not record the failure of ${loop.actor.path} subscription "${key}"`, again));
      }
    } finally {
      if (loop.flights.get(key) === flight) loop.flights.delete(key);
      loop.recheck();
    }
  }

  /** Handles a read that delivers nothing; answers the event to send otherwise. */
  private async owed(key: string, entry: OutboundEntry, flight: Flight, collected: Owed): Promise<CommittedEvent | undefined> {
    const row = this.loop.current(key, flight);
    if (!row) return undefined;
    if (collected.kind !== 'none' && collected.events.length > 0) return collected.events[0];
    if (collected.kind === 'condition-error') {
      await this.loop.failures.conditionFailed(key, entry, flight, row, collected.failingOffset, collected.error);
      return undefined;
    }
    passOver(this.loop.actor, (r) => this.loop.write(r), row, collected.scannedTo);
    return undefined;
  }

  private live(key: string, run: string): Hosted | undefined {
    const hosted = this.hosted.get(key);
    return hosted && !hosted.closed && hosted.run === run ? hosted : undefined;
  }

  private async stepOnce(key: string, entry: OutboundEntry, flight: Flight): Promise<void> {
    const { loop } = this;
    let hosted = this.live(key, flight.run);
    if (!hosted) {
      // Wake only when a matching event follows the last known checkpoint.
      const row = loop.current(key, flight);
      if (!row) return;
      const first = await this.owed(key, entry, flight, await collectBatch(loop.actor, entry, row.cursor, ONE));
      if (!first) return;
      hosted = await this.wake(key, entry, flight, first.offset);
      if (!hosted) return;
    }
    const row = loop.current(key, flight);
    if (!row) return;
    const event = await this.owed(key, entry, flight, await this.readAhead.next(key, flight.run, entry, row.cursor));
    if (!event) return;
    await this.send(key, entry, flight, hosted, event);
  }

  private async wake(key: string, entry: OutboundEntry, flight: Flight, owed: number): Promise<Hosted | undefined> {
    const { loop } = this;
    const receiver = entry.configuration.receiver;
    let row = loop.current(key, flight)!;
    const wakeStarted = loop.clock.now();
    const fail = (kind: FailureKind, error: string) => {
      loop.metrics?.deliveries.inc({ action: 'processor-wake', outcome: kind });
      // A wake that fails is an attempt at the event it was for (protocol §22.2).
      recordAttempt(loop, key, row, {
        startedMs: wakeStarted,
        attempt: row.attempt + 1,
        fromOffset: owed,
        toOffset: owed,
        outcome: kind === 'unavailable' ? 'unavailable' : 'failed',
        error,
        durationMs: loop.clock.now() - wakeStarted,
      });
      return loop.failures.failed(key, entry, flight, { kind, batchSize: 1, firstOffset: row.cursor + 1 }, error);
    };
    if (!loop.processorWaker || receiver.action !== 'processor-wake') {
      await fail('unavailable', 'this server has no processor-wake receiver');
      return undefined;
    }
    const state = loop.actor.coreState!;
    const timeout = loop.config.deliveryTimeoutMs;
    // The watchdog is stored before the call leaves (protocol §12.7).
    loop.write({ ...row, inflightDeadlineAt: loop.clock.now() + timeout });
    const request: ProcessorWakeRequest = {
      stream: { projectId: loop.actor.projectId, path: loop.actor.path, streamId: state.streamId, streamMaxOffset: loop.actor.durableHead },
      subscriptionKey: key,
    };
    const outcome = await within(
      loop.timer,
      loop.processorWaker.wake(loop.actor.projectId, receiver.expression, request),
      timeout,
      (): WakeOutcome => ({ ok: false, kind: 'unavailable', error: `the processor did not answer the wake within ${timeout} ms` }),
      (late) => {
        if (late.ok) late.callable?.close();
      },
    );
    const now = loop.current(key, flight);
    if (!now || this.closedForGood) {
      if (outcome.ok) outcome.callable?.close();
      return undefined;
    }
    row = now;
    if (!outcome.ok) {
      await fail(outcome.kind, outcome.error);
      return undefined;
    }
    const judged = judgeWakeAnswer(outcome.answer, outcome.callable !== undefined, { streamId: state.streamId, head: loop.actor.durableHead });
    if (!judged.ok || !outcome.callable) {
      outcome.callable?.close();
      await fail('failing', judged.ok ? 'the processor answered the wake without a processEventBatch function' : judged.error);
      return undefined;
    }
    const started = loop.clock.now();
    const hosted: Hosted = {
      run: flight.run,
      callable: outcome.callable,
      checkpoint: judged.checkpoint,
      startedAt: new Date(started).toISOString(),
      batchesSent: 0,
      eventsSent: 0,
      lastActiveAt: started,
      pending: null,
      closed: false,
    };
    this.open(key, hosted);
    outcome.callable.onBroken((error) => {
      if (hosted.closed) return;
      hosted.pending?.finish({ kind: 'lost', failure: { kind: 'unavailable', error: `the processor host disconnected: ${error}` } });
      this.drop(key, hosted);
      loop.poke();
    });
    // The processor owns its checkpoint: the row follows it (down as well, when the host lost state).
    loop.write({ ...row, cursor: judged.checkpoint, inflightDeadlineAt: null });
    return hosted;
  }

  private async send(key: string, entry: OutboundEntry, flight: Flight, hosted: Hosted, event: CommittedEvent): Promise<void> {
    const { loop } = this;
    let row = loop.current(key, flight)!;
    const state = loop.actor.coreState!;
    const timeout = loop.config.deliveryTimeoutMs;
    const started = loop.clock.now();
    loop.write({ ...row, inflightDeadlineAt: started + timeout });
    hosted.batchesSent++;
    hosted.eventsSent++;
    hosted.lastActiveAt = started;
    const checkpoint = hosted.checkpoint;
    const outcome = await callBatch(
      hosted,
      { projectId: loop.actor.projectId, path: loop.actor.path, streamId: state.streamId, subscriptionKey: key, streamMaxOffset: loop.actor.durableHead },
      event,
      { checkpoint, head: () => loop.actor.durableHead },
      timeout,
      loop.timer,
    );
    const now = loop.current(key, flight);
    if (!now) return;
    row = now;
    const finished = loop.clock.now();
    hosted.lastActiveAt = finished;
    const attempt = { startedMs: started, attempt: row.attempt + 1, fromOffset: event.offset, toOffset: event.offset, durationMs: finished - started };
    if (outcome.kind === 'judged' && outcome.judged.kind === 'progress') {
      loop.metrics?.deliveries.inc({ action: 'processor-wake', outcome: 'ok' });
      recordAttempt(loop, key, row, { ...attempt, outcome: 'ok' });
      hosted.checkpoint = outcome.judged.checkpoint;
      const completion = Math.max(0, finished - Date.parse(event.createdAt));
      loop.actor.subscriptions.measure(key, completion, finished - started);
      loop.metrics?.deliveryLatency.observe(completion / 1000, { action: 'processor-wake' });
      loop.actor.subscriptions.update(succeeded(row, outcome.judged.checkpoint, committedJson(event).length));
      return;
    }
    const failure: { kind: FailureKind; error: string } =
      outcome.kind === 'judged' && outcome.judged.kind === 'failure'
        ? { kind: outcome.judged.failure, error: outcome.judged.error }
        : outcome.kind === 'lost'
          ? outcome.failure
          : { kind: 'failing', error: 'unexpected report' };
    loop.metrics?.deliveries.inc({ action: 'processor-wake', outcome: failure.kind });
    recordAttempt(loop, key, row, { ...attempt, outcome: failure.kind === 'unavailable' ? 'unavailable' : 'failed', error: failure.error });
    // A connection that timed out or broke is dropped: the next attempt wakes again and learns the
    // checkpoint afresh (the host may have committed the event before it went quiet).
    if (failure.kind === 'unavailable') this.drop(key, hosted);
    await loop.failures.failed(key, entry, flight, { kind: failure.kind, batchSize: 1, firstOffset: event.offset }, failure.error);
  }
}
