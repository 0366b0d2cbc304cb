#!/usr/bin/env node
/**
 * bench/receivers/post-ab.mjs: where a webhook POST's client cost goes, side by side in one run.
 * One process sends sequential POSTs (the webhook's headers and a body of the benchmark's size) to
 * the receiver of bench/receivers (webhook-receiver.mjs, a child process, path /baseline) with
 * each client below, in interleaved rounds whose order turns every round, each on a kept
 * connection of its own:
 *
 *   rivulet     the server's webhook client (nodeOutbound, undici dispatch; packages/server/dist)
 *   node-http   node:http with a keep-alive Agent: the client of bench/receivers' bare POST loop
 *   raw-one     the request written as one buffer (head and body joined)
 *   raw-corked  head and body as two writes between cork() and uncork(): what undici does for a
 *               buffer body (one writev)
 *   raw-two     head and body as two writes, not corked (two syscalls, two segments)
 *
 * The raw clients are bench/append's RawConnection with the write changed; they show what writing
 * head and body apart costs, against which the other two can be read. Figures per POST: wall time
 * and this process's CPU (the receiver's is not counted); written to
 * bench/results/receivers-post-ab-<timestamp>.json (--no-write to skip, --out FILE to choose).
 * Expects a built workspace.
 *
 *   node bench/receivers/post-ab.mjs [--posts N] [--rounds N] [--warmup N] [--only NAME,…]
 *
 * (--only: these clients alone, e.g. to trace one client's system calls; ratios need node-http and raw-one.)
 * --time-writes: also times every native socket write (the TCP handle's write and writev, wrapped
 * through the deprecated process.binding) per client: on loopback, a write that wakes the receiver
 * may return only after the receiver has run, so this is wall time inside the call, not CPU.
 */
import os from 'node:os';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { RawConnection } from '../append/raw-http-client.mjs';
import { root, startLineChild } from '../lib/processes.mjs';
import { PAYLOAD, median, writeResult } from '../lib/report.mjs';

