/** Throughput from Prometheus counters (src/metrics.ts). */
import { describe, expect, it } from 'vitest';
import { parsePrometheus, RateWindow, readCounters, sumMetric } from '../src/metrics.js';

const TEXT = `# HELP rivulet_appends_total Append requests committed
# TYPE rivulet_appends_total counter
rivulet_appends_total 12
# TYPE rivulet_deliveries_total counter
rivulet_deliveries_total{action="copy-to-stream",outcome="ok"} 5
rivulet_deliveries_total{action="copy-to-stream",outcome="unavailable"} 3
rivulet_subscriptions_halted 1
rivulet_subscription_lag_events{key="a \\"quoted\\", key",project="",stream="/a b"} 4
rivulet_http_request_duration_seconds_bucket{route="/v1/streams/*",status="200",le="+Inf"} 9
`;

describe('metrics', () => {
  it('parses samples, labels with escapes and special values', () => {
    const samples = parsePrometheus(TEXT);
    expect(samples.find((s) => s.name === 'rivulet_subscription_lag_events')).toEqual({
      name: 'rivulet_subscription_lag_events',
      labels: { key: 'a "quoted", key', project: '', stream: '/a b' },
      value: 4,
    });
    expect(sumMetric(samples, 'rivulet_deliveries_total')).toBe(8);
    expect(samples.find((s) => s.name.endsWith('_bucket'))?.labels.le).toBe('+Inf');
    expect(readCounters(TEXT)).toEqual({ appends: 12, deliveries: 8 });
  });

  it('differences counters into rates over a sliding window, surviving a restart', () => {
    const window = new RateWindow(60_000);
    window.add(0, { appends: 10, deliveries: 0 });
    expect(window.series()).toEqual([]);
    window.add(2_000, { appends: 30, deliveries: 4 });
    expect(window.series()).toEqual([{ t: 2_000, appendsPerSecond: 10, deliveriesPerSecond: 2 }]);
    // A counter that went down restarted from zero.
    window.add(3_000, { appends: 5, deliveries: 4 });
    expect(window.series().at(-1)).toEqual({ t: 3_000, appendsPerSecond: 5, deliveriesPerSecond: 0 });
    window.add(70_000, { appends: 5, deliveries: 4 });
    expect(window.series().map((p) => p.t)).toEqual([70_000]);
  });
});
