#!/usr/bin/env node
/**
 * In-process A/B of how a copy batch's source events keep their stored text (delivery/collect.ts):
 * *remember* parses each text, attaches it to the event (event-json.ts `rememberJson`, a
 * non-enumerable property) and cuts the payload out of the event's own text; *beside* parses it and
 * cuts the payload out of the text handed over beside the event (`storedFieldsJson(event, text)`),
 * which is what collect.ts does for copy subscriptions since 2026-12-06. One build (this checkout's
 * dist, or DIST), one process, the two paths alternating first per round over the same 1000 texts
 * of the peers bench's events as stored; CPU ns per event, medians and beside ÷ remember per round.
 *
 *   node bench/peers/source-text-ab.mjs [--rounds 15] [--events 200000] [--dist DIST]
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseOptions, positiveInteger } from '../lib/options.mjs';
import { root } from '../lib/processes.mjs';
import { eventBody } from './load.mjs';
import { median } from './verdict.mjs';

const USAGE = 'usage: node bench/peers/source-text-ab.mjs [--rounds N] [--events N] [--dist DIST]';
const { values } = parseOptions({ options: { rounds: { type: 'string', default: '15' }, events: { type: 'string', default: '200000' }, dist: { type: 'string' } } }, USAGE);
const ROUNDS = positiveInteger(values, 'rounds');
const EVENTS = positiveInteger(values, 'events');
const dist = resolve(values.dist ?? join(root, 'packages', 'server', 'dist'));
const { rememberJson, storedFieldsJson } = await import(pathToFileURL(join(dist, 'engine', 'event-json.js')).href);

// The stored texts: what the append path writes for the bench's events (path, offset, time, type, payload).
const texts = Array.from({ length: 1000 }, (_, i) => {
  const { type, payload } = JSON.parse(eventBody(0, i, false).toString());
  return JSON.stringify({ path: '/bench/src', offset: i + 1, createdAt: '2026-12-06T22:00:00.000Z', type, payload });
});

let sink = 0;
const paths = {
  remember: (text) => {
    const event = JSON.parse(text);
    rememberJson(event, text);
    return storedFieldsJson(event);
  },
  beside: (text) => storedFieldsJson(JSON.parse(text), text),
};
for (const text of texts) if (paths.remember(text) !== paths.beside(text) || paths.beside(text) === undefined) throw new Error('the two paths disagree');

function measure(name) {
  const path = paths[name];
  // Events held per batch of 1000, as a batch holds its source events until it is written.
  let held = [];
  const c0 = process.cpuUsage();
  for (let i = 0; i < EVENTS; i++) {
    const text = texts[i % 1000];
    held.push(path(text));
    if (held.length === 1000) {
      sink += held.length;
      held = [];
    }
  }
  const used = process.cpuUsage(c0);
  return ((used.user + used.system) * 1000) / EVENTS;
}

measure('remember');
measure('beside');
const results = { remember: [], beside: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const name of r % 2 ? ['beside', 'remember'] : ['remember', 'beside']) results[name].push(measure(name));
}
const ratios = results.beside.map((b, i) => b / results.remember[i]);
console.log(`source texts, ${EVENTS} events per round, ${ROUNDS} rounds (${dist})`);
for (const name of ['remember', 'beside']) console.log(`${name.padEnd(9)} median ${median(results[name]).toFixed(0)} ns CPU per event`);
console.log(`beside ÷ remember: median ${median(ratios).toFixed(3)}, per round ${ratios.map((x) => x.toFixed(2)).join(' ')}`);
if (sink === 0) console.log('');
