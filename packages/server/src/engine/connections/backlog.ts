/**
 * The live events a connection has been handed but not yet delivered, in order, with their size
 * in bytes of event JSON: the bound that closes a callback which falls too far behind (protocol
 * §19) is checked against it.
 */
import type { CommittedEvent } from '@rivulet/contract';
import { committedJson } from '../event-json.js';
import type { ConnectionLimits } from './connection-spec.js';

export class Backlog {
  private events: CommittedEvent[] = [];
  private bytes = 0;
  /** Bumped by clear(): a batch taken from an older queue must not remove events of the new one. */
  private generation = 0;

  get length(): number {
    return this.events.length;
  }

  push(event: CommittedEvent): void {
    this.events.push(event);
    this.bytes += committedJson(event).length;
  }

  /** A view of the queue as it is now (for building a batch), and the mark to `take` with. */
  view(): { events: readonly CommittedEvent[]; mark: number } {
    return { events: this.events, mark: this.generation };
  }

  /** Drops the first `count` events, unless the queue was cleared since `mark`. */
  take(count: number, mark: number): void {
    if (mark !== this.generation) return;
    for (const event of this.events.splice(0, count)) this.bytes -= committedJson(event).length;
  }

  clear(): void {
    this.events = [];
    this.bytes = 0;
    this.generation++;
  }

  /** Why the backlog is over its bound, or null while it is within it. */
  overflow(limits: ConnectionLimits): string | null {
    if (this.events.length <= limits.maxBacklogEvents && this.bytes <= limits.maxBacklogBytes) return null;
    return (
      `the callback fell behind by ${this.events.length} events (${this.bytes} bytes) not yet delivered; ` +
      `the bound is ${limits.maxBacklogEvents} events or ${limits.maxBacklogBytes} bytes`
    );
  }
}
