#!/usr/bin/env node
/**
 * In-process A/B of the append edge's own CPU (bench/README.md, bench/peers, "appends: where the
 * CPU goes"): for each build of packages/server given as a dist folder, in one process, rounds
 * interleaved (the order alternates), the parts of a plain append that the HTTP edge spends before
 * and after the engine:
 *
 * - `head`: net/http1-request.ts `readRequestHead` on the head `append/raw-http-client.mjs` sends;
 * - `hooks`: the request hooks the Node host composes (the request-duration metric, the request log)
 *   told of one answered append;
 * - `route`: http/append-route.ts `appendAnswerer` over a stub service that answers one stored
 *   event at once: path, authentication, content type, body decoding and JSON, validation, the
 *   answer's text and the hooks; not the engine.
 *
 * Prints the CPU ns per call (median over the rounds, and each round), and each build over the
 * first one listed, per round and their median.
 *
 *   node bench/peers/edge-ab.mjs NAME=DIST NAME=DIST [--rounds 9] [--calls 300000]
 */
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: 'string', default: '9' }, calls: { type: 'string', default: '300000' } },
});
const ROUNDS = Number(values.rounds);
const CALLS = Number(values.calls);
if (positionals.length === 0) throw new Error('usage: edge-ab.mjs NAME=DIST [NAME=DIST …] [--rounds N] [--calls N]');

const logger = { error() {}, warn() {}, info() {} };
const TEXT = 'the quick brown fox jumps over the lazy dog 0123456789';
/** The bodies bench/peers sends with keys (peers/load.mjs eventBody), prepared before the run. */
const bodies = Array.from({ length: 1000 }, (_, k) =>
  Buffer.from(`{"type":"bench/e","payload":{"seq":${k},"client":3,"user":"u-${String(k % 1000).padStart(5, '0')}","text":"${TEXT}"},"idempotencyKey":"c3-${k}"}`),
);
const head = Buffer.concat([
  Buffer.from(`POST /v1/streams/bench/b-042 HTTP/1.1\r\nhost: 127.0.0.1:40000\r\ncontent-type: application/json\r\ncontent-length: ${bodies[0].length}\r\n\r\n`),
  bodies[0],
]);

async function buildOf(name, dir) {
  const load = (path) => import(pathToFileURL(join(resolve(dir), path)).href);
  const { readRequestHead } = await load('net/http1-request.js');
  const { appendAnswerer } = await load('http/append-route.js');
  const { createServerMetrics } = await load('engine/metrics.js');
  const { composeRequestHooks, metricsHook } = await load('http/request-hooks.js');
  const { requestLogHook } = await load('http/request-log.js');
  const { rememberJson } = await load('engine/event-json.js');
  const metrics = createServerMetrics(undefined, { version: 'bench' });
  const hooks = composeRequestHooks([metricsHook(metrics), requestLogHook(logger, {})], logger);
  const event = { offset: 7, type: 'bench/e', createdAt: '2026-12-02T17:00:00.000Z', payload: { seq: 1 }, idempotencyKey: 'c3-1' };
  rememberJson(event, JSON.stringify(event));
  const service = { append: async () => [event] };
  const answer = appendAnswerer({ service, tokens: null, maxBodyBytes: 1 << 20, logger, hooks });
  const rules = { maxBodyBytes: 1 << 20, accepts: (target, host) => target.startsWith('/v1/streams/') && host.length > 0 };
  const fields = new Map([
    ['host', '127.0.0.1:40000'],
    ['content-type', 'application/json'],
    ['content-length', String(bodies[0].length)],
  ]);
  const headers = { get: (field) => fields.get(field) ?? null };
  const answered = { method: 'POST', route: 'POST /v1/streams/{path}', status: 200, durationMs: 1.5, errorCode: undefined };
  return {
    name,
    head() {
      for (let i = 0; i < CALLS; i++) if (readRequestHead(head, rules) === 'other') throw new Error('head refused');
    },
    hooks() {
      for (let i = 0; i < CALLS; i++) {
        answered.durationMs = 1 + (i & 7);
        hooks.onAnswered(answered);
      }
    },
    async route() {
      for (let i = 0; i < CALLS; i++) {
        const body = bodies[i % 1000];
        const reply = await answer('/v1/streams/bench/b-042', headers, () => body, performance.now());
        if (reply.status !== 200) throw new Error(`route answered ${reply.status} ${reply.text}`);
      }
    },
  };
}

const builds = [];
for (const arg of positionals) {
  const at = arg.indexOf('=');
  builds.push(await buildOf(arg.slice(0, at), arg.slice(at + 1)));
}
const PARTS = ['head', 'hooks', 'route'];
const results = new Map(builds.flatMap((b) => PARTS.map((part) => [`${b.name} ${part}`, []])));
for (let round = 0; round < ROUNDS + 1; round++) {
  for (const b of round % 2 ? [...builds].reverse() : builds) {
    for (const part of PARTS) {
      const before = process.cpuUsage();
      await b[part]();
      const used = process.cpuUsage(before);
      // The first round warms every build up and is not counted.
      if (round > 0) results.get(`${b.name} ${part}`).push(((used.user + used.system) * 1000) / CALLS);
    }
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(`${CALLS} calls per part and round, ${ROUNDS} rounds`);
for (const [key, rounds] of results) console.log(`${key.padEnd(20)} CPU ns/call: median ${median(rounds).toFixed(0)}  (${rounds.map((x) => x.toFixed(0)).join(' ')})`);
for (const b of builds.slice(1)) {
  for (const part of PARTS) {
    const ratios = results.get(`${b.name} ${part}`).map((x, i) => x / results.get(`${builds[0].name} ${part}`)[i]);
    console.log(`${b.name} over ${builds[0].name}, ${part}: median ${median(ratios).toFixed(2)}x  (${ratios.map((x) => x.toFixed(2)).join(' ')})`);
  }
}
console.log(`load average at the end: ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')}`);
