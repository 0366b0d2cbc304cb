#!/usr/bin/env node
/**
 * The filters of moved idempotency keys (engine/moved-key-filter.ts, decision 013) against the same
 * filters made of the `bloomfilter` package's BloomFilter (a dev dependency, for this comparison):
 * the same parts of doubling capacity and tightening false-positive rates, the package's filter per
 * part (it hashes the key again in every part). One process, the two alternating first per round:
 * a filter grown from empty to KEYS keys of the appends load's shape (`c<client>-<seq>`), then
 * LOOKUPS fresh keys. Prints CPU ns per add and per lookup and the false-positive rate.
 *
 *   node bench/append/key-filter-lib-ab.mjs [--rounds 7] [--keys 20000] [--lookups 200000] [--dist DIST]
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BloomFilter } from 'bloomfilter';
import { parseOptions, positiveInteger } from '../lib/options.mjs';
import { root } from '../lib/processes.mjs';
import { median } from '../peers/verdict.mjs';

const USAGE = 'usage: node bench/append/key-filter-lib-ab.mjs [--rounds N] [--keys N] [--lookups N] [--dist DIST]';
const { values } = parseOptions(
  {
    options: {
      rounds: { type: 'string', default: '7' },
      keys: { type: 'string', default: '20000' },
      lookups: { type: 'string', default: '200000' },
      dist: { type: 'string' },
    },
  },
  USAGE,
);
const ROUNDS = positiveInteger(values, 'rounds');
const KEYS = positiveInteger(values, 'keys');
const LOOKUPS = positiveInteger(values, 'lookups');
const dist = resolve(values.dist ?? join(root, 'packages', 'server', 'dist'));
const { MovedKeyFilters, FIRST_CAPACITY } = await import(pathToFileURL(join(dist, 'engine', 'moved-key-filter.js')).href);

/** The package's filters in the parts moved-key-filter.ts makes (same capacities and rates). */
class PackageKeyFilter {
  parts = [];
  capacity = 0;
  inLast = 0;
  error = 0.004 / 0.75;
  add(key) {
    if (this.inLast >= this.capacity) {
      this.capacity = this.parts.length === 0 ? FIRST_CAPACITY : this.capacity * 2;
      this.error *= 0.75;
      this.parts.push(BloomFilter.withTargetError(this.capacity, this.error));
      this.inLast = 0;
    }
    this.parts[this.parts.length - 1].add(key);
    this.inLast++;
  }
  mayHold(key) {
    for (const part of this.parts) if (part.test(key)) return true;
    return false;
  }
}

/** The engine's filters over a storage whose event_keys is empty (the filter is built empty, then told of each key). */
function ownFilter() {
  const filters = new MovedKeyFilters({ epoch: 0, execRows: () => [] });
  filters.mayHold(1, 'build');
  return { add: (key) => filters.added(1, key), mayHold: (key) => filters.mayHold(1, key) };
}

const makers = { own: ownFilter, package: () => new PackageKeyFilter() };
const held = Array.from({ length: KEYS }, (_, i) => `c${i % 50}-${i}`);
const fresh = Array.from({ length: LOOKUPS }, (_, i) => `c${i % 50}-${KEYS + i}`);

function measure(name) {
  const filter = makers[name]();
  let c0 = process.cpuUsage();
  for (const key of held) filter.add(key);
  let used = process.cpuUsage(c0);
  const addNs = ((used.user + used.system) * 1000) / KEYS;
  for (const key of held) if (!filter.mayHold(key)) throw new Error(`${name} lost a key`);
  let positives = 0;
  c0 = process.cpuUsage();
  for (const key of fresh) if (filter.mayHold(key)) positives++;
  used = process.cpuUsage(c0);
  return { addNs, lookupNs: ((used.user + used.system) * 1000) / LOOKUPS, falsePositives: positives / LOOKUPS };
}

measure('own');
measure('package');
const results = { own: [], package: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const name of r % 2 ? ['package', 'own'] : ['own', 'package']) results[name].push(measure(name));
}
console.log(`key filters grown to ${KEYS} keys, ${LOOKUPS} fresh lookups, ${ROUNDS} rounds (${dist})`);
for (const name of ['own', 'package']) {
  const of = (field) => median(results[name].map((x) => x[field]));
  console.log(`${name.padEnd(8)} add ${of('addNs').toFixed(0)} ns, lookup ${of('lookupNs').toFixed(0)} ns, false positives ${(of('falsePositives') * 100).toFixed(2)} %`);
}
const ratio = results.own.map((x, i) => x.lookupNs / results.package[i].lookupNs);
console.log(`lookup own ÷ package: median ${median(ratio).toFixed(3)}, per round ${ratio.map((x) => x.toFixed(2)).join(' ')}`);
