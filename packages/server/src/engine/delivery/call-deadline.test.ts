/**
 * CallDeadline: the calls of one flight share one timer, and each still ends at its own deadline
 * (protocol §12.7), by the clock, or by the timer's own time when the clock stands still.
 */
import { describe, expect, it } from 'vitest';
import type { Timer } from '../../ports/timer.js';
import { CallDeadline } from './call-deadline.js';

/** A manual timer and clock: `advance` moves both (unless the clock is frozen) and runs what is due. */
function fakeTime(options: { frozenClock?: boolean } = {}) {
  let now = 1_000;
  let timerNow = 0;
  const timers: Array<{ at: number; fn: () => void; live: boolean }> = [];
  let set = 0;
  const timer: Timer = {
    set(delayMs, fn) {
      set++;
      const entry = { at: timerNow + delayMs, fn, live: true };
      timers.push(entry);
      return () => (entry.live = false);
    },
  };
  return {
    timer,
    clock: { now: () => now },
    sets: () => set,
    live: () => timers.filter((t) => t.live).length,
    advance(ms: number) {
      const end = timerNow + ms;
      for (;;) {
        const due = timers.filter((t) => t.live && t.at <= end).sort((a, b) => a.at - b.at)[0];
        if (!due) break;
        if (!options.frozenClock) now += due.at - timerNow;
        timerNow = due.at;
        due.live = false;
        due.fn();
      }
      if (!options.frozenClock) now += end - timerNow;
      timerNow = end;
    },
  };
}

describe('CallDeadline', () => {
  it('ends a call that is not cleared exactly at its deadline', () => {
    const t = fakeTime();
    const d = new CallDeadline(t.timer, t.clock);
    const ended: number[] = [];
    d.start(100, () => ended.push(t.clock.now()));
    t.advance(99);
    expect(ended).toEqual([]);
    t.advance(1);
    expect(ended).toEqual([1_100]);
    t.advance(1_000);
    expect(ended).toEqual([1_100]);
  });

  it('a cleared call never ends, and the timer is not armed again for nothing', () => {
    const t = fakeTime();
    const d = new CallDeadline(t.timer, t.clock);
    let ended = 0;
    d.start(100, () => ended++);
    t.advance(10);
    d.clear();
    t.advance(500);
    expect([ended, t.sets(), t.live()]).toEqual([0, 1, 0]);
  });

  it('calls one after another share one timer, and a later call ends at its own deadline', () => {
    const t = fakeTime();
    const d = new CallDeadline(t.timer, t.clock);
    const ended: number[] = [];
    for (let i = 0; i < 50; i++) {
      d.start(100, () => ended.push(-1));
      t.advance(1);
      d.clear();
    }
    expect(t.sets()).toBe(1);
    // The 51st call starts at 1 050; the timer armed at 1 000 fires at 1 100 and is armed again.
    d.start(100, () => ended.push(t.clock.now()));
    t.advance(99);
    expect(ended).toEqual([]);
    t.advance(1);
    expect(ended).toEqual([1_150]);
    expect(t.sets()).toBe(2);
  });

  it('with a clock that stands still, a call ends once the timer gave it its full time', () => {
    const t = fakeTime({ frozenClock: true });
    const d = new CallDeadline(t.timer, t.clock);
    let ended = 0;
    d.start(100, () => undefined);
    t.advance(50);
    d.clear();
    d.start(100, () => ended++);
    // The first arming fires 50 after this call began: too soon for it; the second gives it 100.
    t.advance(50);
    expect(ended).toBe(0);
    t.advance(99);
    expect(ended).toBe(0);
    t.advance(1);
    expect(ended).toBe(1);
  });

  it('a shorter timeout than the armed one arms the timer anew', () => {
    const t = fakeTime();
    const d = new CallDeadline(t.timer, t.clock);
    const ended: number[] = [];
    d.start(1_000, () => ended.push(-1));
    d.clear();
    d.start(10, () => ended.push(t.clock.now()));
    t.advance(10);
    expect(ended).toEqual([1_010]);
    expect(t.live()).toBe(0);
  });

  it('close leaves no timer behind and ends nothing', () => {
    const t = fakeTime();
    const d = new CallDeadline(t.timer, t.clock);
    let ended = 0;
    d.start(100, () => ended++);
    d.close();
    t.advance(1_000);
    expect([ended, t.live()]).toEqual([0, 0]);
  });
});
