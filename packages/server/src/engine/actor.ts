/**
 * The stream actor: the single writer of one stream (protocol §4.1, §4.7).
 *
 * Every mutation runs its decide/fold/write as one synchronous section over the storage port, so
 * two requests to one stream can never interleave inside it, while different streams proceed
 * independently and share group commits. After the synchronous section the caller awaits
 * `storage.flush()`; only then is the answer given, the committed head advanced, live readers woken
 * and post-commit work scheduled (never awaited inside the append, protocol §4.1).
 *
 * Reads never go beyond the committed head, so nothing that could still be lost is ever shown.
 */
import { EventType, RivuletError, type CommittedEvent, type CoreState, type RuntimeState, type SubscriptionConfiguredPayload } from '@rivulet/contract';
import type { AppendInput, Authority } from '../core/append-input.js';
import type { AppendDecision } from '../core/decide-append.js';
import { createControlRules, type ControlRules } from '../core/subscription-rules.js';
import { utf8Length } from '../core/sizes.js';
import { expressionBudget, type ExpressionBudget } from '../core/expression-budget.js';
import type { LiveListener } from './live.js';
import type { JoinedRange, RangeQuery, StreamStore } from './stream-store.js';
import { SubscriptionRuntime } from './subscription-runtime.js';
import { decideAndWrite, type CommitContext, type Loaded } from './actor-commit.js';
import { checkFence, planCopies, validateCopyBatch, type CopyBatch } from '../core/copy-builder.js';
import type { CopyReceipt, WrittenCopyReceipt } from '../ports/directory.js';
import type { ActorDeps, AppendHooks, ReadRawResult } from './actor-deps.js';
import type { WrittenEvent } from './written-events.js';

export type { CopyReceipt } from '../ports/directory.js';
export type { ActorDeps, AppendHooks, ReadRawResult } from './actor-deps.js';

const NO_EVENTS: JoinedRange = Object.freeze({ count: 0, first: 0, last: 0, json: '' });

export class StreamActor {
  private loaded: Loaded | null = null;
  /** Highest offset known durable; reads and live readers never go past it. */
  private committedHead = 0;
  /** The core state at `committedHead` (the in-memory state may already be ahead of it). */
  private publishedState: CoreState | null = null;
  // Created on first use, like controlRules and expressionBudget: most loaded streams are quiet
  // (docs/performance.md "Per-stream state made on first use").
  private listeners: Set<LiveListener> | undefined;
  /** Keys of the live connections on this stream; subscription keys may not collide with them. */
  readonly connectionKeys = new Set<string>();
  private rules: ControlRules | undefined;
  private budget: ExpressionBudget | undefined;
  /** Bumped by destroy: post-commit work of an append from an ended lifetime is dropped. */
  private lifetime = 0;

  // The hooks decideAppend gets, made once per actor rather than once per append.
  private readonly newStreamId = (): string => this.deps.random.uuid();
  private readonly lookupIdempotent = (key: string): CommittedEvent | undefined => {
    const sid = this.loaded!.sid;
    if (sid === null) return undefined;
    let known = this.knownIdempotent;
    if (known === null && this.copyInputs !== null) {
      // Every copy carries its identity (protocol §13.2): the batch's keys in one statement, at the
      // first lookup of its section (there is none when its inserts found every key new).
      const keys = this.copyInputs.map((input) => input.idempotencyKey!);
      known = this.knownIdempotent = { asked: new Set(keys), found: this.deps.store.events.byKeys(sid, keys) };
    }
    if (known !== null && known.asked.has(key)) return known.found.get(key);
    return this.deps.store.events.byKey(sid, key);
  };
  /**
   * The copies of the synchronous section running now (receiveCopies), and their keys once looked
   * up together, so that the section's per-input lookups need no statement each; null outside it.
   */
  private copyInputs: readonly AppendInput[] | null = null;
  private knownIdempotent: { asked: ReadonlySet<string>; found: ReadonlyMap<string, CommittedEvent> } | null = null;
  private readonly normalizeControl = (input: AppendInput): AppendInput => this.controlRules.normalize(input);
  private readonly checkControl = (input: AppendInput, state: CoreState, head: number): void => this.controlRules.check(input, state, head);
  private context: CommitContext | undefined;
  private get commitContext(): CommitContext {
    const { store, config } = this.deps;
    const { projectId, path, newStreamId, lookupIdempotent, normalizeControl, checkControl } = this;
    return (this.context ??= { store, config, projectId, path, newStreamId, lookupIdempotent, normalizeControl, checkControl });
  }

