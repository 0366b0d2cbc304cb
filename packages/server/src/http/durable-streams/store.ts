/**
 * The Durable Streams view of the stream service (docs/durable-streams.md "State"): the folded
 * state of each stream, kept in memory and brought up to date from the log on every use, so that
 * writes by other means (the Rivulet API, copies, another Worker isolate) are always seen.
 *
 * Writes decide against the folded state and commit with Rivulet's offset assertion (protocol
 * §4.3) on their first event: if anything else was appended since the fold, the commit is
 * refused whole, the state is brought up to date and the write decides again. Writes of one
 * process to one stream also queue behind each other, so they never refuse one another.
 *
 * Queued writes to one stream commit together where the host allows it (`batchWrites`, the Node
 * host; docs/durable-streams.md "State"): the writes that arrive while the stream's previous
 * commit is under way are decided in order, each against the state the earlier ones leave, and
 * committed as one atomic append, so they share one fsync
 * instead of taking one each. Each is answered after that commit, with the state after its own
 * events. If that append is refused other than by the offset assertion (one write's message too
 * large, say), the writes are committed one by one instead, so each gets its own answer.
 */
import { RivuletError, type CommittedEvent, type EventInput } from '@rivulet/contract';
import type { ReadOptions, StreamService } from '../../engine/service.js';
import { DELETED_TYPE, FORK_REMOVED_TYPE, parseRaw } from './messages.js';
import { configOf, emptyState, expiryMs, foldEvent, type DsState } from './state.js';

const PAGE = 500;
const CACHE_LIMIT = 10_000;
const MAX_ATTEMPTS = 50;
/** Writes decided and committed together at most (a longer queue takes several commits). */
const MAX_BATCH = 64;

/** What a write decides: the events to append and its answer once they are, or an answer alone. */
export type Decision<T> = { inputs: EventInput[]; done(state: DsState, committed: CommittedEvent[]): T } | { answer: T };

interface QueuedWrite {
  decide(state: DsState | null): Decision<unknown>;
  resolve(answer: unknown): void;
  reject(error: unknown): void;
}

export class DsStreams {
  private readonly states = new Map<string, DsState>();
  private readonly access = new Map<string, number>();
  private readonly queues = new Map<string, Promise<unknown>>();
  /** Per stream, the writes waiting for their turn, committed together when it comes. */
  private readonly batches = new Map<string, QueuedWrite[]>();

  constructor(
    readonly service: StreamService,
    private readonly now: () => number,
    /**
     * Whether queued writes commit together (see the header). Only where one request may settle
     * another's answer: workerd cancels a request that waits on work another request does, so
     * the Worker host leaves it off and each request there commits its own write.
     */
    private readonly batchWrites = false,
  ) {}

  /**
   * The stream's state, up to date with its log; null when it does not exist or has expired. An
   * expired stream is removed here (`raw` skips that: a fork reading its source's events).
   */
  load(projectId: string | null, path: string, raw = false): Promise<DsState | null> {
    return this.loadAt(keyOf(projectId, path), projectId, path, raw);
  }

  /** `load`, the stream's key already built (a write builds it once for all its steps). */
  private async loadAt(key: string, projectId: string | null, path: string, raw = false): Promise<DsState | null> {
    let state = this.states.get(key);
    for (;;) {
      const from = state?.head ?? 0;
      const page = await this.service.read(projectId, path, readQuery(from));
      if (page.streamId === null) {
        this.forget(projectId, path);
        return null;
      }
      if (state === undefined || state.streamId !== page.streamId) {
        state = emptyState(page.streamId);
        if (from !== 0) continue; // another lifetime: fold it from its start
      }
      for (const raw of page.events) foldEvent(state, parseRaw(raw));
      if (page.events.length < PAGE) {
        state.head = Math.max(state.head, page.streamMaxOffset);
        break;
      }
    }
    this.remember(key, state);
    if (raw || state.softDeleted) return state;
    const expires = expiryMs(configOf(state), Math.max(this.access.get(key) ?? 0, state.lastEventMs));
    if (expires !== null && this.now() >= expires) return (await this.remove(projectId, path, state)) ? state : null;
    return state;
  }

  /**
   * Deletes a stream (docs/durable-streams.md "Forks"): one that forks still read is only marked
   * deleted (answers true); otherwise it is destroyed, its source learns the fork is gone, and a
   * source already deleted goes too once its last fork has. Bookkeeping events are appended without
   * the offset assertion: they only add or remove a member of a set.
   */
  async remove(projectId: string | null, path: string, state: DsState): Promise<boolean> {
    if (state.forks.size > 0) {
      if (!state.softDeleted) await this.service.append(projectId, path, [{ type: DELETED_TYPE, payload: {} }]);
      state.softDeleted = true;
      return true;
    }
    await this.service.destroy(projectId, path);
    this.forget(projectId, path);
    const origin = state.config?.fork;
    if (origin !== undefined) {
      const source = await this.load(projectId, origin.from, true);
      if (source !== null) {
        await this.service.append(projectId, origin.from, [{ type: FORK_REMOVED_TYPE, payload: { path } }]);
        const after = await this.load(projectId, origin.from, true);
        if (after !== null && after.softDeleted && after.forks.size === 0) await this.remove(projectId, origin.from, after);
      }
    }
    return false;
  }

