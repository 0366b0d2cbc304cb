#!/usr/bin/env node
/**
 * A/B of the read path: builds of packages/server (dist folders) each serve one stream of 20,000
 * events (about 100-byte payloads, appended in batches of 1000), and one sequential client reads
 * it in pages of 500 (`GET /v1/streams/{path}?afterOffset=…&limit=500`) `--passes` times after one
 * warm-up pass. Prints the server's CPU per event read, per round and as medians; rounds alternate
 * the builds' order, each on a fresh data folder.
 *
 *   node bench/append/read-ab.mjs NAME=DIST NAME=DIST [--rounds 12] [--passes 8]
 */
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { RawConnection } from './raw-http-client.mjs';
import { procCpuMs, root, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { median } from './summary.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: 'string', default: '12' }, passes: { type: 'string', default: '8' } },
});
if (positionals.length === 0) throw new Error('usage: read-ab.mjs NAME=DIST [NAME=DIST …] [--rounds N] [--passes N]');
const builds = positionals.map((arg) => {
  const at = arg.indexOf('=');
  return { name: arg.slice(0, at), dist: resolve(arg.slice(at + 1)) };
});
const EVENTS = 20_000;
const PAGE = 500;
const freshDir = tempFolders('rivulet-bench-read-');

const event = (n) => ({ type: 'bench/e', payload: { user: 'u-00042', text: 'the quick brown fox jumps over the lazy dog 0123456789', n } });

async function measure(build, round) {
  const server = await startServer(
    [join(root, 'bench', 'append', 'launch-dist.mjs'), '--dist', build.dist, 'serve', '--port', '0', '--data', freshDir(`${build.name}-${round}`), '--durability', 'relaxed'],
    build.name,
  );
  const url = new URL(server.url);
  const conn = new RawConnection(url.hostname, Number(url.port));
  const ask = async (method, path, body) => {
    const answer = await conn.request(method, path, body);
    if (answer.status !== 200) throw new Error(`${method} ${path}: ${answer.status} ${answer.text}`);
  };
  try {
    for (let done = 0; done < EVENTS; done += 1000) {
      await ask('POST', '/v1/streams/bench/read', Buffer.from(JSON.stringify(Array.from({ length: 1000 }, (_, i) => event(done + i)))));
    }
    const pass = async () => {
      for (let after = 0; after <= EVENTS; after += PAGE) await ask('GET', `/v1/streams/bench/read?afterOffset=${after}&limit=${PAGE}`);
    };
    await pass(); // warm-up
    const cpu0 = procCpuMs(server.child.pid);
    for (let p = 0; p < Number(values.passes); p++) await pass();
    // Every event (the stream's created event included) once per pass.
    return ((procCpuMs(server.child.pid) - cpu0) * 1000) / ((EVENTS + 1) * Number(values.passes));
  } finally {
    conn.close();
    await stopServer(server);
  }
}

const results = new Map(builds.map((b) => [b.name, []]));
for (let round = 0; round < Number(values.rounds); round++) {
  for (const build of round % 2 ? [...builds].reverse() : builds) results.get(build.name).push(await measure(build, round));
}
console.log(`${EVENTS} events read in pages of ${PAGE}, ${values.passes} passes per round, ${values.rounds} rounds; server CPU µs per event:`);
for (const [name, rounds] of results) console.log(`${name.padEnd(10)} median ${median(rounds).toFixed(2)}  (${rounds.map((x) => x.toFixed(2)).join(' ')})`);
if (builds.length === 2) {
  const [a, b] = builds.map((build) => results.get(build.name));
  const ratios = a.map((x, i) => b[i] / x);
  console.log(`${builds[1].name} / ${builds[0].name} per round: median ${median(ratios).toFixed(2)}, lower in ${ratios.filter((r) => r < 1).length} of ${ratios.length}`);
}
process.exit(0);