  constructor(
    readonly projectId: string | null,
    readonly path: string,
    private readonly deps: ActorDeps,
  ) {}

  /** The budget every JSONata evaluation on this stream runs under (protocol §16.8). */
  get expressionBudget(): ExpressionBudget {
    const { config, clock } = this.deps;
    return (this.budget ??= expressionBudget({ timeMs: config.expressionTimeMs, memoryBytes: config.expressionMemoryBytes }, () => clock.now()));
  }

  private get controlRules(): ControlRules {
    if (this.rules) return this.rules;
    const { projectId, path, expressionBudget: expressionLimits } = this;
    const isConnectionKey = (key: string) => this.connectionKeys.has(key);
    return (this.rules = createControlRules({ projectId, path, allowPrivateWebhooks: this.deps.config.allowPrivateWebhooks, expressionLimits, isConnectionKey }));
  }

  private load(): Loaded {
    const storage = this.deps.store.storage;
    if (this.loaded && this.loaded.epoch === storage.epoch) return this.loaded;
    const row = this.deps.store.find(this.projectId, this.path);
    const state = row ? this.deps.store.stateOf(row) : null;
    const subscriptions = new SubscriptionRuntime(storage, row?.sid ?? null, this.deps.timer, this.deps.config.deliveryAttemptsKept, this.deps.store.unpersisted);
    if (row && (subscriptions.size > 0 || Object.keys(state!.subscriptions.outbound.byKey).length > 0)) {
      storage.transaction(() => subscriptions.repair(state, row.sid));
    }
    this.loaded = {
      epoch: storage.epoch,
      sid: row?.sid ?? null,
      state,
      stateBytes: state ? utf8Length(JSON.stringify(state)) : 0,
      head: row?.head ?? 0,
      checkpoint: row?.checkpoint ?? 0,
      // Lifetimes must order by createdAt (protocol §2.2, §2.5): never below this lifetime's start.
      lastCreatedMs: row ? Date.parse(row.created_at) : 0,
      lastPruneMs: 0,
      subscriptions,
      written: undefined,
    };
    this.committedHead = this.loaded.head;
    this.publishedState = state;
    return this.loaded;
  }

  /** The core state as of the last commit (null when the stream does not exist). */
  get coreState(): CoreState | null {
    return this.load().state;
  }

  get exists(): boolean {
    return this.load().sid !== null;
  }

  get head(): number {
    return this.load().head;
  }

  get durableHead(): number {
    this.load();
    return this.committedHead;
  }

  /** The core state at the durable head (what live readers have been shown). */
  get durableState(): CoreState | null {
    this.load();
    return this.publishedState;
  }

  get sid(): number | null {
    return this.load().sid;
  }

  /** Events with offsets in (after, upTo] from memory, as written (written-events.ts); undefined: read them with SQL. */
  writtenEvents(after: number, upTo: number): readonly WrittenEvent[] | undefined {
    return this.load().written?.range(after, upTo);
  }

  /** Lets go of the events held since they were written: the sender wants none of them now. */
  releaseWritten(): void {
    if (this.loaded) this.loaded.written = undefined;
  }

  /** Delivery progress rows of this stream's outbound subscriptions. */
  get subscriptions(): SubscriptionRuntime {
    return this.load().subscriptions;
  }

  get store(): StreamStore {
    return this.deps.store;
  }

  /** A subscription-configured payload as configuring it here would store it (protocol §9.3's stateless rules). */
  normalizeSubscription(payload: SubscriptionConfiguredPayload): SubscriptionConfiguredPayload {
    const input: AppendInput = { type: EventType.subscriptionConfigured, payload: payload as never };
    return this.controlRules.normalize(input).payload as unknown as SubscriptionConfiguredPayload;
  }

  /**
   * The synchronous section of an append: decide, write rows and state in one transaction, update
   * the in-memory copy. Answers the decision; the caller must await `storage.flush()` (see append).
   */
  private commitSync(
    plan: readonly AppendInput[] | ((state: CoreState | null) => readonly AppendInput[]),
    authority: Authority,
  ): AppendDecision | null {
    const loaded = this.load();
    const inputs = typeof plan === 'function' ? plan(loaded.state) : plan;
    if (inputs.length === 0) return null;
    const nowMs = Math.max(this.deps.clock.now(), loaded.lastCreatedMs);
    return decideAndWrite(this.commitContext, loaded, inputs, authority, nowMs);
  }

