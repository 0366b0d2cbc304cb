/**
 * What a stream actor (actor.ts) is given and answers beyond its own class: the dependencies the
 * registry composes it with, the hooks of one append, and the shape of a raw read.
 */
import type { CommittedEvent } from '@rivulet/contract';
import type { AppendDecision } from '../core/decide-append.js';
import type { Clock, Random } from '../ports/clock.js';
import type { Timer } from '../ports/timer.js';
import type { StreamActor } from './actor.js';
import type { EngineConfig } from './config.js';
import type { JoinedRange, RawEvent, StreamStore } from './stream-store.js';

export interface ActorDeps {
  store: StreamStore;
  clock: Clock;
  random: Random;
  /** In-memory timers (the subscription rows' deferred persistence). */
  timer: Timer;
  config: EngineConfig;
  /** Called after every durable commit of this stream (post-commit work; must not throw). */
  afterCommit?(actor: StreamActor, events: readonly CommittedEvent[], bytes: number): void;
  /** Called once an append's new events are written, before they are durable (must not throw; docs/architecture.md "Copies in the source's commit"). */
  afterWrite?(actor: StreamActor, fresh: readonly { readonly event: CommittedEvent }[]): void;
  /** Called after a destroy of an existing lifetime is durable (must not throw). */
  afterDestroy?(actor: StreamActor): void;
}

/** Called inside an append's synchronous section, right after its rows are written (before durability). */
export interface AppendHooks {
  committed?(decision: AppendDecision): void;
}

export interface ReadRawResult {
  streamId: string | null;
  streamMaxOffset: number;
  /** Committed events as stored JSON text, in offset order (empty when `joined` is given). */
  events: RawEvent[];
  /** With the read option `joined`: the events as one text instead (EventRows.rangeJoined). */
  joined?: JoinedRange;
}

