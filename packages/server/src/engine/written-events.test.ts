import type { CommittedEvent } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { WRITTEN_EVENTS_KEPT, WRITTEN_TEXT_KEPT, WrittenEvents, type WrittenEvent } from './written-events.js';

/** Fresh events at `offsets`, each with a text of `length` characters (only its length matters here). */
function fresh(offsets: number[], length = 100): { event: CommittedEvent; json: string }[] {
  return offsets.map((offset) => ({
    event: { path: '/s', offset, createdAt: '2026-12-06T00:00:00.000Z', type: 'app/x' },
    json: 'x'.repeat(length),
  }));
}
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const offsets = (events: readonly WrittenEvent[] | undefined) => events?.map((e) => e.event.offset);

describe('the events a stream wrote last', () => {
  it('answers a range only when it holds every offset of it', () => {
    const w = new WrittenEvents();
    expect(w.range(0, 1)).toBeUndefined();
    w.add(fresh([5, 6]));
    w.add(fresh([7]));
    expect(offsets(w.range(4, 7))).toEqual([5, 6, 7]);
    expect(offsets(w.range(5, 6))).toEqual([6]);
    expect(w.range(3, 7)).toBeUndefined(); // offset 4 is not held
    expect(w.range(4, 8)).toBeUndefined(); // offset 8 is not written
    expect(w.range(7, 7)).toBeUndefined(); // an empty range is no answer either
  });

  it('starts again when an append does not follow on from the last offset held', () => {
    const w = new WrittenEvents();
    w.add(fresh([1, 2, 3]));
    w.add(fresh([10, 11]));
    expect(w.range(0, 3)).toBeUndefined();
    expect(offsets(w.range(9, 11))).toEqual([10, 11]);
  });

  it(`holds ${WRITTEN_EVENTS_KEPT} events; one more lets the oldest go`, () => {
    const w = new WrittenEvents();
    w.add(fresh(range(1, WRITTEN_EVENTS_KEPT)));
    expect(offsets(w.range(0, WRITTEN_EVENTS_KEPT))).toEqual(range(1, WRITTEN_EVENTS_KEPT));
    w.add(fresh([WRITTEN_EVENTS_KEPT + 1]));
    expect(w.range(0, WRITTEN_EVENTS_KEPT + 1)).toBeUndefined();
    expect(offsets(w.range(1, WRITTEN_EVENTS_KEPT + 1))).toEqual(range(2, WRITTEN_EVENTS_KEPT + 1));
    // Many turns later it still holds the last ones, in order.
    for (let o = WRITTEN_EVENTS_KEPT + 2; o <= 10 * WRITTEN_EVENTS_KEPT; o++) w.add(fresh([o]));
    const last = 10 * WRITTEN_EVENTS_KEPT;
    expect(offsets(w.range(last - WRITTEN_EVENTS_KEPT, last))).toEqual(range(last - WRITTEN_EVENTS_KEPT + 1, last));
    expect(w.range(last - WRITTEN_EVENTS_KEPT - 1, last)).toBeUndefined();
  });

  it(`holds ${WRITTEN_TEXT_KEPT} characters of text; one more lets the oldest go`, () => {
    const w = new WrittenEvents();
    const half = WRITTEN_TEXT_KEPT / 2;
    w.add(fresh([1, 2], half));
    expect(offsets(w.range(0, 2))).toEqual([1, 2]);
    w.add(fresh([3], 1));
    expect(w.range(0, 3)).toBeUndefined();
    expect(offsets(w.range(1, 3))).toEqual([2, 3]);
  });

  it('does not hold an event longer than the text it may hold, nor anything before it', () => {
    const w = new WrittenEvents();
    w.add(fresh([1], WRITTEN_TEXT_KEPT));
    expect(offsets(w.range(0, 1))).toEqual([1]);
    w.add(fresh([2], WRITTEN_TEXT_KEPT + 1));
    expect(w.range(0, 1)).toBeUndefined();
    expect(w.range(1, 2)).toBeUndefined();
    w.add(fresh([3]));
    expect(offsets(w.range(2, 3))).toEqual([3]);
    expect(w.range(1, 3)).toBeUndefined();
  });

  it('holds nothing once cleared', () => {
    const w = new WrittenEvents();
    w.add(fresh([1, 2]));
    w.clear();
    expect(w.range(0, 2)).toBeUndefined();
    w.add(fresh([7]));
    expect(offsets(w.range(6, 7))).toEqual([7]);
  });
});
