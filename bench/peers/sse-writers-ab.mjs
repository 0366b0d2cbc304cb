#!/usr/bin/env node
/**
 * What live SSE readers cost a stream's writers, two builds side by side (docs/performance.md
 * "Live frames leave at once"): for each build in turn (order alternating per round), a fresh
 * server (`--durability full`), one stream with READERS live SSE readers (`?live=sse`), then WRITERS
 * closed-loop writers appending to it for SECONDS seconds over keep-alive connections. Prints per
 * run the writers' answer latency (p50, p99), appends per second, the server's CPU per append and
 * the chunks each reader received per append.
 *
 *   node bench/peers/sse-writers-ab.mjs OLD_CLI NEW_CLI   (READERS=50 WRITERS=1 SECONDS=4 ROUNDS=3)
 *
 * A CLI is `packages/cli/bin/rivulet.js` of a build (`node bench/peers/build-commit.mjs COMMIT`
 * prints another commit's).
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { RawConnection } from '../append/raw-http-client.mjs';
import { procCpuMs, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { percentile } from './verdict.mjs';

const [oldCli, newCli] = process.argv.slice(2);
if (!oldCli || !newCli) {
  console.error('usage: node bench/peers/sse-writers-ab.mjs OLD_CLI NEW_CLI   (READERS=50 WRITERS=1 SECONDS=4 ROUNDS=3)');
  process.exit(2);
}
const env = (name, fallback) => Number(process.env[name] ?? fallback);
const [readers, writers, seconds, rounds] = [env('READERS', 50), env('WRITERS', 1), env('SECONDS', 4), env('ROUNDS', 3)];
const folder = tempFolders('rivulet-sse-writers-');
const PATH = '/bench/sse-writers';

/** A live SSE reader of PATH counting the chunks it receives; resolves with its closer once open. */
function reader(url, onChunk) {
  return new Promise((resolve, reject) => {
    const request = http.get(`${url}/v1/streams${PATH}?live=sse`, (response) => {
      if (response.statusCode !== 200) return reject(new Error(`SSE answered ${response.statusCode}`));
      response.setEncoding('utf8');
      let open = false;
      response.on('data', (chunk) => {
        onChunk();
        if (!open && chunk.includes('event: stream')) {
          open = true;
          resolve(() => request.destroy());
        }
      });
    });
    request.on('error', reject);
  });
}

async function run(cli, label, round) {
  const server = await startServer([cli, 'serve', '--port', '0', '--data', folder(`${label}-${round}`), '--durability', 'full'], label);
  const target = new URL(server.url);
  const connect = () => new RawConnection(target.hostname, Number(target.port));
  const first = connect();
  try {
    await first.request('POST', `/v1/streams${PATH}`, Buffer.from(JSON.stringify({ type: 'bench/opened', payload: {} })));
    let chunks = 0;
    const closers = await Promise.all(Array.from({ length: readers }, () => reader(server.url, () => chunks++)));
    const connections = [first, ...Array.from({ length: writers - 1 }, connect)];
    const latencies = [];
    const chunks0 = chunks;
    const cpu0 = procCpuMs(server.child.pid);
    const end = performance.now() + seconds * 1000;
    await Promise.all(
      connections.map(async (conn, w) => {
        for (let i = 0; performance.now() < end; i++) {
          const body = Buffer.from(JSON.stringify({ type: 'bench/e', payload: { w, i, pad: 'x'.repeat(100) } }));
          const t0 = performance.now();
          const { status, text } = await conn.request('POST', `/v1/streams${PATH}`, body);
          if (status !== 200) throw new Error(`append answered ${status}: ${text.slice(0, 200)}`);
          latencies.push(performance.now() - t0);
        }
      }),
    );
    const cpuMs = procCpuMs(server.child.pid) - cpu0;
    closers.forEach((close) => close());
    connections.slice(1).forEach((conn) => conn.close());
    const n = latencies.length;
    return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), perSec: n / seconds, cpuUs: (cpuMs * 1000) / n, chunksPerAppend: readers > 0 ? (chunks - chunks0) / n / readers : 0 };
  } finally {
    first.close();
    await stopServer(server);
  }
}

console.log(`${readers} live SSE readers, ${writers} writer(s), ${seconds} s per run, ${rounds} rounds`);
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? [['old', oldCli], ['new', newCli]] : [['new', newCli], ['old', oldCli]];
  for (const [label, cli] of order) {
    const r = await run(cli, label, round);
    console.log(
      `${round} ${label}  answer p50 ${r.p50.toFixed(3)} p99 ${r.p99.toFixed(3)} ms  ${Math.round(r.perSec)}/s  ${r.cpuUs.toFixed(1)} µs CPU/append  ${r.chunksPerAppend.toFixed(2)} chunks per reader per append`,
    );
  }
}
