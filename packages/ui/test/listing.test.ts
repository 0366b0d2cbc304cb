/** The bounded read of the listing and the badge's wording (src/listing.ts). */
import { describe, expect, it } from 'vitest';
import { haltedBadge, readUpTo } from '../src/listing.js';

async function* numbers(n: number): AsyncIterable<number> {
  for (let i = 1; i <= n; i++) yield i;
}

describe('listing', () => {
  it('reads up to the bound, and says when more were there', async () => {
    expect(await readUpTo(numbers(2), 3)).toEqual({ rows: [1, 2], more: false });
    expect(await readUpTo(numbers(3), 3)).toEqual({ rows: [1, 2, 3], more: false });
    expect(await readUpTo(numbers(4), 3)).toEqual({ rows: [1, 2, 3], more: true });
  });

  it('stops reading at the first item past the bound', async () => {
    let pulled = 0;
    async function* counted(): AsyncIterable<number> {
      for (let i = 0; i < 100; i++) {
        pulled++;
        yield i;
      }
    }
    await readUpTo(counted(), 3);
    expect(pulled).toBe(4);
  });

  it('words the badge: none, a count, and a count that may be short only when every row read is halted', () => {
    const rows = (...statuses: string[]) => statuses.map((status) => ({ status }));
    expect(haltedBadge(rows('healthy', 'retrying'), false)).toBeNull();
    expect(haltedBadge(rows(), false)).toBeNull();
    expect(haltedBadge(rows('halted', 'halted', 'healthy'), false)).toBe('2 halted');
    expect(haltedBadge(rows('halted', 'halted', 'healthy'), true)).toBe('2 halted');
    expect(haltedBadge(rows('halted', 'halted'), false)).toBe('2 halted');
    expect(haltedBadge(rows('halted', 'halted'), true)).toBe('2+ halted');
  });
});
