import { getHeapStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { fullCollection, lastReleaseRounds, releaseAfterSweep, releaseHeap, RELEASE_MIN_DROPPED } from './heap-release.js';

describe('heap release after an idle sweep', () => {
  it('collects after a sweep that dropped many actors and more than it kept, and not otherwise', () => {
    const calls: Array<[number, number]> = [];
    const release = releaseAfterSweep(() => calls.push([0, 0]), 100);
    release(0, 0);
    release(99, 0); // too few dropped
    release(100, 100); // as many kept as dropped: a busy server
    release(5000, 20_000);
    expect(calls).toHaveLength(0);
    release(100, 99);
    release(10_000, 0);
    expect(calls).toHaveLength(2);
    expect(RELEASE_MIN_DROPPED).toBeGreaterThan(0);
  });

  it('collects garbage the old generation holds, and leaves no global gc behind', () => {
    // Objects that survive two scavenges sit in the old generation, which an idle V8 leaves alone.
    let held: Array<{ m: Map<number, number>; s: string }> | null = Array.from({ length: 200_000 }, (_, i) => ({ m: new Map([[i, i]]), s: `s-${i}` }));
    fullCollection();
    const withThem = getHeapStatistics().used_heap_size;
    expect(held.length).toBe(200_000);
    held = null;
    fullCollection();
    const freed = withThem - getHeapStatistics().used_heap_size;
    expect(freed).toBeGreaterThan(20 * 1024 * 1024);
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });
});

describe('releaseHeap', () => {
  it('collects again while a collection gives at least 1 MB back, and stops at the first that does not (at most 6)', () => {
    const MB = 1024 * 1024;
    const run = (sizes: number[]) => {
      let at = 0;
      releaseHeap(
        () => (at = Math.min(at + 1, sizes.length - 1)),
        () => sizes[at]!,
      );
      return lastReleaseRounds;
    };
    expect(run([200 * MB, 120 * MB, 60 * MB, 59.5 * MB])).toBe(3); // the third gave back 0.5 MB
    expect(run([200 * MB, 199.5 * MB])).toBe(1); // V8 compacted all of it in the first
    expect(run([600 * MB, 500 * MB, 400 * MB, 300 * MB, 200 * MB, 100 * MB, 50 * MB, 10 * MB])).toBe(6);
  });

  it('frees the dropped objects on real V8 and never leaves more heap committed than one collection does', () => {
    const total = () => getHeapStatistics().total_heap_size;
    const used = () => getHeapStatistics().used_heap_size;
    // Dropped actors sit between objects that stay: one survivor in fifty, on every page.
    let all: Array<{ m: Map<number, number>; s: Set<number>; t: string }> | null = Array.from({ length: 300_000 }, (_, i) => ({ m: new Map([[i, i]]), s: new Set([i]), t: `t-${i}` }));
    fullCollection(); // now in the old generation
    const usedWithAll = used();
    const survivors = all.filter((_, i) => i % 50 === 0);
    all = null;
    fullCollection();
    const afterOne = total();
    releaseHeap();
    // How many pages go back depends on V8's version: Node 20 needs several rounds for about half,
    // Node 24 keeps them in this pattern (docs/performance.md "Full collections after a sweep").
    expect(total()).toBeLessThanOrEqual(afterOne);
    expect(used()).toBeLessThan(usedWithAll / 4);
    expect(survivors).toHaveLength(6_000);
  });
});
