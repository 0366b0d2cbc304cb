import { describe, expect, it } from 'vitest';
import type { Clock } from '../../ports/clock.js';
import type { Timer } from '../../ports/timer.js';
import type { DeliveryOutcome } from '../receivers/receiver.js';
import { FlightCalls } from './flight-calls.js';

/** A clock and a timer driven by hand: `advance` moves time and runs the timers that are due, in order. */
function manualTime() {
  let now = 1_000_000;
  const timers: { at: number; fn: () => void; live: boolean }[] = [];
  let sets = 0;
  const clock: Clock = { now: () => now };
  const timer: Timer = {
    set(delayMs, fn) {
      sets++;
      const t = { at: now + delayMs, fn, live: true };
      timers.push(t);
      return () => {
        t.live = false;
      };
    },
  };
  return {
    clock,
    timer,
    get sets() {
      return sets;
    },
    live: () => timers.filter((t) => t.live).length,
    async advance(ms: number) {
      const until = now + ms;
      for (;;) {
        const due = timers.filter((t) => t.live && t.at <= until).sort((a, b) => a.at - b.at)[0];
        if (!due) break;
        now = due.at;
        due.live = false;
        due.fn();
        await Promise.resolve();
      }
      now = until;
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

const OK: DeliveryOutcome = { ok: true, status: 204 };

/** A send whose answer the test gives, keeping the signal it was handed. */
function pending() {
  let answer!: (outcome: DeliveryOutcome) => void;
  let signal: AbortSignal | undefined;
  const send = (s: AbortSignal) => {
    signal = s;
    return new Promise<DeliveryOutcome>((resolve) => (answer = resolve));
  };
  return { send, answer: (o: DeliveryOutcome) => answer(o), signal: () => signal! };
}

describe('FlightCalls', () => {
  it('settles a call with its answer, and a flight of calls within the timeout sets one timer, cleared by end()', async () => {
    const time = manualTime();
    const calls = new FlightCalls(time.clock, time.timer);
    for (let i = 0; i < 50; i++) {
      const p = pending();
      const outcome = calls.call(p.send, 1_000);
      await time.advance(5);
      p.answer(OK);
      expect(await outcome).toEqual(OK);
    }
    expect(time.sets).toBe(1);
    expect(time.live()).toBe(1);
    calls.end();
    expect(time.live()).toBe(0);
  });

  it('times a later call out at its own deadline, not at the first call deadline, and aborts its signal', async () => {
    const time = manualTime();
    const calls = new FlightCalls(time.clock, time.timer);
    const first = pending();
    const one = calls.call(first.send, 1_000);
    await time.advance(10);
    first.answer(OK);
    expect(await one).toEqual(OK);
    await time.advance(590);
    const second = pending();
    let result: DeliveryOutcome | undefined;
    void calls.call(second.send, 1_000).then((o) => (result = o));
    // The first call's deadline passes: the second call is still out.
    await time.advance(500);
    expect(result).toBeUndefined();
    expect(second.signal().aborted).toBe(false);
    await time.advance(499);
    expect(result).toBeUndefined();
    await time.advance(1);
    expect(result).toEqual({ ok: false, kind: 'unavailable', error: 'delivery timed out after 1000 ms' });
    expect(second.signal().aborted).toBe(true);
    // The signal of the first call is the same one: it was not aborted while its call was out.
    expect(first.signal()).toBe(second.signal());
    // A call after the timeout gets a signal of its own, not the aborted one.
    const third = pending();
    const three = calls.call(third.send, 1_000);
    expect(third.signal().aborted).toBe(false);
    third.answer(OK);
    expect(await three).toEqual(OK);
    calls.end();
    expect(time.live()).toBe(0);
  });

  it('a flight that is not abortable hands every call one signal that never aborts, and still times calls out', async () => {
    const time = manualTime();
    const calls = new FlightCalls(time.clock, time.timer, false);
    const first = pending();
    const one = calls.call(first.send, 1_000);
    await time.advance(1_000);
    expect(await one).toEqual({ ok: false, kind: 'unavailable', error: 'delivery timed out after 1000 ms' });
    expect(first.signal().aborted).toBe(false);
    const second = pending();
    const two = calls.call(second.send, 1_000);
    expect(second.signal()).toBe(first.signal());
    second.answer(OK);
    expect(await two).toEqual(OK);
    // Another flight's signal is the same one: no AbortController per flight.
    const other = pending();
    void new FlightCalls(time.clock, time.timer, false).call(other.send, 1_000);
    expect(other.signal()).toBe(first.signal());
    expect(other.signal().aborted).toBe(false);
    calls.end();
  });

  it('ignores an answer that comes after the timeout', async () => {
    const time = manualTime();
    const calls = new FlightCalls(time.clock, time.timer);
    const p = pending();
    const outcome = calls.call(p.send, 100);
    await time.advance(100);
    p.answer(OK);
    expect(await outcome).toMatchObject({ ok: false, kind: 'unavailable' });
  });

  it('a rejected send is a failing outcome; a send that throws rejects the call', async () => {
    const time = manualTime();
    const calls = new FlightCalls(time.clock, time.timer);
    expect(await calls.call(() => Promise.reject(new Error('boom')), 1_000)).toEqual({ ok: false, kind: 'failing', error: 'boom' });
    await expect(
      calls.call(() => {
        throw new Error('our bug');
      }, 1_000),
    ).rejects.toThrow('our bug');
    // Nothing out: a timer left set goes off without settling anything.
    await time.advance(2_000);
    expect(time.live()).toBe(0);
  });
});
