/**
 * The events a stream wrote last, kept by its actor so that a subscription catching up with them
 * takes them from memory instead of reading their rows back with SQL and parsing them again
 * (docs/architecture.md "Events just written").
 *
 * A live subscription owes only what was just written: a copy, a webhook or an RPC call of one
 * lone event would otherwise read the row its own stream wrote a moment before (one SELECT and one
 * JSON.parse per delivery, the largest single statement of a lone copy). The actor keeps the last
 * written events while its stream has outbound subscriptions, and only until its sender finds
 * nothing left to deliver (sender.ts `letWrittenGo`): a quiet stream holds none.
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

/** An event as written: the committed event and the JSON text it was stored as. */
export interface WrittenEvent {
  readonly event: CommittedEvent;
  readonly json: string;
}

export class WrittenEvents {
  private held: WrittenEvent[] = [];
  /** Index of the first held event (the ones before it have been let go). */
  private start = 0;
  /** Characters of JSON text from `start` on. */
  private text = 0;

  /** Events just written, in offset order. */
  add(fresh: readonly WrittenEvent[]): void {
    for (let i = 0; i < fresh.length; i++) {
      const written = fresh[i]!;
      const last = this.held.length > this.start ? this.held[this.held.length - 1]! : undefined;
      if (last !== undefined && written.event.offset !== last.event.offset + 1) this.clear();
      if (written.json.length > WRITTEN_TEXT_KEPT) {
        this.clear();
        continue;
      }
      this.held.push(written);
      this.text += written.json.length;
      while (this.held.length - this.start > WRITTEN_EVENTS_KEPT || this.text > WRITTEN_TEXT_KEPT) {
        this.text -= this.held[this.start]!.json.length;
        this.start++;
      }
    }
    if (this.start >= WRITTEN_EVENTS_KEPT) {
      this.held = this.held.slice(this.start);
      this.start = 0;
    }
  }

  /** The held events with offsets in (after, upTo], in order; undefined unless every one of them is held. */
  range(after: number, upTo: number): readonly WrittenEvent[] | undefined {
    const count = this.held.length - this.start;
    if (count === 0 || upTo <= after) return undefined;
    const first = this.held[this.start]!.event.offset;
    if (after + 1 < first || upTo > first + count - 1) return undefined;
    return this.held.slice(this.start + (after + 1 - first), this.start + (upTo - first) + 1);
  }

  clear(): void {
    this.held = [];
    this.start = 0;
    this.text = 0;
  }
}
