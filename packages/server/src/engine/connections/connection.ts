/**
 * One live connection (protocol §19.3): a callback that receives the matching events
 * of one stream in batches, replay first and then live, with no gap.
 *
 * - A live listener of the actor: after each durable commit it gets the new events synchronously
 *   and only filters them by type and queues them, so nothing ever waits for its callback.
 * - One loop per connection awaits the callback one batch at a time; replay pages are read as the
 *   loop gets to them. Falling behind the backlog bound closes it with `backlog-exceeded`.
 * - A condition that throws delivers the healthy prefix, then closes with `delivery-failed`; so
 *   does a callback that rejects.
 */
import type { CommittedEvent, ConnectionBatch, ConnectionClosed, ConnectionCloseReason, ConnectionRuntimeState, CoreState } from '@rivulet/contract';
import { conditionMatches, typeMatches } from '../../core/filter.js';
import type { Timer } from '../../ports/timer.js';
import type { StreamActor } from '../actor.js';
import { committedJson } from '../event-json.js';
import type { LiveListener } from '../live.js';
import { Backlog } from './backlog.js';
import { closedFact, errorText, type BatchCallback, type ConnectionLimits, type ConnectionSpec } from './connection-spec.js';

/** What a connection needs of the set that holds it. */
export interface ConnectionOwner {
  /** Frees the key if this connection still holds it. */
  release(connection: LiveConnection): void;
  log(message: string, error?: unknown): void;
}

interface Batch {
  body: ConnectionBatch;
  /** Every matching event at or below this offset is in this batch or an earlier one. */
  through: number;
}

const REPLAY_PAGE = 500;

export class LiveConnection implements LiveListener {
  readonly startedAt: string;
  readonly closed: Promise<ConnectionClosed>;
  private resolveClosed!: (outcome: ConnectionClosed) => void;
  private outcome: ConnectionClosed | null = null;
  private closing: Promise<void> = Promise.resolve();
  private readonly onCloseHooks: Array<(outcome: ConnectionClosed) => void> = [];
  private stopWatching: (() => void) | null = null;

  /** The stream as this connection last heard of it: head, state at that head, lifetime. */
  private head = 0;
  private state: CoreState | null = null;
  private streamId: string | null = null;

  /** Offsets of the facts its own opening appended (never delivered to it). */
  private readonly ownFacts = new Set<number>();
  /**
   * Live events at or below this offset are not this connection's: they were durable before it
   * registered (and are replayed, or predate it). Everything published after its registration is.
   */
  private liveAfter = 0;
  private replayCursor = 0;
  private replayUpTo = 0;
  /** The offset of its connection-opened fact. */
  openedAt = 0;

  private readonly pending = new Backlog();
  private stateDirty = false;
  private firstSent = false;
  private inFlight = false;
  private signalled = false;
  private wake: (() => void) | null = null;
  /** A failure found while building the batch in flight: close with it once that batch is delivered. */
  private failure: string | null = null;

  private deliveredThrough = 0;
  private batchesSent = 0;
  private eventsSent = 0;
  /** Events of a requested type this connection examined (waitForEvent's timeout message). */
  candidates = 0;

  constructor(
    readonly actor: StreamActor,
    readonly spec: ConnectionSpec,
    private readonly callback: BatchCallback,
    private readonly owner: ConnectionOwner,
    private readonly limits: ConnectionLimits,
    now: number,
    private readonly timer: Timer,
  ) {
    this.startedAt = new Date(now).toISOString();
    this.closed = new Promise((resolve) => {
      this.resolveClosed = resolve;
    });
  }

