#!/usr/bin/env node
/**
 * The 200-client appends load (bench/peers run.mjs `--only appends200`: 200 closed-loop clients
 * over 100 streams, a unique idempotency key each, `--durability full`) on two builds and nothing
 * else, alternating their order each round, a fresh server per build and round: per round each
 * build's appends per second and p99, then the medians and the per-round p99 ratios of the first
 * build to the second. For levers aimed at the tail (bench/README "Merge work in slices").
 *
 *   R=8 node bench/peers/appends200-ab.mjs NEW=CLI OLD=CLI
 */
import { startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { appendLoad } from './load.mjs';
const folder = tempFolders('rivulet-p99ab-');
const builds = process.argv.slice(2).map((s) => s.split('='));
const res = Object.fromEntries(builds.map(([n]) => [n, []]));
const rounds = Number(process.env.R ?? 6);
if (builds.length !== 2 || builds.some((b) => b.length !== 2)) {
  console.error('usage: R=8 node bench/peers/appends200-ab.mjs NEW=CLI OLD=CLI');
  process.exit(2);
}
for (let r = 0; r < rounds; r++) {
  const order = r % 2 ? [...builds].reverse() : builds;
  for (const [name, cli] of order) {
    const server = await startServer([cli, 'serve', '--port', '0', '--data', folder(name + r), '--durability', 'full'], name);
    const result = await appendLoad({ url: server.url, clients: 200, streams: 100, keys: true, warmupMs: 1000, durationMs: 6000, pathOf: (i) => `/v1/streams/bench/s${i}` });
    await stopServer(server);
    res[name].push([result.perSec, result.p99ms]);
    console.log(r, name, Math.round(result.perSec), result.p99ms.toFixed(1));
  }
}
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
for (const [n] of builds) console.log(n, 'median/s', Math.round(med(res[n].map((x) => x[0]))), 'median p99', med(res[n].map((x) => x[1])).toFixed(1));
const [a, b] = builds.map(([n]) => n);
console.log('per-round p99 ratio', a, '/', b, res[a].map((x, i) => (x[1] / res[b][i][1]).toFixed(2)).join(' '));
