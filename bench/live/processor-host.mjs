#!/usr/bin/env node
/**
 * The processor host of bench/live/processors.mjs: the BUILT SDK's serveProcessors with one trivial
 * processor ("count": n + 1 per event), stored in a SQLite file.
 *
 *   node bench/live/processor-host.mjs --url URL --db FILE --durability full|relaxed --target OFFSET
 *     prints READY once registered, then DONE <checkpoint> <epoch ms> when the checkpoint reaches OFFSET
 *   node bench/live/processor-host.mjs --bare N --db FILE --durability full|relaxed
 *     baseline without RPC or server: N events folded and committed by the same host code in a loop
 *     (the floor set by one SQLite commit per event); prints BARE <N> <ms>
 */
import { parseArgs } from 'node:util';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    db: { type: 'string' },
    durability: { type: 'string', default: 'full' },
    target: { type: 'string' },
    bare: { type: 'string' },
    name: { type: 'string', default: 'bench' },
  },
});
const client = await import(pathToFileURL(join(root, 'packages', 'client', 'dist', 'index.js')).href);
const hosting = await import(pathToFileURL(join(root, 'packages', 'client', 'dist', 'processor-host.js')).href);

const count = client.defineProcessor({ slug: 'count', initialState: { n: 0 }, reduce: (state) => ({ n: state.n + 1 }) });

if (values.bare) {
  const n = Number(values.bare);
  const host = new hosting.ProcessorHost([count], { dbPath: values.db, durability: values.durability });
  const { processEventBatch } = await host.wake({ stream: { projectId: null, path: '/bench/p', streamId: 'bare', streamMaxOffset: n }, subscriptionKey: 'count' });
  const t0 = performance.now();
  for (let offset = 1; offset <= n; offset++) {
    await processEventBatch({
      projectId: null,
      path: '/bench/p',
      streamId: 'bare',
      subscriptionKey: 'count',
      streamMaxOffset: n,
      events: [{ path: '/bench/p', offset, createdAt: new Date().toISOString(), type: 'bench/e', payload: { n: offset } }],
      reportDeliveryResult: () => ({ accepted: true }),
    });
  }
  console.log(`BARE ${n} ${(performance.now() - t0).toFixed(1)}`);
  host.close();
  process.exit(0);
}

const target = Number(values.target);
const itx = await client.connect(values.url);
const served = hosting.serveProcessors(itx, values.name, [count], {
  dbPath: values.db,
  durability: values.durability,
  onCommitted(info) {
    if (info.checkpoint >= target) console.log(`DONE ${info.checkpoint} ${Date.now()} ${info.state.n}`);
  },
});
await served.ready;
console.log('READY');
setInterval(() => undefined, 60_000);