  /**
   * Appends a batch atomically. Answers one committed event per input (stored events for
   * idempotent repeats) once the commit is durable.
   */
  async append(
    inputs: readonly AppendInput[] | ((state: CoreState | null) => readonly AppendInput[]),
    authority: Authority,
    hooks?: AppendHooks,
  ): Promise<CommittedEvent[]> {
    let decision: AppendDecision | null;
    const lifetime = this.lifetime;
    try {
      decision = this.commitSync(inputs, authority);
    } catch (error) {
      if (error instanceof RivuletError) throw error;
      this.loaded = null;
      throw error;
    }
    if (decision !== null && decision.fresh.length > 0) {
      hooks?.committed?.(decision);
      this.deps.afterWrite?.(this, decision.fresh);
    }
    await this.durable();
    if (decision === null) return [];
    // Destroyed while the commit became durable: the events are committed (and erased again);
    // they belong to no current lifetime, so no reader or sender may see them.
    if (decision.fresh.length > 0 && lifetime === this.lifetime) {
      const fresh = decision.fresh;
      const events: CommittedEvent[] = [];
      let bytes = 0;
      for (let i = 0; i < fresh.length; i++) {
        events.push(fresh[i]!.event);
        bytes += fresh[i]!.bytes;
      }
      this.published(events, bytes, decision.state);
    }
    return decision.results;
  }

  /**
   * Receives a batch of copies from the trusted delivery path (protocol §3.5, §13.1). The fence
   * and the plan are judged inside the synchronous section, against the state they will be
   * committed on.
   */
  async receiveCopies(batch: CopyBatch): Promise<CopyReceipt> {
    const { committed, dropped } = this.startCopies(batch);
    const events = await committed;
    return { appended: events.length - (dropped > 0 ? 1 : 0), dropped };
  }

  /** receiveCopies answered once written (StreamDirectory.writeCopies); `committed` has already rejected if refused. */
  async writeCopies(batch: CopyBatch): Promise<WrittenCopyReceipt> {
    const { committed, dropped, inputs } = this.startCopies(batch);
    await Promise.race([committed, undefined]);
    return { appended: inputs - (dropped > 0 ? 1 : 0), dropped, durable: committed.then(() => undefined) };
  }

  private startCopies(batch: CopyBatch): { committed: Promise<CommittedEvent[]>; dropped: number; inputs: number } {
    validateCopyBatch(batch, this);
    if (batch.events.length === 0) return { committed: Promise.resolve([]), dropped: 0, inputs: 0 };
    let [dropped, inputs] = [0, 0];
    const committed = this.append((state) => {
      checkFence(state, batch);
      const plan = planCopies(batch, this);
      dropped = plan.dropped.length;
      inputs = plan.inputs.length;
      // Their keys are looked up, if at all, in the section that decides on them (lookupIdempotent).
      this.copyInputs = plan.inputs;
      return plan.inputs;
    }, 'platform');
    // append's synchronous section has run by now (it ends at its first await): forget the keys.
    this.copyInputs = null;
    this.knownIdempotent = null;
    return { committed, dropped, inputs };
  }

  /** Waits until everything written so far is durable; a failed group commit is UNAVAILABLE. */
  private async durable(): Promise<void> {
    try {
      await this.deps.store.storage.flush();
    } catch (error) {
      this.loaded = null;
      throw new RivuletError('UNAVAILABLE', 'storage failed to commit; the append was not stored', undefined, {
        cause: error,
      });
    }
  }

  /** Post-commit: advance the readable head, wake live readers, hand over to delivery. */
  private published(events: CommittedEvent[], bytes: number, state: CoreState): void {
    const last = events[events.length - 1]!;
    if (last.offset <= this.committedHead) return;
    const news = events[0]!.offset > this.committedHead ? events : events.filter((e) => e.offset > this.committedHead);
    this.committedHead = last.offset;
    this.publishedState = state;
    if (this.listeners !== undefined && this.listeners.size > 0) for (const listener of [...this.listeners]) listener.onEvents(news, state);
    this.deps.afterCommit?.(this, news, bytes);
  }

