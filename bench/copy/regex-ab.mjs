#!/usr/bin/env node
/**
 * bench/copy/regex-ab.mjs: CPU per JSONata evaluation of typical regex conditions and transforms,
 * V8's RegExp against the linear-time engine (core/regex-engine.ts, protocol §16.8), interleaved
 * in one process so both see the same machine; then the engines alone (exec over every match of
 * one string, as JSONata walks them).
 *
 *   npm run build && node bench/copy/regex-ab.mjs [--rounds N] [--events N]
 *
 * The build's packages/server/dist/core/jsonata.js is loaded twice (two module instances, each
 * with its own compile cache); the second is switched to the linear engine.
 */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadavg } from 'node:os';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '6' }, events: { type: 'string', default: '5000' } } });
const here = resolve(import.meta.dirname, '../..');
const url = (file, tag) => `${pathToFileURL(resolve(here, 'packages/server/dist/core', file)).href}${tag ? `?${tag}` : ''}`;
const [native, linear, budgets, engine] = await Promise.all([
  import(url('jsonata.js', 'native')),
  import(url('jsonata.js', 'linear')),
  import(url('expression-budget.js')),
  import(url('regex-engine.js')),
]);
linear.useRegexEngine('linear');
const budget = () => budgets.expressionBudget(budgets.defaultExpressionLimits, () => Date.now());

const EXPRESSIONS = {
  'email domain, i': '$contains(payload.email, /@example\\.com$/i)',
  'two words': '$contains(payload.text, /error|fatal/)',
  'path groups': '$match(payload.path, /^\\/api\\/(\\w+)\\/(\\d+)$/).groups[1]',
  'digits only': '$replace(payload.phone, /[^0-9]/, "")',
  'tags split': '$split(payload.tags, /\\s*,\\s*/)',
  'line start, m': '$count($match(payload.log, /^warn/m))',
};
const event = (i) => ({
  type: 'bench/e',
  payload: {
    email: i % 3 === 0 ? `user${i}@EXAMPLE.com` : `user${i}@mail.example.org`,
    text: `request ${i} ${i % 7 === 0 ? 'fatal' : 'ok'} after ${'x'.repeat(i % 40)} ms`,
    path: `/api/orders/${i}`,
    phone: `+1 (555) 01-${String(i % 10000).padStart(4, '0')}`,
    tags: 'red, green ,blue,  amber',
    log: `info a\r\nwarn b\ninfo c\nwarn ${i}`,
  },
});
const events = Array.from({ length: 200 }, (_, i) => event(i));

// Both engines must agree before their costs are worth comparing.
for (const [name, source] of Object.entries(EXPRESSIONS)) {
  for (const e of events.slice(0, 50)) {
    const a = JSON.stringify(await native.evaluateJsonata(source, e, budget()));
    const b = JSON.stringify(await linear.evaluateJsonata(source, e, budget()));
    if (a !== b) throw new Error(`${name}: the engines disagree on ${JSON.stringify(e.payload)}: ${a} vs ${b}`);
  }
}

async function cpuPerEvaluation(m, source, n) {
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) await m.evaluateJsonata(source, events[i % events.length], budget());
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}

const n = Number(values.events);
const median = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
const fmt = (a) => a.map((x) => x.toFixed(2)).join(' ');
console.log(`load before: ${loadavg().map((x) => x.toFixed(2)).join(' ')} (2 cores, shared with other work)`);
for (const [name, source] of Object.entries(EXPRESSIONS)) {
  await cpuPerEvaluation(native, source, 2000);
  await cpuPerEvaluation(linear, source, 2000);
  const a = [];
  const b = [];
  for (let r = 0; r < Number(values.rounds); r++) {
    a.push(await cpuPerEvaluation(native, source, n));
    b.push(await cpuPerEvaluation(linear, source, n));
  }
  console.log(`${name.padEnd(16)} µs CPU per evaluation: RegExp ${fmt(a)} | linear ${fmt(b)} | medians ${median(a).toFixed(2)} vs ${median(b).toFixed(2)}: linear costs ${(median(b) / median(a)).toFixed(2)}x`);
}
// The engines alone: every match of one string, from lastIndex, as JSONata's regex closure walks them.
const ALONE = [
  ['email domain, i', /@example\.com$/gi, events.map((e) => e.payload.email)],
  ['digits only', /[^0-9]/g, events.map((e) => e.payload.phone)],
  ['line start, m', /^warn/gm, events.map((e) => e.payload.log)],
  ['line start, m \\n', /^warn/gm, events.map((e) => e.payload.log.replaceAll('\r', ''))],
  ['words, 4 KiB', /\b(\w+)@(\w+)\b/g, [`${'lorem ipsum dolor '.repeat(200)} ann@example ${'sit amet '.repeat(60)}`]],
];
function cpuPerString(make, inputs, n) {
  const re = make();
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const s = inputs[i % inputs.length];
    re.lastIndex = 0;
    while (re.exec(s) !== null && re.lastIndex !== 0);
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}
for (const [name, re, inputs] of ALONE) {
  const nativeRe = () => new RegExp(re.source, re.flags);
  const linearRe = () => new engine.LinearRegExp(re);
  cpuPerString(nativeRe, inputs, 2000);
  cpuPerString(linearRe, inputs, 2000);
  const a = [];
  const b = [];
  for (let r = 0; r < Number(values.rounds); r++) {
    a.push(cpuPerString(nativeRe, inputs, n));
    b.push(cpuPerString(linearRe, inputs, n));
  }
  console.log(`engine alone, ${name.padEnd(16)} µs CPU per string: RegExp ${fmt(a)} | linear ${fmt(b)} | medians ${median(a).toFixed(2)} vs ${median(b).toFixed(2)}: linear costs ${(median(b) / median(a)).toFixed(2)}x`);
}
console.log(`load after: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