  /** A read or write renews a TTL (docs/durable-streams.md "TTL"). */
  touch(projectId: string | null, path: string): void {
    this.touchAt(keyOf(projectId, path));
  }

  private touchAt(key: string): void {
    this.access.set(key, this.now());
  }

  forget(projectId: string | null, path: string): void {
    const key = keyOf(projectId, path);
    this.states.delete(key);
    this.access.delete(key);
  }

  /**
   * Runs `fn` after every earlier write of this process to the stream has finished. A chain of
   * promises on purpose: each caller registers its own continuation, and workerd ties I/O to the
   * request that starts it, so one loop running every queued write (tried; docs/durable-streams.md
   * "Speed") fails the writes of the requests it did not start.
   */
  exclusive<T>(projectId: string | null, path: string, fn: () => Promise<T>): Promise<T> {
    return this.exclusiveAt(keyOf(projectId, path), fn);
  }

  /**
   * `exclusive` by key. With nothing queued, `fn` starts at once (no turn of the microtask queue
   * waiting on an already settled promise); the queue's entry is cleared when the last write
   * queued settles (docs/durable-streams.md "Speed", per-request CPU).
   */
  private exclusiveAt<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.queues.get(key);
    const run = before === undefined ? start(fn) : before.then(fn, fn);
    const clear = (): void => {
      if (this.queues.get(key) === settled) this.queues.delete(key);
    };
    const settled: Promise<void> = run.then(clear, clear);
    this.queues.set(key, settled);
    return run;
  }

  /**
   * Decides and commits a write: `decide` sees the up-to-date state and answers the events to
   * append (or a final answer without any). Decided again when the log moved on in between. A
   * write that waits for the stream's queue joins the writes waiting with it (see the header).
   */
  write<T>(projectId: string | null, path: string, decide: (state: DsState | null) => Decision<T>): Promise<T> {
    const key = keyOf(projectId, path);
    // Nothing queued for the stream (one writer, the usual case): no batch to gather it into.
    if (!this.batchWrites || !this.queues.has(key)) return this.exclusiveAt(key, () => this.writeAlone(key, projectId, path, decide));
    return new Promise<T>((resolve, reject) => {
      const queued: QueuedWrite = { decide, resolve: resolve as (answer: unknown) => void, reject };
      const waiting = this.batches.get(key);
      if (waiting !== undefined && waiting.length < MAX_BATCH) {
        waiting.push(queued);
        return;
      }
      const batch = [queued];
      this.batches.set(key, batch);
      void this.exclusiveAt(key, async () => {
        // From here on, later writes wait for the next turn.
        if (this.batches.get(key) === batch) this.batches.delete(key);
        if (batch.length > 1 && (await this.writeTogether(key, projectId, path, batch).catch(() => false))) return;
        for (const write of batch) await this.writeAlone(key, projectId, path, write.decide).then(write.resolve, write.reject);
      });
    });
  }

  private async writeAlone<T>(key: string, projectId: string | null, path: string, decide: (state: DsState | null) => Decision<T>): Promise<T> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const state = await this.loadAt(key, projectId, path);
      const decision = decide(state);
      if ('answer' in decision) return decision.answer;
      const inputs = asserted(decision.inputs, state === null ? 2 : state.head + 1);
      const committed = await this.appendUnlessMoved(projectId, path, inputs, attempt);
      if (!committed) continue;
      const folded = state === null ? await this.loadCreated(key, projectId, path) : foldCommitted(state, committed);
      this.touchAt(key);
      return decision.done(folded, committed);
    }
    throw new RivuletError('UNAVAILABLE', 'the stream kept changing while this write was decided: try again');
  }

  /**
   * Appends `inputs`, whose first names the offset it expects; undefined when something else was
   * appended since the fold (CONFLICT), after giving it a turn to commit: the caller folds again.
   */
  private async appendUnlessMoved(projectId: string | null, path: string, inputs: EventInput[], attempt: number): Promise<CommittedEvent[] | undefined> {
    try {
      return await this.service.append(projectId, path, inputs);
    } catch (error) {
      if (!isConflict(error)) throw error;
      await pause(attempt);
      return undefined;
    }
  }

  /**
   * Decides `writes` in order, each against the state the earlier ones leave, and commits their
   * events as one append; answers them all and returns true, or returns false having answered
   * none (the stream does not exist yet, or the append was refused other than by the assertion).
   */
  private async writeTogether(key: string, projectId: string | null, path: string, writes: readonly QueuedWrite[]): Promise<boolean> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const state = await this.loadAt(key, projectId, path);
      if (state === null) return false;
      // Decided against a copy: what the earlier writes would append is folded into it first.
      const ahead = copyState(state);
      const createdAt = new Date(this.now()).toISOString();
      const decided: Array<{ write: QueuedWrite; decision: Decision<unknown> }> = [];
      const inputs: EventInput[] = [];
      for (const write of writes) {
        const decision = write.decide(ahead);
        decided.push({ write, decision });
        if ('answer' in decision) continue;
        for (const input of decision.inputs) {
          const payload = input.payload as Record<string, unknown> | undefined;
          foldEvent(ahead, { offset: ahead.head + 1, type: input.type, createdAt, payload, metadata: input.metadata as Record<string, unknown> | undefined });
          inputs.push(input);
        }
      }
      let committed: CommittedEvent[] = [];
      if (inputs.length > 0) {
        inputs[0] = withOffset(inputs[0]!, state.head + 1);
        let appended: CommittedEvent[] | undefined;
        try {
          appended = await this.appendUnlessMoved(projectId, path, inputs, attempt);
        } catch {
          return false;
        }
        if (!appended) continue;
        committed = appended;
        // Committed: from here on nothing may fall back to writing them one by one.
        this.touchAt(key);
      }
      // Answered in order, each with the state after its own events.
      let at = 0;
      for (const { write, decision } of decided) {
        if ('answer' in decision) {
          write.resolve(decision.answer);
          continue;
        }
        const own = committed.slice(at, at + decision.inputs.length);
        at += own.length;
        for (const event of own) foldEvent(state, event);
        try {
          write.resolve(decision.done(state, own));
        } catch (error) {
          write.reject(error);
        }
      }
      for (const event of committed.slice(at)) foldEvent(state, event);
      return true;
    }
    return false;
  }

  /** A new lifetime, just written: folded from the log (its created event and what was written). */
  private async loadCreated(key: string, projectId: string | null, path: string): Promise<DsState> {
    const loaded = await this.loadAt(key, projectId, path);
    if (loaded === null) throw new RivuletError('UNAVAILABLE', 'the stream was destroyed while it was written');
    return loaded;
  }

  private remember(key: string, state: DsState): void {
    this.states.delete(key);
    this.states.set(key, state);
    if (this.states.size > CACHE_LIMIT) {
      const oldest = this.states.keys().next().value as string;
      this.states.delete(oldest);
      this.access.delete(oldest);
    }
  }
}

