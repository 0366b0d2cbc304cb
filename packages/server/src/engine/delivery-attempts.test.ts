/**
 * The attempt history's window (delivery-attempts.ts): pending and stored attempts together never
 * show more than `kept`, before and after a persist, newest first.
 */
import type { DeliveryAttempt } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../adapters/memory/memory-storage.js';
import { DELIVERY_ATTEMPTS_DDL, DeliveryAttempts } from './delivery-attempts.js';

const attempt = (toOffset: number): DeliveryAttempt => ({
  at: '2030-01-01T00:00:00.000Z',
  run: '1:0',
  attempt: 1,
  fromOffset: toOffset,
  toOffset,
  outcome: 'ok',
  durationMs: 1,
});

async function history(kept: number) {
  const storage = await MemoryStorage.create();
  for (const ddl of DELIVERY_ATTEMPTS_DDL) storage.run(ddl);
  const attempts = new DeliveryAttempts(storage, kept);
  const persist = () => storage.transaction(() => attempts.persist(1));
  return { attempts, persist, stored: () => storage.exec<{ n: number }>('SELECT count(*) AS n FROM delivery_attempts')[0]!.n };
}

describe('DeliveryAttempts', () => {
  it('shows at most kept attempts while new ones wait for the persist that prunes the old', async () => {
    const { attempts, persist, stored } = await history(3);
    for (const n of [1, 2, 3]) attempts.record('c', attempt(n));
    persist();
    attempts.record('c', attempt(4));
    // Three stored and one pending: the window still holds three, the newest.
    expect(attempts.list(1, 'c', 1000).map((a) => a.toOffset)).toEqual([4, 3, 2]);
    expect(attempts.list(1, 'c', 2).map((a) => a.toOffset)).toEqual([4, 3]);
    persist();
    expect(stored()).toBe(3);
    expect(attempts.list(1, 'c', 1000).map((a) => a.toOffset)).toEqual([4, 3, 2]);
  });

  it('keeps only the newest kept of many pending attempts, and nothing when kept is 0', async () => {
    const { attempts, persist } = await history(2);
    for (const n of [1, 2, 3, 4, 5]) attempts.record('c', attempt(n));
    expect(attempts.list(1, 'c', 10).map((a) => a.toOffset)).toEqual([5, 4]);
    persist();
    expect(attempts.list(1, 'c', 10).map((a) => a.toOffset)).toEqual([5, 4]);
    expect(attempts.list(1, 'other', 10)).toEqual([]);

    const none = await history(0);
    none.attempts.record('c', attempt(1));
    none.persist();
    expect(none.attempts.list(1, 'c', 10)).toEqual([]);
  });
});
