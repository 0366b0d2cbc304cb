#!/usr/bin/env node
/**
 * What reading a catch-up page's query costs (bench/README "catch-up reads (reads group)"): the
 * query object of `?afterOffset=N&limit=500` through ReadQuerySchema (parseOrThrow) and through
 * the route's fast path (http/stream-routes.ts plainReadQuery), in one process, alternating
 * batches, the first 400 calls of each (one pass over a 200,000-event stream: V8 has not
 * optimised them yet) apart from the rest. Needs a built workspace.
 *
 *   node bench/peers/read-query-cost.mjs [--calls 200000] [--rounds 7]
 */
import { parseArgs } from 'node:util';
import { ReadQuerySchema, parseOrThrow } from '@rivulet/contract';
import { plainReadQuery } from '../../packages/server/dist/http/stream-routes.js';
import { median } from './verdict.mjs';

const { values: flags } = parseArgs({ options: { calls: { type: 'string', default: '200000' }, rounds: { type: 'string', default: '7' } } });
const calls = Number(flags.calls);
const ways = {
  schema: (q) => parseOrThrow(ReadQuerySchema, q, 'query'),
  'fast path': (q) => plainReadQuery(q) ?? parseOrThrow(ReadQuerySchema, q, 'query'),
};
const queries = Array.from({ length: 400 }, (_, i) => ({ afterOffset: String(i * 500), limit: '500' }));
let sink = 0;
const time = (fn, n) => {
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) sink += fn(queries[i % queries.length]).afterOffset;
  const c = process.cpuUsage(t0);
  return (c.user + c.system) / n;
};
for (const [name, fn] of Object.entries(ways)) console.log(`${name.padEnd(10)} first 400 calls: ${time(fn, 400).toFixed(2)} µs each`);
const runs = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
for (let r = 0; r < Number(flags.rounds); r++) for (const [name, fn] of Object.entries(ways)) runs[name].push(time(fn, calls));
for (const [name, rs] of Object.entries(runs)) console.log(`${name.padEnd(10)} warm: ${median(rs).toFixed(3)} µs per call (median of ${rs.length} batches of ${calls})`);
if (sink === 0) console.log('');