/** `fn()`, a synchronous throw turned into a rejection (as `then` would have). */
function start<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (error) {
    return Promise.reject(error);
  }
}

function isConflict(error: unknown): boolean {
  return error instanceof RivuletError && error.code === 'CONFLICT';
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function foldCommitted(state: DsState, committed: readonly CommittedEvent[]): DsState {
  for (const event of committed) foldEvent(state, event);
  return state;
}

/** An input with the offset it asserts (protocol §4.3), built without an object spread. */
function withOffset(input: EventInput, offset: number): EventInput {
  const out: EventInput = { type: input.type };
  if (input.payload !== undefined) out.payload = input.payload;
  if (input.metadata !== undefined) out.metadata = input.metadata;
  if (input.idempotencyKey !== undefined) out.idempotencyKey = input.idempotencyKey;
  if (input.ephemeral !== undefined) out.ephemeral = input.ephemeral;
  out.offset = offset;
  if (input.source !== undefined) out.source = input.source;
  return out;
}

/** `inputs`, the first asserting `offset`. */
function asserted(inputs: readonly EventInput[], offset: number): EventInput[] {
  const out = inputs.slice();
  out[0] = withOffset(inputs[0]!, offset);
  return out;
}

/** A copy of a state that folding can change without changing the original. */
function copyState(state: DsState): DsState {
  return { ...state, producers: new Map(state.producers), forks: new Set(state.forks) };
}

/**
 * The query of `load`'s read, naming `beforeOffset` and `ephemeralSinceMs` as undefined (no bound;
 * the engine sets the second itself). The Node host's actor builds its range as `{ ...query,
 * beforeOffset, ephemeralSinceMs }`: over keys the query already has, V8 copies it in tens of ns;
 * with new keys it takes a slow path of about 2 µs, which this read, made before every write, paid
 * (docs/performance.md "The Durable Streams load read names every key").
 */
function readQuery(afterOffset: number): ReadOptions & { ephemeralSinceMs: undefined } {
  return { afterOffset, beforeOffset: undefined, limit: PAGE, includeEphemeral: false, ephemeralSinceMs: undefined };
}

function keyOf(projectId: string | null, path: string): string {
  return `${projectId ?? ''}\u0000${path}`;
}
