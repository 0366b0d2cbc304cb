/**
 * In-process A/B through HTTP: each build's Node host (`startNodeServer` of a packages/server dist
 * folder) is started in this process, and one sequential keep-alive client in this process appends
 * one event per request to it, as in scenario (a) `relaxed`. Rounds interleave the builds (the order
 * alternates); each round's figure is the CPU of this process per request, server and client
 * together. With two builds it also prints the median of the per-round ratios (second ÷ first),
 * which cancels the machine's slow drifts better than medians of each side.
 *
 * Calibrate with an A/A run (the same dist twice): on the shared 2-core VM of bench/README the
 * paired median of an A/A run came out at 0.97-0.99 over 20-30 rounds, so read a paired median
 * only outside about ±4%.
 *
 *   node bench/append/http-ab.mjs NAME=DIST NAME=DIST [--rounds 30] [--ms 600]
 */
import http from 'node:http';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { eventJson } from './loadgen.mjs';

/** The Node host module of a dist folder: hosts/node/serve.js, or hosts/node.js in builds before that move. */
function nodeHostOf(dist) {
  const current = join(resolve(dist), 'hosts', 'node', 'serve.js');
  return existsSync(current) ? current : join(resolve(dist), 'hosts', 'node.js');
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: 'string', default: '30' }, ms: { type: 'string', default: '600' } },
});
const ROUNDS = Number(values.rounds);
const MS = Number(values.ms);
if (positionals.length === 0) throw new Error('usage: http-ab.mjs NAME=DIST [NAME=DIST …] [--rounds N] [--ms N]');

const bodies = Array.from({ length: 64 }, (_, i) => Buffer.from(eventJson(i, 0)));

/** Sequential appends to `port` for `ms` milliseconds; answers how many were answered 200. */
function drive(port, ms) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let n = 0;
  const until = performance.now() + ms;
  return new Promise((resolvePromise, reject) => {
    const one = () => {
      if (performance.now() >= until) {
        agent.destroy();
        resolvePromise(n);
        return;
      }
      const body = bodies[n & 63];
      const req = http.request(
        { port, host: '127.0.0.1', path: '/v1/streams/bench/a', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } },
        (res) => {
          if (res.statusCode !== 200) reject(new Error(`append answered ${res.statusCode}`));
          res.resume();
          res.on('end', () => {
            n++;
            one();
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    };
    one();
  });
}

const servers = [];
for (const arg of positionals) {
  const [name, dir] = arg.split('=');
  const { startNodeServer } = await import(pathToFileURL(nodeHostOf(dir)).href);
  const data = mkdtempSync(join(tmpdir(), 'rivulet-http-ab-'));
  const server = await startNodeServer({ port: 0, host: '127.0.0.1', data, durability: 'relaxed' });
  const port = Number(new URL(server.url).port);
  await drive(port, 1500); // warm-up
  servers.push({ name, server, port, data, rounds: [] });
}
for (let round = 0; round < ROUNDS; round++) {
  for (const s of round % 2 ? [...servers].reverse() : servers) {
    const before = process.cpuUsage();
    const n = await drive(s.port, MS);
    const used = process.cpuUsage(before);
    s.rounds.push((used.user + used.system) / n);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(`${ROUNDS} rounds of ${MS} ms, one client, 1 event per request, relaxed`);
for (const s of servers) {
  console.log(`${s.name.padEnd(10)} CPU µs/request (server + client): median ${median(s.rounds).toFixed(1)}  (${s.rounds.map((x) => x.toFixed(0)).join(' ')})`);
}
if (servers.length === 2) {
  const [a, b] = servers;
  const ratios = a.rounds.map((x, i) => b.rounds[i] / x);
  console.log(`paired ${b.name}/${a.name}: median ${median(ratios).toFixed(3)}; below 1 in ${ratios.filter((x) => x < 1).length} of ${ratios.length} rounds`);
}
for (const s of servers) {
  await s.server.close();
  rmSync(s.data, { recursive: true, force: true });
}
process.exit(0);
