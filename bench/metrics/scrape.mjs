// The cost of one scrape of /metrics against the number of streams: the built Node host
// (packages/server/dist) in this process, N streams created through its service, every tenth with a
// copy subscription halted on a paused receiver (so the lag gauge has candidates), then 30 scrapes
// over loopback HTTP and 30 in process. Prints series, bytes and the scrape times per N.
//   npm run build && node bench/metrics/scrape.mjs [--streams 100,10000]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { EventType } from '../../packages/contract/dist/index.js';
import { startNodeServer } from '../../packages/server/dist/hosts/node/serve.js';

const { values } = parseArgs({ options: { streams: { type: 'string', default: '100,10000' } } });
const sizes = values.streams.split(',').map(Number);
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))];

for (const n of sizes) {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-scrape-'));
  const server = await startNodeServer({ host: '127.0.0.1', port: 0, data: dir, retryBaseMs: 5, retryMaxMs: 20, maxDeliveryAttempts: 2, logger: { error() {} } });
  try {
    const { service } = server;
    await service.append(null, '/b/paused', [{ type: EventType.paused, payload: { reason: 'bench' } }]);
    const sub = { type: EventType.subscriptionConfigured, payload: { subscriptionKey: 'k', receiver: { action: 'copy-to-stream', receivingStreamPath: '/b/paused', delivery: { start: 'beginning', onFailingEvent: 'halt' } } } };
    for (let start = 0; start < n; start += 500) {
      const batch = [];
      for (let i = start; i < Math.min(n, start + 500); i++) batch.push(service.append(null, `/b/s/${i}`, i % 10 === 0 ? [{ type: 'x' }, sub] : [{ type: 'x' }]));
      await Promise.all(batch);
    }
    const halted = Math.ceil(n / 10);
    for (;;) {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      if (text.includes(`rivulet_subscriptions_halted ${halted}\n`)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const times = [];
    let text = '';
    for (let i = 0; i < 30; i++) {
      const t0 = performance.now();
      text = await (await fetch(`${server.url}/metrics`)).text();
      times.push(performance.now() - t0);
    }
    const own = [];
    const all = [];
    for (let i = 0; i < 30; i++) {
      let t0 = performance.now();
      server.metrics.registry.render();
      own.push(performance.now() - t0);
      t0 = performance.now();
      await server.metrics.registry.scrape();
      all.push(performance.now() - t0);
    }
    const series = text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
    console.log(`${n} streams (${halted} lagging subscriptions): ${series} series, ${text.length} bytes, over HTTP median ${quantile(times, 0.5).toFixed(2)} ms (p90 ${quantile(times, 0.9).toFixed(2)}); in process: rivulet_* families ${quantile(own, 0.5).toFixed(2)} ms, with the process metrics ${quantile(all, 0.5).toFixed(2)} ms`);
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
