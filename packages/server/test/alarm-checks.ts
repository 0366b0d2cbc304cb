/**
 * The conformance checks of the timer port (ports/timer.ts): every adapter runs the same checks of
 * the port's rules — setting an alarm replaces the previous one, clearing cancels it, and `fire`
 * is called once, at about the time set (at once for a time already past).
 *
 * Like the storage checks (storage-checks.ts) they know neither the adapter nor the test runner, so
 * the same checks run under vitest against Node's timers (alarm-conformance.test.ts) and inside
 * workerd against the Durable Object alarm (test/cloudflare/ports.test.ts). Nothing here may
 * import Node modules.
 */
import type { AlarmFactory } from '../src/ports/timer.js';
import type { ConformanceApi } from './storage-checks.js';

export interface AlarmsUnderTest {
  /** A fresh factory; the previous one's alarm, if any, is gone. */
  factory: AlarmFactory;
  cleanup(): void | Promise<void>;
}

export interface AlarmTolerance {
  /** How much earlier than the time set a fire may come (clock granularity). */
  earlyMs: number;
  /** How much later than the time set a fire may come (a loaded machine, the runtime's scheduler). */
  lateMs: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function defineAlarmChecks(t: ConformanceApi, name: string, tolerance: AlarmTolerance, factory: () => Promise<AlarmsUnderTest>): void {
  const { describe, it, beforeEach, afterEach, expect } = t;
  /** Time enough for a fire that should not come to have come. */
  const quiet = tolerance.lateMs + 200;

  describe(`${name} keeps the timer port's contract`, () => {
    let under: AlarmsUnderTest;
    let fires: number[];

    beforeEach(async () => {
      under = await factory();
      fires = [];
    });
    afterEach(() => under.cleanup());

    const create = () => under.factory.create(() => fires.push(Date.now()));
    const fired = async (count: number, within: number): Promise<void> => {
      const deadline = Date.now() + within;
      while (fires.length < count && Date.now() < deadline) await sleep(5);
      expect(fires.length, `fires after ${within} ms`).toBe(count);
    };
    const expectAbout = (at: number, when: number | undefined) => {
      expect(when).toBeDefined();
      expect(when!).toBeGreaterThanOrEqual(at - tolerance.earlyMs);
      expect(when!).toBeLessThanOrEqual(at + tolerance.lateMs);
    };

    it('fires once, at about the time set', async () => {
      const at = Date.now() + 150;
      create().set(at);
      await fired(1, 150 + tolerance.lateMs + 500);
      expectAbout(at, fires[0]);
      await sleep(quiet);
      expect(fires).toHaveLength(1);
    });

    it('fires at once for a time already past', async () => {
      const at = Date.now() - 1_000;
      const set = Date.now();
      create().set(at);
      await fired(1, tolerance.lateMs + 500);
      expect(fires[0]! - set).toBeLessThanOrEqual(tolerance.lateMs);
      await sleep(quiet);
      expect(fires).toHaveLength(1);
    });

    it('setting a later time replaces the earlier one', async () => {
      const alarm = create();
      const first = Date.now() + 100;
      const second = first + 300;
      alarm.set(first);
      alarm.set(second);
      await fired(1, 400 + tolerance.lateMs + 500);
      expectAbout(second, fires[0]);
      await sleep(quiet);
      expect(fires).toHaveLength(1);
    });

    it('setting an earlier time replaces the later one', async () => {
      const alarm = create();
      const later = Date.now() + 500;
      const earlier = later - 400;
      alarm.set(later);
      alarm.set(earlier);
      await fired(1, 100 + tolerance.lateMs + 500);
      expectAbout(earlier, fires[0]);
      await sleep(later - Date.now() + quiet);
      expect(fires).toHaveLength(1);
    });

    it('clearing cancels the alarm', async () => {
      const alarm = create();
      const at = Date.now() + 100;
      alarm.set(at);
      alarm.clear();
      await sleep(at - Date.now() + quiet);
      expect(fires).toHaveLength(0);
    });

    it('an alarm set again after it fired fires again', async () => {
      const alarm = create();
      alarm.set(Date.now() + 50);
      await fired(1, 50 + tolerance.lateMs + 500);
      const again = Date.now() + 100;
      alarm.set(again);
      await fired(2, 100 + tolerance.lateMs + 500);
      expectAbout(again, fires[1]);
    });

    it('an alarm cleared and set again fires once, at the new time', async () => {
      const alarm = create();
      alarm.set(Date.now() + 100);
      alarm.clear();
      const at = Date.now() + 250;
      alarm.set(at);
      await fired(1, 250 + tolerance.lateMs + 500);
      expectAbout(at, fires[0]);
      await sleep(quiet);
      expect(fires).toHaveLength(1);
    });
  });
}
