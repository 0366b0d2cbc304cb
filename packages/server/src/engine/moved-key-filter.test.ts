/**
 * The filters of moved idempotency keys (moved-key-filter.ts) over a stand-in storage that answers
 * the one scan they make: what they answer, when they are built again, and their bounds on both
 * sides. That event-keys.ts tells them of every key it writes: event-keys.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { SqlStorage } from '../ports/storage.js';
import { FIRST_CAPACITY, MAX_FILTERED_KEYS, MAX_SCANNED_KEYS, MovedKeyFilters } from './moved-key-filter.js';

/** A storage whose event_keys holds `table` (sid → keys); counts the scans. */
function stand(table: Map<number, string[]>) {
  const storage = {
    epoch: 0,
    scans: 0,
    execRows(sql: string, sid: number, limit: number): unknown[][] {
      expect(sql).toBe('SELECT idem FROM event_keys WHERE sid = ? LIMIT ?');
      storage.scans++;
      return (table.get(sid) ?? []).slice(0, limit).map((key) => [key]);
    },
  };
  return { storage, filters: new MovedKeyFilters(storage as unknown as SqlStorage) };
}

const keys = (n: number, prefix = 'k') => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe('filters of moved idempotency keys', () => {
  it('holds every key of event_keys and every key added after, per stream; absent keys are mostly answered absent', () => {
    const { storage, filters } = stand(new Map([[1, keys(1000)]]));
    for (const key of keys(1000)) expect(filters.mayHold(1, key)).toBe(true);
    expect(storage.scans).toBe(1);
    const added = keys(5000, 'added-');
    for (const key of added) filters.added(1, key);
    for (const key of added) expect(filters.mayHold(1, key)).toBe(true);
    const others = keys(10_000, 'other-');
    const falsePositives = others.filter((key) => filters.mayHold(1, key)).length;
    expect(falsePositives / others.length).toBeLessThan(0.02);
    expect(filters.mayHold(2, 'k1')).toBe(false);
    expect(storage.scans).toBe(2);
  });

  it('a key added to a stream whose filter is not built yet is found by the scan that builds it', () => {
    const table = new Map<number, string[]>();
    const { storage, filters } = stand(table);
    filters.added(1, 'k'); // not built: nothing to tell
    table.set(1, ['k']);
    expect(filters.mayHold(1, 'k')).toBe(true);
    expect(storage.scans).toBe(1);
  });

  it('is built again after forget (the stream lost its keys) and after the storage epoch moved (a failed group commit)', () => {
    const table = new Map([[1, ['k']]]);
    const { storage, filters } = stand(table);
    expect(filters.mayHold(1, 'k')).toBe(true);
    table.set(1, []);
    expect(filters.mayHold(1, 'k')).toBe(true); // still the old filter: a needless probe, never a missed key
    filters.forget(1);
    expect(filters.mayHold(1, 'k')).toBe(false);
    expect(storage.scans).toBe(2);
    table.set(1, ['j']);
    filters.added(1, 'k');
    expect(filters.mayHold(1, 'j')).toBe(false); // the filter predates j, which came without being told
    storage.epoch++;
    expect(filters.mayHold(1, 'j')).toBe(true);
    expect(filters.mayHold(1, 'k')).toBe(false); // added in the undone commit
    expect(storage.scans).toBe(3);
  });

  it(`a stream with ${MAX_SCANNED_KEYS} moved keys gets a filter, one with a key more gets none (it always probes)`, () => {
    const { filters } = stand(
      new Map([
        [1, keys(MAX_SCANNED_KEYS)],
        [2, keys(MAX_SCANNED_KEYS + 1)],
      ]),
    );
    expect(filters.mayHold(1, 'absent')).toBe(false);
    expect(filters.mayHold(2, 'absent')).toBe(true);
    expect(filters.mayHold(2, 'absent-too')).toBe(true);
    expect([filters.unfiltered(1), filters.unfiltered(2)]).toEqual([false, true]);
  });

  it(`a filter holds ${MAX_FILTERED_KEYS} keys; at the next one it is over, still answering, until dropped; then the stream always probes`, () => {
    const { storage, filters } = stand(new Map());
    expect(filters.mayHold(1, 'absent')).toBe(false);
    for (let i = 0; i < MAX_FILTERED_KEYS; i++) filters.added(1, `k${i}`);
    expect(filters.mayHold(1, 'absent')).toBe(false);
    expect(filters.mayHold(1, `k${MAX_FILTERED_KEYS - 1}`)).toBe(true);
    expect(filters.unfiltered(1)).toBe(false);
    filters.drop(1); // not over: nothing to drop
    expect(filters.mayHold(1, 'absent')).toBe(false);
    filters.added(1, 'one-more');
    expect(filters.unfiltered(1)).toBe(true);
    expect([filters.mayHold(1, 'absent'), filters.mayHold(1, 'one-more')]).toEqual([false, true]);
    filters.drop(1);
    expect(filters.unfiltered(1)).toBe(true);
    expect(filters.mayHold(1, 'absent')).toBe(true);
    expect(storage.scans).toBe(1); // given up, not built again
  });

  it(`starts sized for ${FIRST_CAPACITY} keys and grows past it without losing one`, () => {
    const { filters } = stand(new Map([[1, []]]));
    expect(filters.mayHold(1, 'absent')).toBe(false);
    const added = keys(FIRST_CAPACITY * 10, 'grown-');
    for (const key of added) filters.added(1, key);
    for (const key of added) expect(filters.mayHold(1, key)).toBe(true);
  });
});
