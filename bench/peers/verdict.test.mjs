import { describe, expect, it } from 'vitest';
import { cost, median, parseRedisBenchmarkCsv, ratio, roundOrder, verdict } from './verdict.mjs';

describe('bench/peers verdicts', () => {
  it('takes the median of odd and even counts, ignoring missing values', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([5, NaN, 1, 3])).toBe(3);
    expect(median([NaN])).toBeNaN();
    expect(median([])).toBeNaN();
  });

  it('answers NaN for a ratio without a positive baseline', () => {
    expect(ratio(30, 20)).toBe(1.5);
    expect(ratio(30, 0)).toBeNaN();
    expect(ratio(NaN, 20)).toBeNaN();
    expect(cost(90, 100)).toBeCloseTo(0.1);
    expect(cost(110, 100)).toBeCloseTo(-0.1);
  });

  it('passes a target exactly at its limit when inclusive, and not when strict', () => {
    expect(verdict(1.0, '>=', 1.0)).toBe('PASS');
    expect(verdict(0.999, '>=', 1.0)).toBe('MISS');
    expect(verdict(15, '<', 15)).toBe('MISS');
    expect(verdict(14.9, '<', 15)).toBe('PASS');
    expect(verdict(0.1, '<=', 0.1)).toBe('PASS');
    expect(verdict(0.11, '<=', 0.1)).toBe('MISS');
  });

  it('never passes a figure that was not measured', () => {
    expect(verdict(NaN, '>=', 0)).toBe('SKIP');
    expect(verdict(ratio(10, NaN), '>=', 0.5)).toBe('SKIP');
    expect(() => verdict(1, '>', 0)).toThrow(/unknown comparison/);
  });

  it('alternates the order of the contenders between rounds', () => {
    expect(roundOrder(['a', 'b', 'c'], 0)).toEqual(['a', 'b', 'c']);
    expect(roundOrder(['a', 'b', 'c'], 1)).toEqual(['c', 'b', 'a']);
    expect(roundOrder(['a', 'b', 'c'], 2)).toEqual(['a', 'b', 'c']);
  });

  it("reads redis-benchmark's CSV line", () => {
    const csv = [
      '"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"',
      '"XADD bench:__rand_int__ * e {"a":"x","b":[1,2]}","44722.72","1.050","0.200","0.975","1.631","2.215","9.151"',
    ].join('\n');
    expect(parseRedisBenchmarkCsv(csv)).toEqual({ rps: 44722.72, p50ms: 0.975, p99ms: 2.215 });
    expect(() => parseRedisBenchmarkCsv('Could not connect to Redis')).toThrow(/no CSV result/);
  });
});