  /** Reads up to the committed head, never past it; with `joined` the events come as one text. */
  readRaw(q: Omit<RangeQuery, 'beforeOffset'> & { beforeOffset?: number | undefined; joined?: boolean | undefined }): ReadRawResult {
    const loaded = this.load();
    if (loaded.sid === null) return { streamId: null, streamMaxOffset: 0, events: [], ...(q.joined === true && { joined: NO_EVENTS }) };
    const before = Math.min(q.beforeOffset ?? Number.MAX_SAFE_INTEGER, this.committedHead + 1);
    const ephemeralSinceMs = q.includeEphemeral ? this.deps.clock.now() - this.deps.config.ephemeralRetentionMs : undefined;
    const range = { ...q, beforeOffset: before, ephemeralSinceMs };
    const empty = q.afterOffset + 1 >= before;
    if (q.joined === true) {
      const joined = empty ? NO_EVENTS : this.deps.store.events.rangeJoined(loaded.sid, range);
      return { streamId: loaded.state!.streamId, streamMaxOffset: this.committedHead, events: [], joined };
    }
    const events = empty ? [] : this.deps.store.events.range(loaded.sid, range);
    return { streamId: loaded.state!.streamId, streamMaxOffset: this.committedHead, events };
  }

  read(q: Omit<RangeQuery, 'beforeOffset'> & { beforeOffset?: number | undefined }): {
    streamId: string | null;
    streamMaxOffset: number;
    events: CommittedEvent[];
  } {
    const raw = this.readRaw(q);
    return { ...raw, events: raw.events.map((e) => JSON.parse(e.json) as CommittedEvent) };
  }

  runtimeState(extra?: Pick<RuntimeState, 'connections'>): RuntimeState | null {
    if (!this.exists) return null;
    const connections: RuntimeState['connections'] = {};
    for (const view of this.connectionViews ?? []) Object.assign(connections, view());
    return {
      streamMaxOffset: this.committedHead,
      subscriptions: this.load().subscriptions.view(this.committedHead),
      connections: Object.assign(connections, extra?.connections),
    };
  }

  /** Views of connections held outside the actor (hosted processor connections), merged into runtime.connections. */
  private connectionViews: Set<() => RuntimeState['connections']> | undefined;

  /** Adds a view to runtime.connections; answers the function that removes it. */
  addConnectionView(view: () => RuntimeState['connections']): () => void {
    const views = (this.connectionViews ??= new Set());
    views.add(view);
    return () => views.delete(view);
  }

  /** Erases every row; the next touch starts a new lifetime (protocol §2.5). */
  async destroy(): Promise<boolean> {
    const loaded = this.load();
    const sid = loaded.sid;
    if (sid === null) return false;
    this.deps.store.storage.transaction(() => this.deps.store.erase(sid));
    loaded.subscriptions.clear();
    this.lifetime++;
    // The next lifetime's streamCreatedAt must sort after this one's, even within the same millisecond.
    this.loaded = { ...loaded, sid: null, state: null, stateBytes: 0, head: 0, checkpoint: 0, lastCreatedMs: loaded.lastCreatedMs + 1, written: undefined };
    this.committedHead = 0;
    this.publishedState = null;
    const listeners = [...(this.listeners ?? [])];
    this.listeners = undefined;
    for (const listener of listeners) listener.onDestroyed();
    await this.durable();
    this.deps.afterDestroy?.(this);
    return true;
  }

  /**
   * Registers a live reader and answers the committed head at registration: the reader gets every
   * event committed after that offset, and nothing at or before it.
   */
  watch(listener: LiveListener): { head: number; state: CoreState | null; stop: () => void } {
    this.load();
    (this.listeners ??= new Set()).add(listener);
    return { head: this.committedHead, state: this.publishedState, stop: () => this.listeners?.delete(listener) };
  }

  get listenerCount(): number {
    return this.listeners?.size ?? 0;
  }

  /**
   * True when nothing of the actor itself needs it in memory: no live reader or connection, nothing
   * committed but not yet durable. Its subscriptions' delivery may still need it; the registry asks
   * the delivery engine about that (`canEvict`), and delivery progress kept in memory is persisted
   * when it lets go (`onEvict`).
   */
  get idle(): boolean {
    return this.listenerCount === 0 && this.connectionKeys.size === 0 && this.committedHead === (this.loaded?.head ?? this.committedHead);
  }
}

