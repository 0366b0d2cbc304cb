import { describe, expect, it } from 'vitest';
import { targetLines } from './targets.mjs';
import { copyLags, cost, cpuShare, dueCount, median, parseRedisBenchmarkCsv, percentile, ratio, roundOrder, settled, verdict } from './verdict.mjs';

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

describe('bench/peers lag, pacing and idle figures', () => {
  it('takes nearest-rank percentiles, ignoring missing values', () => {
    const hundred = Array.from({ length: 100 }, (_, i) => 100 - i); // 100 … 1, unsorted
    expect(percentile(hundred, 50)).toBe(50);
    expect(percentile(hundred, 99)).toBe(99);
    expect(percentile(hundred, 100)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([1, 2, 3, NaN], 100)).toBe(3);
    expect(percentile([], 50)).toBeNaN();
    expect(() => percentile([1], 0)).toThrow(/percentile must be in/);
    expect(() => percentile([1], 101)).toThrow(/percentile must be in/);
  });

  it('paces items steadily: the first at once, one more every 1/rate s, never beyond the total', () => {
    expect(dueCount(-1, 1000, 10)).toBe(0);
    expect(dueCount(0, 1000, 10)).toBe(1);
    expect(dueCount(0.999, 1000, 10)).toBe(1);
    expect(dueCount(1, 1000, 10)).toBe(2);
    expect(dueCount(2500, 2, 100)).toBe(6);
    expect(dueCount(60_000, 1000, 5000)).toBe(5000);
  });

  it('measures each copy from its acknowledgement, counting copies never seen as missing', () => {
    const { lags, missing } = copyLags([10, 20, 30, undefined], [15, 19.5, undefined, 40]);
    // Item 1 was seen before its acknowledgement arrived: lag 0. Item 2 never came. Item 3 was never acknowledged.
    expect(lags).toEqual([5, 0]);
    expect(missing).toBe(1);
  });

  it('calls memory settled only over a full window within the tolerance', () => {
    expect(settled([100, 100.5, 101], 4, 1)).toBe(false);
    expect(settled([90, 100, 100.5, 101], 3, 1)).toBe(true);
    expect(settled([90, 100, 100.5, 101.01], 3, 1)).toBe(false);
  });

  it('reports CPU as a share of one core, NaN without a window', () => {
    expect(cpuShare(60, 30_000)).toBeCloseTo(0.002);
    expect(cpuShare(60, 0)).toBeNaN();
    expect(cpuShare(NaN, 1000)).toBeNaN();
  });
});

describe('bench/peers target lines', () => {
  const summary = {
    'rivulet-lag': { lagP50ms: 2, lagP99ms: 9 },
    'nats-lag': { lagP50ms: 1, lagP99ms: 9 },
    'rivulet-subs10': { perSec: 951, cpuUsPerReq: 60 },
    'rivulet-subs0': { perSec: 1000, cpuUsPerReq: 50 },
    'rivulet-idle': { aboveEmptyMb: 40, idleCpuPct: 0.2, emptyIdleCpuPct: 0.1 },
  };
  const s = (name, field) => summary[name]?.[field] ?? NaN;
  const verdicts = (groups) => Object.fromEntries(targetLines(s, { groups }).map(([t, , v]) => [t.trim(), v]));

  it('judges the lag, filtered-subscription and idle targets at their limits', () => {
    const v = verdicts(['lag', 'subs', 'idle']);
    expect(v['live copy lag p99 <= NATS sourcing']).toBe('PASS');
    expect(v['ten subscriptions with non-matching filters cost < 5 % of append throughput']).toBe('PASS');
    expect(v['streams with a copy subscription each: RSS above an empty server <= 40 MB']).toBe('PASS');
    expect(v['... and CPU while idle <= 0.2 %']).toBe('PASS');
    summary['rivulet-lag'].lagP99ms = 9.01;
    summary['rivulet-subs10'].perSec = 950;
    summary['rivulet-idle'].aboveEmptyMb = 40.1;
    summary['rivulet-idle'].idleCpuPct = 0.21;
    const w = verdicts(['lag', 'subs', 'idle']);
    expect(w['live copy lag p99 <= NATS sourcing']).toBe('MISS');
    expect(w['ten subscriptions with non-matching filters cost < 5 % of append throughput']).toBe('MISS');
    expect(w['streams with a copy subscription each: RSS above an empty server <= 40 MB']).toBe('MISS');
    expect(w['... and CPU while idle <= 0.2 %']).toBe('MISS');
  });

  it('skips a target whose contender did not run, and lists only the groups run', () => {
    delete summary['nats-lag'];
    delete summary['rivulet-idle'];
    const v = verdicts(['lag', 'idle']);
    expect(v['live copy lag p99 <= NATS sourcing']).toBe('SKIP');
    expect(v['streams with a copy subscription each: RSS above an empty server <= 40 MB']).toBe('SKIP');
    expect(Object.keys(v).some((t) => t.startsWith('ten subscriptions'))).toBe(false);
    expect(Object.keys(verdicts(['reads']))[0]).toBe('catch-up reads, pages of 500 from random offsets >= 1.0x Redis XRANGE');
  });

  it('judges the reads target on the random pages read by wrk, the Node reader and the one-pass read reported beside it', () => {
    const reads = {
      'rivulet-read-wrk': { eventsPerSec: 400, cpuUsPerEvent: 1.5 },
      'rivulet-read-pages': { eventsPerSec: 250, cpuUsPerEvent: 1.6 },
      'rivulet-read': { eventsPerSec: 1000, cpuUsPerEvent: 2 },
      'redis-xrange': { eventsPerSec: 500, cpuUsPerEvent: 0.5 },
    };
    const t = (name, field) => reads[name]?.[field] ?? NaN;
    const lines = () => Object.fromEntries(targetLines(t, { groups: ['reads'] }).map(([k, value, v]) => [k.trim(), [value, v]]));
    const target = 'catch-up reads, pages of 500 from random offsets >= 1.0x Redis XRANGE';
    expect(lines()[target]).toEqual(['0.80x', 'MISS']);
    expect(lines()['... server CPU per event, Rivulet ÷ Redis']).toEqual(['3.00x', 'INFO']);
    expect(lines()['... the same pages read by the Node reader (its CPU on the same cores) ÷ Redis']).toEqual(['0.50x', 'INFO']);
    expect(lines()['... one sequential pass on a fresh server (another shape) ÷ Redis']).toEqual(['2.00x', 'INFO']);
    reads['rivulet-read-wrk'].eventsPerSec = 500;
    expect(lines()[target]).toEqual(['1.00x', 'PASS']);
    // Without the wrk contender (wrk missing) there is no verdict, whatever the other readers did.
    delete reads['rivulet-read-wrk'];
    expect(lines()[target][1]).toBe('SKIP');
  });
});
