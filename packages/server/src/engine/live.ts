/**
 * Live readers of one stream (SSE tails, live connections and waitForEvent). The actor calls them after each
 * durable commit with the newly committed events, ephemeral included, in offset order.
 */
import type { CommittedEvent, CoreState } from '@rivulet/contract';

export interface LiveListener {
  /** `state` is the core state after these events (at the new durable head). */
  onEvents(events: readonly CommittedEvent[], state: CoreState): void;
  /** The stream was destroyed; the listener is already removed. */
  onDestroyed(): void;
}
