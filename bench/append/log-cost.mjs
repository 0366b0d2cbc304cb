#!/usr/bin/env node
/**
 * bench/append/log-cost.mjs: what the logs add to a fast 2xx append, in-process and without HTTP
 * (bench/README, "Logs"): the request hooks as the Node host composes them, with and without the
 * request-log hook, and the lifecycle scan of a commit's events, rounds interleaved. Prints ns of
 * CPU per call and, for the hooks, the paired median of the per-round differences.
 *
 *   node bench/append/log-cost.mjs [--rounds 9] [--calls 1000000]   (expects a built workspace)
 */
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '9' }, calls: { type: 'string', default: '1000000' } } });
const ROUNDS = Number(values.rounds);
const CALLS = Number(values.calls);
const dist = new URL('../../packages/server/dist/', import.meta.url);
const { composeRequestHooks, metricsHook } = await import(new URL('http/request-hooks.js', dist).href);
const { requestLogHook } = await import(new URL('http/request-log.js', dist).href);
const { lifecycleLog } = await import(new URL('engine/lifecycle-log.js', dist).href);
const { createServerMetrics } = await import(new URL('engine/metrics.js', dist).href);

const lines = [];
const logger = { error: () => undefined, warn: (m) => lines.push(m), info: (m) => lines.push(m) };
const metrics = createServerMetrics();
const without = composeRequestHooks([metricsHook(metrics)], logger);
const withLog = composeRequestHooks([metricsHook(metrics), requestLogHook(logger)], logger);
const answered = { method: 'POST', route: 'POST /v1/streams/{path}', status: 200, durationMs: 0.3, errorCode: undefined };
const logHook = requestLogHook(logger);
const lifecycle = lifecycleLog(logger);
const stream = { projectId: null, path: '/bench/a' };
const events = [{ path: '/bench/a', offset: 7, createdAt: '2026-12-01T00:00:00.000Z', type: 'bench/e', payload: { n: 1 } }];

function nsPerCall(fn) {
  const start = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) fn();
  const used = process.cpuUsage(start);
  return ((used.user + used.system) * 1000) / CALLS;
}

const runs = { without: [], withLog: [], logHook: [], lifecycle: [] };
const steps = {
  without: () => without.onAnswered(answered),
  withLog: () => withLog.onAnswered(answered),
  logHook: () => logHook.onAnswered(answered),
  lifecycle: () => lifecycle.committed(stream, events),
};
for (const fn of Object.values(steps)) nsPerCall(fn); // warm-up
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 ? ['withLog', 'without', 'logHook', 'lifecycle'] : ['without', 'withLog', 'logHook', 'lifecycle'];
  for (const name of order) runs[name].push(nsPerCall(steps[name]));
}
if (lines.length > 0) throw new Error(`a fast 2xx wrote ${lines.length} line(s)`);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const fmt = (xs) => xs.map((x) => x.toFixed(0)).join(' ');
console.log(`${ROUNDS} rounds of ${CALLS} calls, ns of CPU per call`);
console.log(`hooks without the log hook: median ${median(runs.without).toFixed(1)}  (${fmt(runs.without)})`);
console.log(`hooks with the log hook:    median ${median(runs.withLog).toFixed(1)}  (${fmt(runs.withLog)})`);
console.log(`paired difference (with - without): median ${median(runs.withLog.map((x, i) => x - runs.without[i])).toFixed(1)} ns`);
console.log(`the log hook alone, fast 2xx: median ${median(runs.logHook).toFixed(1)} ns  (${fmt(runs.logHook)})`);
console.log(`lifecycle scan of a one-event commit: median ${median(runs.lifecycle).toFixed(1)} ns  (${fmt(runs.lifecycle)})`);
