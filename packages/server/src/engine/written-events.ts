/**
 * The events a stream wrote last, kept by its actor so that a subscription catching up with them
 * takes them from memory instead of reading their rows back with SQL and parsing them again
 * (docs/architecture.md "Events just written").
 *
 * A live subscription owes only what was just written: a copy, a webhook or an RPC call of one
 * lone event would otherwise read the row its own stream wrote a moment before (one SELECT and one
 * JSON.parse per delivery, the largest single statement of a lone copy). The actor keeps the last
 * written events while its stream has outbound subscriptions, and only until its sender finds
 * nothing left to deliver (sender.ts `check`, `passOver`): a quiet stream holds none.
 *
 * What makes it safe:
 * - The window is a run of consecutive offsets that ends at the last written event; an append
 *   whose first offset does not follow on starts it again. A range is answered only when every
 *   offset of it is held; anything else is read with SQL as before.
 * - Rows of a stream are deleted only by its actor's destroy, which starts a new window, and by the
 *   ephemeral prune; ephemeral events are never delivered, and the caller leaves them out as the
 *   SQL read does. A failed commit or another storage epoch drops the actor's loaded copy, this
 *   window with it (actor.ts `load`).
 * - The held objects are the ones the append answered and live readers were handed; nothing
 *   downstream changes an event it is given.
 */
import type { CommittedEvent } from '@rivulet/contract';

/** Events held at most: a live subscription owes a few; a backlog is read with SQL. */
export const WRITTEN_EVENTS_KEPT = 64;
/** Characters of JSON text held at most (an event longer than this is not held at all). */
export const WRITTEN_TEXT_KEPT = 256 * 1024;

export class WrittenEvents {
  private events: CommittedEvent[] = [];
  private lengths: number[] = [];
  /** Index of the first held event (the ones before it have been let go). */
  private start = 0;
  private text = 0;

  /** Events just written, in offset order, with their stored JSON text. */
  add(fresh: readonly { readonly event: CommittedEvent; readonly json: string }[]): void {
    for (let i = 0; i < fresh.length; i++) {
      const { event, json } = fresh[i]!;
      const held = this.events.length - this.start;
      if (held > 0 && event.offset !== this.events[this.events.length - 1]!.offset + 1) this.clear();
      if (json.length > WRITTEN_TEXT_KEPT) {
        this.clear();
        continue;
      }
      this.events.push(event);
      this.lengths.push(json.length);
      this.text += json.length;
      while (this.events.length - this.start > WRITTEN_EVENTS_KEPT || this.text > WRITTEN_TEXT_KEPT) {
        this.text -= this.lengths[this.start]!;
        this.start++;
      }
    }
    if (this.start >= WRITTEN_EVENTS_KEPT) {
      this.events = this.events.slice(this.start);
      this.lengths = this.lengths.slice(this.start);
      this.start = 0;
    }
  }

  /** The held events with offsets in (after, upTo], in order; undefined unless every one of them is held. */
  range(after: number, upTo: number): readonly CommittedEvent[] | undefined {
    const held = this.events.length - this.start;
    if (held === 0 || upTo <= after) return undefined;
    const first = this.events[this.start]!.offset;
    if (after + 1 < first || upTo > first + held - 1) return undefined;
    return this.events.slice(this.start + (after + 1 - first), this.start + (upTo - first) + 1);
  }

  clear(): void {
    this.events = [];
    this.lengths = [];
    this.start = 0;
    this.text = 0;
  }
}
