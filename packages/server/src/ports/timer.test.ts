/**
 * The host's timer (timer.ts `systemTimer`): a delay of 0 runs after pending I/O without waiting for
 * the timers phase (on Node, `setImmediate`), and cancelling still works.
 */
import { readFile } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { systemTimer } from './timer.js';

/** Runs `fn` inside an I/O callback, where Node's phase order (check before timers) is fixed. */
const inIoCallback = (fn: () => void) => readFile(import.meta.filename, () => fn());

describe('systemTimer', () => {
  it('a delay of 0 runs before a 0 ms timeout set ahead of it (no wait for the timers phase)', async () => {
    const order: string[] = [];
    await new Promise<void>((resolve) =>
      inIoCallback(() => {
        setTimeout(() => {
          order.push('timeout');
          resolve();
        }, 0);
        systemTimer.set(0, () => order.push('soon'));
      }),
    );
    expect(order).toEqual(['soon', 'timeout']);
  });

  it('a cancelled timer does not run, with a delay of 0 or more', async () => {
    const ran: number[] = [];
    systemTimer.set(0, () => ran.push(0))();
    systemTimer.set(1, () => ran.push(1))();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(ran).toEqual([]);
  });
});
