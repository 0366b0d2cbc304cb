#!/usr/bin/env node
/**
 * How long a callback scheduled for "0 ms" waits on Node, from inside an I/O callback (where a
 * delivery's poke is set, after a commit's fsync): `setTimeout(fn, 0)` against `setImmediate(fn)`,
 * 500 of each per round, 3 rounds alternating; median and p99 in ms (bench/README "copy drain (copy
 * group)": the poke of every live copy is one of these).
 *
 *   node bench/peers/timer-zero.mjs
 */
import { readFile } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { median } from './verdict.mjs';

const once = (kind) =>
  new Promise((resolve) =>
    readFile(import.meta.filename, () => {
      const t0 = performance.now();
      const done = () => resolve(performance.now() - t0);
      if (kind === 'setTimeout') setTimeout(done, 0);
      else setImmediate(done);
    }),
  );

for (let round = 1; round <= 3; round++) {
  for (const kind of round % 2 ? ['setTimeout', 'setImmediate'] : ['setImmediate', 'setTimeout']) {
    const waits = [];
    for (let i = 0; i < 500; i++) waits.push(await once(kind));
    waits.sort((a, b) => a - b);
    console.log(`${round} ${kind.padEnd(12)} median ${median(waits).toFixed(3)} ms, p99 ${waits[Math.floor(waits.length * 0.99)].toFixed(3)} ms`);
  }
}
