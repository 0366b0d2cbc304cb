#!/usr/bin/env node
/**
 * In-process A/B of looking up a fresh idempotency key (engine/event-keys.ts `offsetOf`, what a
 * lone keyed append does before it writes): *filter* asks the stream's filter of moved keys
 * (engine/moved-key-filter.ts) and probes event_keys only when it may hold the key; *probe* probes
 * event_keys for every key, as before the filters (the filter told to answer "may hold"). One build
 * (this checkout's dist, or DIST), one process, one SQLite database of 100 streams with HISTORY moved
 * keys each (relaxed, no fsync), the two alternating first per round over LOOKUPS fresh keys of the
 * appends load's shape. Prints CPU µs per lookup, medians and filter ÷ probe per round.
 *
 *   node bench/append/moved-key-lookup-ab.mjs [--rounds 9] [--lookups 200000] [--history 2000] [--dist DIST]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseOptions, positiveInteger } from '../lib/options.mjs';
import { root } from '../lib/processes.mjs';
import { median } from '../peers/verdict.mjs';

const USAGE = 'usage: node bench/append/moved-key-lookup-ab.mjs [--rounds N] [--lookups N] [--history N] [--dist DIST]';
const { values } = parseOptions(
  {
    options: {
      rounds: { type: 'string', default: '9' },
      lookups: { type: 'string', default: '200000' },
      history: { type: 'string', default: '2000' },
      dist: { type: 'string' },
    },
  },
  USAGE,
);
const ROUNDS = positiveInteger(values, 'rounds');
const LOOKUPS = positiveInteger(values, 'lookups');
const HISTORY = positiveInteger(values, 'history');
const STREAMS = 100;
const dist = resolve(values.dist ?? join(root, 'packages', 'server', 'dist'));
const load = (path) => import(pathToFileURL(join(dist, path)).href);
const { SqliteStorage } = await load('adapters/sqlite/sqlite-storage.js');
const { openSchema } = await load('engine/schema.js');
const { EventRows } = await load('engine/event-rows.js');

const folder = mkdtempSync(join(tmpdir(), 'rivulet-moved-key-lookup-ab-'));
const storage = new SqliteStorage(join(folder, 'db.sqlite'), { durability: 'relaxed', groupCommit: false });
try {
  openSchema(storage);
  const rows = new EventRows(storage, undefined);
  for (let sid = 1; sid <= STREAMS; sid++) {
    storage.transaction(() => {
      for (let i = 0; i < HISTORY; i++) {
        rows.insert(sid, { offset: i + 1, type: 'bench/e', ephemeral: false, idempotencyKey: `old-${sid}-${i}`, createdMs: 0, json: '{}' });
      }
    });
  }
  rows.keys.move();
  const filters = rows.keys.moved;
  const filtered = filters.mayHold.bind(filters);
  let round = 0;
  function measure(name) {
    filters.mayHold = name === 'probe' ? () => true : filtered;
    const offset = ++round * LOOKUPS;
    let found = 0;
    const c0 = process.cpuUsage();
    for (let i = 0; i < LOOKUPS; i++) if (rows.keys.offsetOf(1 + ((i * 37) % STREAMS), `c${i % 50}-${offset + i}`) !== undefined) found++;
    const used = process.cpuUsage(c0);
    if (found > 0) throw new Error(`${name}: ${found} fresh keys found`);
    return (used.user + used.system) / LOOKUPS;
  }
  measure('filter');
  measure('probe');
  const results = { filter: [], probe: [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const name of r % 2 ? ['probe', 'filter'] : ['filter', 'probe']) results[name].push(measure(name));
  }
  const ratios = results.filter.map((f, i) => f / results.probe[i]);
  console.log(`fresh key lookups: ${LOOKUPS} per round over ${STREAMS} streams of ${HISTORY} moved keys each, ${ROUNDS} rounds (${dist})`);
  for (const name of ['filter', 'probe']) console.log(`${name.padEnd(6)} median ${median(results[name]).toFixed(3)} µs CPU per lookup`);
  console.log(`filter ÷ probe: median ${median(ratios).toFixed(3)}, per round ${ratios.map((x) => x.toFixed(2)).join(' ')}`);
} finally {
  storage.close();
  rmSync(folder, { recursive: true, force: true });
}
