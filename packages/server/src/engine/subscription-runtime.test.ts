/**
 * Quiet cursor moves (advanceQuietly): past non-matching events the cursor moves in memory, is due
 * to be persisted every 1000 offsets, and persistDirty writes it: never lost beyond a rescan.
 */
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../adapters/memory/memory-storage.js';
import type { SubscriptionRow } from '../core/repair.js';
import { systemTimer } from '../ports/timer.js';
import { openSchema } from './schema.js';
import { SubscriptionRuntime } from './subscription-runtime.js';

const row = (cursor: number): SubscriptionRow => ({
  key: 'k',
  runConfiguredAt: 2,
  runCursorSetAt: 0,
  cursor,
  attempt: 0,
  nextAttemptAt: null,
  inflightDeadlineAt: null,
  lastError: null,
  isolate: false,
  confirmations: 0,
  confirmOffset: null,
  skipsWithoutSuccess: 0,
  halted: false,
  bytesSent: 0,
  stats: null,
});

async function runtime() {
  const storage = await MemoryStorage.create();
  openSchema(storage);
  const rt = new SubscriptionRuntime(storage, 1, systemTimer);
  storage.transaction(() => rt.write(row(2)));
  const stored = () => storage.exec<{ cursor: number }>(`SELECT cursor FROM subscription_runtime WHERE key = 'k'`)[0]!.cursor;
  return { storage, rt, stored };
}

describe('SubscriptionRuntime.advanceQuietly', () => {
  it('moves the cursor in memory, in place, and answers that it is due every 1000 offsets', async () => {
    const { rt, stored } = await runtime();
    const before = rt.get('k')!;
    expect(rt.advanceQuietly(rt.get('k')!, 500)).toBe(false);
    expect(rt.get('k')!.cursor).toBe(500);
    // The row is not copied per move (delivery/pass-over.ts moves every quiet row on every append).
    expect(rt.get('k')).toBe(before);
    expect(rt.view(600)['k']!.acknowledgedOffset).toBe(500);
    expect(stored()).toBe(2);
    expect(rt.advanceQuietly(rt.get('k')!, 1001)).toBe(false);
    expect(stored()).toBe(2);
    expect(rt.advanceQuietly(rt.get('k')!, 1002)).toBe(true);
    rt.persistDirty();
    expect(stored()).toBe(1002);
    expect(rt.advanceQuietly(rt.get('k')!, 2001)).toBe(false);
    expect(rt.advanceQuietly(rt.get('k')!, 2002)).toBe(true);
  });

  it('persistDirty writes what moved quietly; a later full write persists it too', async () => {
    const { rt, stored } = await runtime();
    rt.advanceQuietly(rt.get('k')!, 40);
    rt.persistDirty();
    expect(stored()).toBe(40);
    rt.advanceQuietly(rt.get('k')!, 50);
    rt.write({ ...rt.get('k')!, attempt: 1 });
    expect(stored()).toBe(50);
  });

  it('judges the 1000 offsets from the stored cursor, also after a result kept in memory only', async () => {
    const { rt, stored } = await runtime();
    rt.update(row(600)); // a delivery's result, persisted within 250 ms
    expect(stored()).toBe(2);
    expect(rt.advanceQuietly(rt.get('k')!, 1001)).toBe(false); // 999 past the stored 2
    expect(stored()).toBe(2);
    // Due: 1000 past the stored 2, although only 402 past the 600 kept in memory.
    expect(rt.advanceQuietly(rt.get('k')!, 1002)).toBe(true);
    rt.persistDirty();
    expect(stored()).toBe(1002);
    rt.update(row(1500));
    rt.persistDirty();
    expect(stored()).toBe(1500);
    expect(rt.advanceQuietly(rt.get('k')!, 2499)).toBe(false);
    expect(stored()).toBe(1500);
    rt.persistDirty();
    expect(stored()).toBe(2499);
  });
});
