#!/usr/bin/env node
/**
 * bench/copy/expression-ab.mjs: CPU per JSONata evaluation of the copy benchmark's `shaped`
 * scenario (its condition and its transform, on the same events), this build against an older
 * one, interleaved in one process so both see the same machine. See bench/README.md.
 *
 *   node bench/copy/expression-ab.mjs --old ../other-checkout   # a checkout built before the change
 *
 * Both builds' packages/server/dist/core/filter.js are loaded; an older one whose functions take
 * no budget argument simply ignores it.
 */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const { values } = parseArgs({ options: { old: { type: 'string' }, rounds: { type: 'string', default: '6' }, events: { type: 'string', default: '5000' } } });
if (!values.old) {
  console.error('usage: node bench/copy/expression-ab.mjs --old CHECKOUT [--rounds N] [--events N]');
  process.exit(2);
}
const load = (root, file) => import(pathToFileURL(resolve(root, 'packages/server/dist/core', file)).href);
const here = resolve(import.meta.dirname, '../..');
const [oldF, newF, budgets] = await Promise.all([load(values.old, 'filter.js'), load(here, 'filter.js'), load(here, 'expression-budget.js')]);
const budget = budgets.expressionBudget(budgets.defaultExpressionLimits, () => Date.now());
// The `shaped` scenario of bench/copy/run.mjs.
const filter = { eventTypes: ['bench/e'], jsonataCondition: 'payload.seq >= 0 and $length(payload.user) > 0' };
const transform = '{"type": "bench/shaped", "payload": {"seq": payload.seq, "user": $uppercase(payload.user), "n": $length(payload.text)}}';
const event = (i) => ({ path: '/bench/src', offset: i, type: 'bench/e', payload: { seq: i, user: `user-${i % 50}`, text: 'x'.repeat(200) }, createdAt: new Date().toISOString() });

async function cpuPerEvent(f, n) {
  const start = process.cpuUsage();
  for (let i = 1; i <= n; i++) {
    const e = event(i);
    await f.conditionMatches(filter, e, budget);
    await f.shapeEvent(transform, e, budget);
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}

const n = Number(values.events);
await cpuPerEvent(oldF, 3000);
await cpuPerEvent(newF, 3000);
const old = [];
const now = [];
for (let r = 0; r < Number(values.rounds); r++) {
  old.push(await cpuPerEvent(oldF, n));
  now.push(await cpuPerEvent(newF, n));
}
const median = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
const fmt = (a) => a.map((x) => x.toFixed(1)).join(' ');
console.log(`µs of CPU per event (condition + transform): older ${fmt(old)} | this build ${fmt(now)}`);
console.log(`medians: older ${median(old).toFixed(1)}, this build ${median(now).toFixed(1)}; this build costs ${(median(now) / median(old)).toFixed(2)}x`);
