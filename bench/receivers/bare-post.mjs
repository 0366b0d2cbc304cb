#!/usr/bin/env node
/**
 * The bare POST loop of bench/receivers, in its own process so that it starts as cold as the
 * server it is compared with (and warms up only by what it is asked to send first):
 * `bare-post.mjs <url>` prints "listening on <url>" when ready, then for each stdin line `run N`
 * sends N POSTs one after another over node:http with a keep-alive agent (one socket), and prints
 * `done <seconds> <cpu ms>`.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { PAYLOAD } from '../lib/report.mjs';

const target = new URL(process.argv[2]);
const body = JSON.stringify({ projectId: null, path: '/bench/hook', streamId: 's', event: { type: 'bench/e', payload: PAYLOAD } });
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function post() {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.once('end', resolve);
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}

console.log(`listening on ${target.href}`);
for await (const line of createInterface({ input: process.stdin })) {
  const m = /^run (\d+)$/.exec(line.trim());
  if (!m) continue;
  const count = Number(m[1]);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) await post();
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  console.log(`done ${seconds} ${(cpu.user + cpu.system) / 1000}`);
}
agent.destroy();