  /** A turn of the event loop, so that pending I/O runs between replay pages. */
  private yieldToIo(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.timer.set(0, resolve);
    });
  }

  get key(): string {
    return this.spec.key;
  }

  get isClosed(): boolean {
    return this.outcome !== null;
  }

  /** Runs once when the connection closes, whatever the reason. */
  onClose(hook: (outcome: ConnectionClosed) => void): void {
    if (this.outcome) hook(this.outcome);
    else this.onCloseHooks.push(hook);
  }

  /**
   * Called inside the synchronous section that committed the opening facts: registers the live
   * listener, which answers the durable head. Replay covers (replayAfterOffset, that head]; every
   * event published after it (committed before or after the facts, ephemeral ones included) comes
   * live. A replaced connection stopped listening in the same section, so each event published
   * around a replacement reaches exactly one of the two listeners.
   */
  attach(facts: readonly CommittedEvent[]): void {
    const watch = this.actor.watch(this);
    this.stopWatching = watch.stop;
    this.head = watch.head;
    this.state = watch.state;
    this.streamId = watch.state?.streamId ?? null;
    for (const fact of facts) this.ownFacts.add(fact.offset);
    this.openedAt = facts[facts.length - 1]!.offset;
    const replay = this.spec.events ? this.spec.replayAfterOffset : undefined;
    this.liveAfter = Math.max(watch.head, replay ?? 0);
    this.deliveredThrough = replay ?? watch.head;
    if (replay !== undefined) {
      this.replayCursor = replay;
      this.replayUpTo = watch.head;
    }
  }

  /** Starts the delivery loop (the first batch goes at once). */
  start(): void {
    void this.run();
  }

  // ------------------------------------------------------------------ live listener

  onEvents(events: readonly CommittedEvent[], state: CoreState): void {
    if (this.outcome) return;
    this.head = events[events.length - 1]!.offset;
    this.state = state;
    this.streamId = state.streamId;
    let queued = false;
    for (const event of events) {
      if (event.offset <= this.liveAfter || this.ownFacts.has(event.offset)) continue;
      if (!typeMatches(this.spec.filter, event.type)) continue;
      if (!this.spec.events) {
        // State only: an ephemeral event changes no state.
        if (!event.ephemeral) this.stateDirty = queued = true;
        continue;
      }
      this.pending.push(event);
      queued = true;
    }
    const overflow = this.pending.overflow(this.limits);
    if (overflow !== null) {
      void this.close('backlog-exceeded', overflow);
      return;
    }
    if (queued) this.poke();
  }

  onDestroyed(): void {
    // The listener is already removed; no fact is appended (it would start a new lifetime).
    this.stopWatching = null;
    void this.close('destroyed', 'the stream was destroyed');
  }

  // ------------------------------------------------------------------ delivery

  private poke(): void {
    this.signalled = true;
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  private async run(): Promise<void> {
    try {
      while (!this.outcome) {
        this.signalled = false;
        const batch = await this.nextBatch();
        if (this.outcome) return;
        if (batch === null) {
          if (this.failure !== null) {
            void this.close('delivery-failed', this.failure);
            return;
          }
          if (!this.signalled) {
            await new Promise<void>((resolve) => {
              this.wake = resolve;
            });
          }
          continue;
        }
        this.inFlight = true;
        try {
          await this.callback(batch.body);
        } catch (error) {
          if (!this.outcome) void this.close('delivery-failed', `processEventBatch failed: ${errorText(error)}`);
          return;
        } finally {
          this.inFlight = false;
        }
        if (this.outcome) return;
        this.batchesSent++;
        this.eventsSent += batch.body.events.length;
        this.deliveredThrough = Math.max(this.deliveredThrough, batch.through);
        if (this.failure !== null) {
          void this.close('delivery-failed', this.failure);
          return;
        }
      }
    } catch (error) {
      this.owner.log(`live connection "${this.key}" on ${this.actor.path} stopped`, error);
      if (!this.outcome) void this.close('delivery-failed', `internal error: ${errorText(error)}`);
    }
  }

  private batch(events: CommittedEvent[], through: number): Batch {
    this.firstSent = true;
    const state = this.state ?? this.actor.durableState;
    return {
      body: {
        projectId: this.actor.projectId,
        path: this.actor.path,
        streamId: this.streamId ?? state?.streamId ?? '',
        streamMaxOffset: this.head,
        events,
        state: this.spec.state ? state : null,
      },
      through,
    };
  }

  /**
   * Whether the condition matches (synchronously true without one, so that the common case costs no
   * turn of the microtask queue); a throw becomes the pending failure and answers false.
   */
  private matches(event: CommittedEvent): boolean | Promise<boolean> {
    this.candidates++;
    if (!this.spec.filter?.jsonataCondition) return true;
    return conditionMatches(this.spec.filter, event, this.actor.expressionBudget).catch((error: unknown) => {
      this.failure = `filter.jsonataCondition failed on event ${event.offset} (${event.type}): ${errorText(error)}`;
      return false;
    });
  }

  private async nextBatch(): Promise<Batch | null> {
    if (!this.spec.events) {
      if (this.firstSent && !this.stateDirty) return null;
      this.stateDirty = false;
      return this.batch([], this.head);
    }
    if (this.replayCursor < this.replayUpTo) {
      const replayed = await this.replayBatch();
      if (replayed !== null || this.outcome || this.failure !== null) return replayed;
    }
    if (this.pending.length > 0) return this.liveBatch();
    return this.firstSent ? null : this.batch([], this.deliveredThrough);
  }

  /** The next batch of replayed events, or null when the rest of the replay matched nothing. */
  private async replayBatch(): Promise<Batch | null> {
    const out: CommittedEvent[] = [];
    let bytes = 0;
    const condition = this.spec.filter?.jsonataCondition !== undefined;
    while (this.replayCursor < this.replayUpTo && !this.outcome) {
      // Without a condition every row read is delivered: read exactly what fits.
      const limit = condition ? REPLAY_PAGE : Math.min(REPLAY_PAGE, this.spec.maxDeliveryEvents - out.length);
      const page = this.actor.readRaw({
        afterOffset: this.replayCursor,
        beforeOffset: this.replayUpTo + 1,
        limit,
        includeEphemeral: false,
        eventTypes: this.spec.filter?.eventTypes,
      });
      for (const raw of page.events) {
        if (out.length > 0 && (out.length >= this.spec.maxDeliveryEvents || bytes + raw.json.length > this.limits.maxBatchBytes)) {
          return this.batch(out, this.replayCursor);
        }
        const event = JSON.parse(raw.json) as CommittedEvent;
        const checked = this.matches(event);
        const match = checked === true ? true : await checked;
        if (this.outcome) return null;
        if (this.failure !== null) return out.length > 0 ? this.batch(out, this.replayCursor) : null;
        this.replayCursor = raw.offset;
        if (match) {
          out.push(event);
          bytes += raw.json.length;
        }
      }
      // A short page is the end of the range (rows of other types are not read at all).
      if (page.events.length < limit) this.replayCursor = this.replayUpTo;
      if (out.length >= this.spec.maxDeliveryEvents) break;
      // A long run of events the condition refuses must not hold the event loop.
      if (out.length === 0 && this.replayCursor < this.replayUpTo) await this.yieldToIo();
    }
    if (this.outcome) return null;
    if (out.length > 0) return this.batch(out, this.replayCursor);
    if (!this.firstSent && this.pending.length === 0) return this.batch([], this.replayCursor);
    this.deliveredThrough = Math.max(this.deliveredThrough, this.replayCursor);
    return null;
  }

  private async liveBatch(): Promise<Batch | null> {
    const out: CommittedEvent[] = [];
    let bytes = 0;
    let through = this.deliveredThrough;
    let taken = 0;
    const { events: queue, mark } = this.pending.view();
    while (taken < queue.length) {
      const event = queue[taken]!;
      const size = committedJson(event).length;
      if (out.length > 0 && (out.length >= this.spec.maxDeliveryEvents || bytes + size > this.limits.maxBatchBytes)) break;
      const checked = this.matches(event);
      const match = checked === true ? true : await checked;
      if (this.outcome) return null;
      if (this.failure !== null) break;
      taken++;
      through = event.offset;
      if (match) {
        out.push(event);
        bytes += size;
      }
    }
    // The queue may have grown (or been cleared by close) while conditions were evaluated.
    this.pending.take(taken, mark);
    if (out.length > 0 || !this.firstSent) return this.batch(out, through);
    this.deliveredThrough = Math.max(this.deliveredThrough, through);
    if (this.failure === null && this.pending.length > 0) this.signalled = true;
    return null;
  }

  // ------------------------------------------------------------------ runtime and close

  runtime(head: number): ConnectionRuntimeState {
    const idle =
      !this.inFlight && this.firstSent && this.pending.length === 0 && !this.stateDirty && this.replayCursor >= this.replayUpTo;
    const through = idle ? Math.max(this.deliveredThrough, this.head) : this.deliveredThrough;
    return {
      kind: this.spec.kind,
      startedAt: this.startedAt,
      deliveredThroughOffset: through,
      lag: Math.max(0, head - through),
      batchesSent: this.batchesSent,
      eventsSent: this.eventsSent,
    };
  }

  /**
   * Closes the connection: stops delivery at once, frees its key, and appends `connection-closed`
   * (except when it was replaced — the replacing open appends that fact — or its stream destroyed).
   * Answers once the fact is durable; never throws.
   */
  close(reason: ConnectionCloseReason, error?: string, options: { fact?: boolean } = {}): Promise<void> {
    if (this.outcome) return this.closing;
    const outcome: ConnectionClosed = error === undefined ? { reason } : { reason, error };
    this.outcome = outcome;
    this.stopWatching?.();
    this.stopWatching = null;
    this.pending.clear();
    this.owner.release(this);
    const wake = this.wake;
    this.wake = null;
    wake?.();
    for (const hook of this.onCloseHooks.splice(0)) {
      try {
        hook(outcome);
      } catch (e) {
        this.owner.log(`a close hook of live connection "${this.key}" failed`, e);
      }
    }
    this.resolveClosed(outcome);
    const fact = options.fact ?? (reason !== 'replaced' && reason !== 'destroyed');
    this.closing = fact ? this.appendClosedFact(outcome) : Promise.resolve();
    return this.closing;
  }

  private async appendClosedFact(outcome: ConnectionClosed): Promise<void> {
    // Not inside the caller's stack: a close may start in the middle of the actor's publication.
    await Promise.resolve();
    const streamId = this.streamId;
    try {
      await this.actor.append(
        (state) => (state !== null && state.streamId === streamId ? [closedFact(this.key, outcome)] : []),
        'platform',
      );
    } catch (error) {
      this.owner.log(`could not record the close of live connection "${this.key}" on ${this.actor.path}`, error);
    }
  }
}
