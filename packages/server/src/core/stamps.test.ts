import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareStamps, sameLifetime, type Stamp } from './stamps.js';

const stamp = (streamCreatedAt: string, streamId: string, cursorChangedAtSourceOffset: number): Stamp => ({
  streamCreatedAt,
  streamId,
  cursorChangedAtSourceOffset,
});

const T1 = '2025-01-01T00:00:00.000Z';
const T2 = '2025-01-01T00:00:00.001Z';

const arbStamp = fc.record({
  streamCreatedAt: fc.constantFrom(T1, T2, '2024-12-31T23:59:59.999Z'),
  streamId: fc.constantFrom('a', 'b', '0f', 'f0'),
  cursorChangedAtSourceOffset: fc.nat({ max: 5 }),
});

const sign = (n: number): number => (n > 0 ? 1 : n < 0 ? -1 : 0);

describe('compareStamps (protocol §2.2, §13.1)', () => {
  it('orders by lifetime creation time first, whatever the rest', () => {
    expect(compareStamps(stamp(T1, 'z', 100), stamp(T2, 'a', 0))).toBeLessThan(0);
    expect(compareStamps(stamp(T2, 'a', 0), stamp(T1, 'z', 100))).toBeGreaterThan(0);
  });

  it('then by streamId as a string tie-break', () => {
    expect(compareStamps(stamp(T1, 'a', 100), stamp(T1, 'b', 0))).toBeLessThan(0);
    expect(compareStamps(stamp(T1, 'B', 0), stamp(T1, 'a', 0))).toBeLessThan(0);
  });

  it('then by the cursor generation of the same lifetime', () => {
    expect(compareStamps(stamp(T1, 'a', 3), stamp(T1, 'a', 7))).toBeLessThan(0);
    expect(compareStamps(stamp(T1, 'a', 7), stamp(T1, 'a', 3))).toBeGreaterThan(0);
    expect(compareStamps(stamp(T1, 'a', 3), stamp(T1, 'a', 3))).toBe(0);
  });

  it('is a total order: reflexive, antisymmetric, transitive, and zero only for equal stamps (property)', () => {
    fc.assert(
      fc.property(arbStamp, arbStamp, arbStamp, (a, b, c) => {
        expect(compareStamps(a, a)).toBe(0);
        expect(sign(compareStamps(a, b)) + sign(compareStamps(b, a))).toBe(0);
        expect(compareStamps(a, b) === 0).toBe(JSON.stringify(a) === JSON.stringify(b));
        if (compareStamps(a, b) <= 0 && compareStamps(b, c) <= 0) expect(compareStamps(a, c)).toBeLessThanOrEqual(0);
      }),
      { numRuns: 500 },
    );
  });

  it('sorting with it agrees with the lexicographic order of (createdAt, streamId, generation) (property)', () => {
    fc.assert(
      fc.property(fc.array(arbStamp, { maxLength: 12 }), (stamps) => {
        const sorted = [...stamps].sort(compareStamps);
        const key = (s: Stamp) => [s.streamCreatedAt, s.streamId, String(s.cursorChangedAtSourceOffset).padStart(3, '0')].join('|');
        expect(sorted.map(key)).toEqual(stamps.map(key).sort());
      }),
    );
  });
});

describe('sameLifetime', () => {
  it('compares streamId and creation time, not the generation', () => {
    expect(sameLifetime(stamp(T1, 'a', 1), stamp(T1, 'a', 9))).toBe(true);
    expect(sameLifetime(stamp(T1, 'a', 1), stamp(T2, 'a', 1))).toBe(false);
    expect(sameLifetime(stamp(T1, 'a', 1), stamp(T1, 'b', 1))).toBe(false);
  });
});
