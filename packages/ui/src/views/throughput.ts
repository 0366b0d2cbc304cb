/**
 * The header's throughput chart: appends/s and deliveries/s over the last minute, from
 * rivulet_appends_total and rivulet_deliveries_total sampled every second (client.metrics()).
 */
import { RivuletError, type RivuletClient } from '@rivulet/client';
import { every } from '../common.js';
import { h, svg } from '../dom.js';
import { RateWindow, readCounters, type RatePoint } from '../metrics.js';

const WIDTH = 180;
const HEIGHT = 36;
const WINDOW_MS = 60_000;

export class ThroughputChart {
  readonly element: HTMLElement;
  private readonly window = new RateWindow(WINDOW_MS);
  private readonly chart: SVGSVGElement;
  private readonly appendsLine: SVGPolylineElement;
  private readonly deliveriesLine: SVGPolylineElement;
  private readonly appendsValue: HTMLElement;
  private readonly deliveriesValue: HTMLElement;

  constructor(private readonly client: RivuletClient) {
    this.chart = svg('svg', { width: WIDTH, height: HEIGHT, viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: 'spark', role: 'img' });
    this.chart.appendChild(svg('line', { x1: 0, y1: HEIGHT - 0.5, x2: WIDTH, y2: HEIGHT - 0.5, class: 'spark-axis' }));
    this.appendsLine = svg('polyline', { class: 'spark-appends', points: '' });
    this.deliveriesLine = svg('polyline', { class: 'spark-deliveries', points: '' });
    this.chart.append(this.appendsLine, this.deliveriesLine);
    this.appendsValue = h('strong', null, '–');
    this.deliveriesValue = h('strong', null, '–');
    this.element = h(
      'div',
      { class: 'throughput', 'data-testid': 'throughput', title: 'Server-wide, last minute (from /metrics)' },
      this.chart,
      h(
        'div',
        { class: 'legend small' },
        h('div', null, h('span', { class: 'key key-appends', 'aria-hidden': 'true' }), 'appends/s ', this.appendsValue),
        h('div', null, h('span', { class: 'key key-deliveries', 'aria-hidden': 'true' }), 'deliveries/s ', this.deliveriesValue),
      ),
    );
    this.describe();
  }

  start(signal: AbortSignal): void {
    every(1000, signal, () => this.sample(signal));
  }

  private async sample(signal: AbortSignal): Promise<void> {
    let text: string;
    try {
      text = await this.client.metrics({ signal });
    } catch (error) {
      if (signal.aborted) return;
      this.appendsValue.textContent = '–';
      this.deliveriesValue.textContent = '–';
      // With tokens, /metrics is for admin tokens only (it describes every project).
      this.element.title =
        error instanceof RivuletError && error.code === 'FORBIDDEN' ? 'Server-wide metrics need an admin token' : 'Metrics unavailable';
      return;
    }
    const counters = readCounters(text);
    this.window.add(Date.now(), counters);
    this.draw(this.window.series());
  }

  private draw(points: readonly RatePoint[]): void {
    const now = Date.now();
    const max = Math.max(1, ...points.map((p) => Math.max(p.appendsPerSecond, p.deliveriesPerSecond)));
    const x = (t: number) => (((t - (now - WINDOW_MS)) / WINDOW_MS) * WIDTH).toFixed(1);
    const y = (v: number) => (HEIGHT - 2 - (v / max) * (HEIGHT - 4)).toFixed(1);
    this.appendsLine.setAttribute('points', points.map((p) => `${x(p.t)},${y(p.appendsPerSecond)}`).join(' '));
    this.deliveriesLine.setAttribute('points', points.map((p) => `${x(p.t)},${y(p.deliveriesPerSecond)}`).join(' '));
    const last = points.at(-1);
    this.appendsValue.textContent = last ? formatRate(last.appendsPerSecond) : '–';
    this.deliveriesValue.textContent = last ? formatRate(last.deliveriesPerSecond) : '–';
    this.describe(last);
  }

  private describe(last?: RatePoint): void {
    this.chart.setAttribute(
      'aria-label',
      last
        ? `Throughput over the last minute: ${formatRate(last.appendsPerSecond)} appends per second, ${formatRate(last.deliveriesPerSecond)} deliveries per second`
        : 'Throughput over the last minute: no samples yet',
    );
  }
}

function formatRate(value: number): string {
  return value >= 100 ? value.toFixed(0) : value.toFixed(1);
}
