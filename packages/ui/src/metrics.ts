/**
 * Throughput from /metrics (Prometheus text, protocol §15.2): counters are sampled and
 * differenced into per-second rates over a sliding window. Pure, so Node tests cover it.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the sample lines of the Prometheus text format (comments and blank lines skipped). */
export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const sample = parseLine(line);
    if (sample) samples.push(sample);
  }
  return samples;
}

function parseLine(line: string): Sample | undefined {
  const match = /^[A-Za-z_:][A-Za-z0-9_:]*/.exec(line);
  if (!match) return undefined;
  const name = match[0];
  let i = name.length;
  const labels: Record<string, string> = {};
  if (line[i] === '{') {
    i++;
    while (i < line.length && line[i] !== '}') {
      const eq = line.indexOf('=', i);
      if (eq < 0 || line[eq + 1] !== '"') return undefined;
      const key = line.slice(i, eq).trim().replace(/^,/, '').trim();
      let value = '';
      let j = eq + 2;
      for (; j < line.length && line[j] !== '"'; j++) {
        if (line[j] === '\\' && j + 1 < line.length) {
          j++;
          value += line[j] === 'n' ? '\n' : line[j];
        } else {
          value += line[j];
        }
      }
      labels[key] = value;
      i = j + 1;
      if (line[i] === ',') i++;
    }
    i++;
  }
  const valueText = line.slice(i).trim().split(/\s+/)[0] ?? '';
  const value = valueText === '+Inf' ? Infinity : valueText === '-Inf' ? -Infinity : Number(valueText);
  if (valueText === '' || Number.isNaN(value)) return undefined;
  return { name, labels, value };
}

/** The sum of every series of one metric (all label sets). */
export function sumMetric(samples: readonly Sample[], name: string): number {
  let total = 0;
  for (const s of samples) if (s.name === name) total += s.value;
  return total;
}

export interface Counters {
  appends: number;
  deliveries: number;
}

export interface RatePoint {
  /** Unix ms of the later sample. */
  t: number;
  appendsPerSecond: number;
  deliveriesPerSecond: number;
}

export function readCounters(text: string): Counters {
  const samples = parsePrometheus(text);
  return {
    appends: sumMetric(samples, 'rivulet_appends_total'),
    deliveries: sumMetric(samples, 'rivulet_deliveries_total'),
  };
}

/** Differences successive counter samples into rates, keeping the last `windowMs`. */
export class RateWindow {
  private last: { t: number; counters: Counters } | undefined;
  private readonly points: RatePoint[] = [];

  constructor(readonly windowMs = 60_000) {}

  add(t: number, counters: Counters): void {
    const previous = this.last;
    this.last = { t, counters };
    if (!previous || t <= previous.t) return;
    const seconds = (t - previous.t) / 1000;
    // A counter that went down restarted (a server restart): count from zero.
    const delta = (now: number, before: number) => (now >= before ? now - before : now);
    this.points.push({
      t,
      appendsPerSecond: delta(counters.appends, previous.counters.appends) / seconds,
      deliveriesPerSecond: delta(counters.deliveries, previous.counters.deliveries) / seconds,
    });
    while (this.points.length > 0 && this.points[0]!.t < t - this.windowMs) this.points.shift();
  }

  series(): readonly RatePoint[] {
    return this.points;
  }
}