const { values: flags } = parseArgs({
  options: {
    posts: { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '3000' },
    only: { type: 'string' },
    out: { type: 'string' },
    'time-writes': { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
  },
});
const POSTS = Number(flags.posts);
const ROUNDS = Number(flags.rounds);
const WARMUP = Number(flags.warmup);

/** Per client and native write method: calls and µs inside them (--time-writes). */
const writeTimes = {};
let running = 'setup';
if (flags['time-writes']) {
  const { TCP } = process.binding('tcp_wrap');
  for (const method of ['writev', 'writeBuffer', 'writeLatin1String', 'writeUtf8String']) {
    const native = TCP.prototype[method];
    TCP.prototype[method] = function timed(...args) {
      const t0 = performance.now();
      const result = native.apply(this, args);
      const spent = (performance.now() - t0) * 1000;
      const key = `${running} ${method}`;
      writeTimes[key] ??= { calls: 0, us: 0 };
      writeTimes[key].calls++;
      writeTimes[key].us += spent;
      return result;
    };
  }
}

const { nodeOutbound } = await import(pathToFileURL(join(root, 'packages/server/dist/hosts/node/outbound.js')).href);
const receiver = await startLineChild(join(root, 'bench/receivers/webhook-receiver.mjs'), [], 'webhook receiver');
const url = new URL('/baseline', receiver.url);
const bodyText = JSON.stringify({ projectId: null, path: '/bench/hook', streamId: 's', offset: 1, event: { type: 'bench/e', payload: PAYLOAD } });
const body = Buffer.from(bodyText);
const headers = {
  'content-type': 'application/json',
  'user-agent': 'rivulet-webhooks/0.1',
  'webhook-id': 'delivery:["s","hook",1,1,1]',
  'webhook-timestamp': '1764640000',
  'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
};
const headText = (extra) =>
  `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\n${Object.entries({ ...headers, ...extra })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;

/** RawConnection with its request written as `write(socket, head, body)` does. */
function rawClient(write) {
  const conn = new RawConnection(url.hostname, Number(url.port));
  conn.request = function request() {
    if (!this.socket) this.connect();
    const head = headText({ 'content-length': String(body.length) });
    return new Promise((resolve) => {
      this.resolve = resolve;
      this.buf = null;
      this.head = null;
      write(this.socket, head, body);
    });
  };
  return {
    async post() {
      const answer = await conn.request();
      if (answer.status !== 204) throw new Error(`raw client: status ${answer.status} ${answer.text}`);
    },
    close: async () => conn.close(),
  };
}

const clients = {
  rivulet() {
    const outbound = nodeOutbound({ allowPrivate: true });
    const signal = new AbortController().signal;
    return {
      async post() {
        const answer = await outbound.post(url.href, { headers, body: bodyText, signal });
        if (answer.status !== 204) throw new Error(`rivulet: status ${answer.status}`);
      },
      close: () => outbound.close(),
    };
  },
  'node-http'() {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const options = { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers: { ...headers, 'content-length': body.length } };
    return {
      post: () =>
        new Promise((resolve, reject) => {
          const req = http.request(options, (res) => {
            res.resume();
            res.once('end', () => (res.statusCode === 204 ? resolve() : reject(new Error(`node-http: status ${res.statusCode}`))));
          });
          req.once('error', reject);
          req.end(body);
        }),
      close: async () => agent.destroy(),
    };
  },
  'raw-one': () => rawClient((socket, head, b) => socket.write(Buffer.concat([Buffer.from(head, 'latin1'), b]))),
  'raw-corked': () =>
    rawClient((socket, head, b) => {
      socket.cork();
      socket.write(head, 'latin1');
      socket.write(b);
      socket.uncork();
    }),
  'raw-two': () =>
    rawClient((socket, head, b) => {
      socket.write(head, 'latin1');
      socket.write(b);
    }),
};
const names = flags.only ? flags.only.split(',') : Object.keys(clients);
for (const n of names) if (!clients[n]) throw new Error(`--only: no client "${n}" (${Object.keys(clients).join(', ')})`);
const made = Object.fromEntries(names.map((n) => [n, clients[n]()]));

async function loop(name, count) {
  const client = made[name];
  running = name;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) await client.post();
  const wallUs = ((performance.now() - t0) * 1000) / count;
  const cpu = process.cpuUsage(cpu0);
  return { wallUs, cpuUs: (cpu.user + cpu.system) / count };
}

const startedAt = new Date();
const loadAtStart = os.loadavg();
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
console.log(`post-ab: ${POSTS} POSTs x ${ROUNDS} rounds per client, ${WARMUP} warm-up each; node ${process.version}; ${os.availableParallelism()} cores; load ${load()} at start`);
try {
  for (const name of names) await loop(name, WARMUP);
  const results = Object.fromEntries(names.map((n) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = names.map((_, i) => names[(i + round) % names.length]);
    const line = [];
    for (const name of order) {
      const r = await loop(name, POSTS);
      results[name].push(r);
      line.push(`${name} ${r.wallUs.toFixed(0)}/${r.cpuUs.toFixed(0)}`);
    }
    console.log(`  r${round} (µs wall/cpu per POST): ${line.join(', ')}; load ${load()}`);
  }
  const med = Object.fromEntries(names.map((n) => [n, { wallUs: median(results[n].map((r) => r.wallUs)), cpuUs: median(results[n].map((r) => r.cpuUs)) }]));
  // Ratios per round (the clients of one round ran back to back), then their median.
  const ratio = (a, b, key) => median(results[a].map((r, i) => r[key] / results[b][i][key]));
  console.log('\nmedians over the rounds, per POST:');
  for (const n of names) {
    if (!results['node-http'] || !results['raw-one']) {
      console.log(`  ${n.padEnd(10)} wall ${med[n].wallUs.toFixed(1)} µs, cpu ${med[n].cpuUs.toFixed(1)} µs`);
      continue;
    }
    console.log(
      `  ${n.padEnd(10)} wall ${med[n].wallUs.toFixed(1)} µs, cpu ${med[n].cpuUs.toFixed(1)} µs; POSTs/s vs node-http ${(1 / ratio(n, 'node-http', 'wallUs')).toFixed(2)}x, cpu vs raw-one ${ratio(n, 'raw-one', 'cpuUs').toFixed(2)}x`,
    );
  }
  if (flags['time-writes']) {
    console.log('\nnative socket writes (wall time inside the call), warm-up included:');
    for (const [key, t] of Object.entries(writeTimes)) if (!key.startsWith('setup')) console.log(`  ${key}: ${t.calls} calls, ${(t.us / t.calls).toFixed(1)} µs each`);
  }
  console.log(`load ${load()} at end`);
  if (!flags['no-write']) {
    const machine = { node: process.version, nproc: os.availableParallelism(), loadAverageAtStart: loadAtStart, loadAverageAtEnd: os.loadavg() };
    writeResult('receivers-post-ab', startedAt, { machine, config: { posts: POSTS, rounds: ROUNDS, warmup: WARMUP, clients: names }, medians: med, rounds: results, ...(flags['time-writes'] ? { writeTimes } : {}) }, flags.out);
  }
} finally {
  for (const n of names) await made[n].close();
  await receiver.stop();
}
