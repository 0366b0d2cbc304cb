/**
 * `defineProcessor({slug, initialState, reduce, onEvent?})`: a hosted processor (protocol §20) —
 * a reducer whose state is always the fold of one stream's matching durable events. A processor
 * host (`serveProcessors` from `@rivulet/client/processor-host`, Node) stores each processor's
 * state with its checkpoint and is woken by `processor-wake` subscriptions.
 *
 * This module is browser-safe: defining a processor needs no Node API; hosting one does.
 */
import type { CommittedEvent } from '@rivulet/contract';
import type { ItxRoot } from './rpc.js';

export interface ProcessorEventContext<S> {
  /** The event just folded. */
  event: CommittedEvent;
  /** The state before this event. */
  previousState: S;
  /** The state after this event (what will be committed with checkpoint = event.offset). */
  state: S;
  stream: { projectId: string | null; path: string; streamId: string };
  subscriptionKey: string;
  /** The ITX root of the host's current RPC session: append to other streams from here. */
  itx: ItxRoot;
}

export interface ProcessorDefinition<S> {
  /** Names the processor within its host (1–200 characters, no whitespace). */
  readonly slug: string;
  /** The state before any event (JSON). A recreated source starts over from it. */
  readonly initialState: S;
  /**
   * Folds one event into the state. Must be deterministic and depend on nothing but its arguments
   * (the state must equal the fold of the stream's events, whenever and however often it is
   * rebuilt). It receives a fresh copy of the state and may return it modified. The result must be
   * JSON (it is stored as such).
   */
  reduce(state: S, event: CommittedEvent): S;
  /**
   * Side effects of an event (for example appending to another stream through `itx`), run after
   * `reduce` and BEFORE the new state and checkpoint are committed. Delivery is at least once: after
   * a crash or a lost report the event is folded again from the committed state and `onEvent` runs
   * again, so its effects must be idempotent (append with an idempotency key derived from
   * `(stream.streamId, event.offset)`). Throwing reports the event as failed and commits nothing:
   * the source retries it (a `WorkerError` with `retryable: false` halts the subscription).
   */
  onEvent?(context: ProcessorEventContext<S>): void | Promise<void>;
}

const SLUG = /^\S{1,200}$/;

/** Checks a processor definition and answers it (frozen). */
export function defineProcessor<S>(definition: ProcessorDefinition<S>): ProcessorDefinition<S> {
  if (typeof definition.slug !== 'string' || !SLUG.test(definition.slug)) {
    throw new TypeError(`a processor slug is 1–200 characters without whitespace, got ${JSON.stringify(definition.slug)}`);
  }
  if (typeof definition.reduce !== 'function') throw new TypeError(`processor "${definition.slug}": reduce must be a function`);
  if (definition.onEvent !== undefined && typeof definition.onEvent !== 'function') {
    throw new TypeError(`processor "${definition.slug}": onEvent must be a function`);
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(definition.initialState);
  } catch (error) {
    throw new TypeError(`processor "${definition.slug}": initialState is not JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  if (json === undefined) throw new TypeError(`processor "${definition.slug}": initialState is not JSON`);
  return Object.freeze({ ...definition });
}
