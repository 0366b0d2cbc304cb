/**
 * Live readers of one stream (SSE tails, later RPC connections). The actor calls them after each
 * durable commit with the newly committed events, ephemeral included, in offset order.
 */
import type { CommittedEvent } from '@rivulet/contract';

export interface LiveListener {
  onEvents(events: readonly CommittedEvent[]): void;
  /** The stream was destroyed; the listener is already removed. */
  onDestroyed(): void;
}
