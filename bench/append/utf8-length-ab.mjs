/**
 * In-process A/B of `utf8Length` (core/sizes.ts), which every append runs on each fresh event's
 * JSON and every delivery on what it sends: builds of packages/server given as dist folders, on
 * texts shaped as the server measures them, rounds interleaved (the order alternates), nanoseconds
 * of wall time per call (one thread, nothing else in it), medians and the ratio of each build to
 * the first per text.
 *
 *   node bench/append/utf8-length-ab.mjs NAME=DIST [NAME=DIST …] [--rounds 7] [--calls 2000000]
 *
 * The base build of a commit: `node bench/peers/build-commit.mjs COMMIT` (its dist folder is printed).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadavg } from 'node:os';
import { parseOptions, positiveInteger } from '../lib/options.mjs';
import { median, roundOrder } from '../peers/verdict.mjs';

const USAGE = 'usage: node bench/append/utf8-length-ab.mjs NAME=DIST [NAME=DIST …] [--rounds N] [--calls N]';
const { values, positionals } = parseOptions(
  { allowPositionals: true, options: { rounds: { type: 'string', default: '7' }, calls: { type: 'string', default: '2000000' } } },
  USAGE,
);
const ROUNDS = positiveInteger(values, 'rounds');
const CALLS = positiveInteger(values, 'calls');
if (positionals.length === 0) {
  console.error(USAGE);
  process.exit(2);
}

const builds = [];
for (const arg of positionals) {
  const at = arg.indexOf('=');
  if (at < 1) {
    console.error(`${arg}: expected NAME=DIST\n${USAGE}`);
    process.exit(2);
  }
  const mod = await import(pathToFileURL(resolve(arg.slice(at + 1), 'core', 'sizes.js')).href);
  builds.push({ name: arg.slice(0, at), utf8Length: mod.utf8Length });
}

// The texts: an event as bench/peers appends it, a copy of it (provenance and key spliced in), an
// event with a non-ASCII payload, and a large ASCII one. Fifty of each, made by JSON.stringify as
// the server makes them (flat strings).
const event = (i, text) =>
  JSON.stringify({ path: '/bench/b-007', offset: 1000 + i, createdAt: '2026-12-04T20:00:00.000Z', type: 'bench/e', payload: { seq: i, client: 3, user: `u-${String(i).padStart(5, '0')}`, text } });
const copy = (i) =>
  JSON.stringify({
    ...JSON.parse(event(i, 'x'.repeat(64))),
    idempotencyKey: `__rivulet:copy:["drain",3,null,"/bench/src","3b1f0c2e-1d2a-4c39-9a43-1f4a5b6c7d8e",${i}]`,
    source: { copiedFrom: [{ projectId: null, path: '/bench/src', streamId: '3b1f0c2e-1d2a-4c39-9a43-1f4a5b6c7d8e', streamCreatedAt: '2026-12-04T19:00:00.000Z', offset: i, type: 'bench/e', createdAt: '2026-12-04T20:00:00.000Z', subscriptionKey: 'drain', cursorChangedAtSourceOffset: 3 }] },
  });
// A copy's text as the receiving stream builds it (core/copy-builder.ts splices the shared parts
// and the source's stored fields): a string made by concatenation, which V8 flattens on its first
// full read, whoever reads it. Fresh ones are made for every pass (outside the timing), so that
// cost is in the figure, as it is in the server.
const [spliceHead, spliceTail] = (() => {
  const whole = copy(0);
  const at = whole.indexOf('"idempotencyKey"');
  return [whole.slice(0, at), whole.slice(at)];
})();
const fixed = (texts) => ({ texts: () => texts, characters: texts[0].length });
/** Each case: the texts of one pass (the same strings, or fresh ones), and their length. */
const CASES = {
  'event, 64 ASCII characters of text': fixed(Array.from({ length: 50 }, (_, i) => event(i, 'x'.repeat(64)))),
  'copy of it (provenance, key)': fixed(Array.from({ length: 50 }, (_, i) => copy(i))),
  'event, 200 characters of mixed text': fixed(Array.from({ length: 50 }, (_, i) => event(i, 'héllo wörld € 😀 '.repeat(12)))),
  'event, 100 KB of ASCII text': fixed(Array.from({ length: 50 }, (_, i) => event(i, 'y'.repeat(100_000)))),
  'copy, spliced (a fresh concatenation per call)': {
    texts: () => Array.from({ length: 20_000 }, (_, i) => `${spliceHead}${i % 10}${spliceTail}`),
    characters: spliceHead.length + 1 + spliceTail.length,
    fresh: true,
  },
};

/** ns per call of the build's utf8Length over `calls` calls on `texts` in turn, after checking it on one of them. */
function measure(build, label, texts, calls) {
  if (build.utf8Length(texts[1]) !== Buffer.byteLength(texts[1], 'utf8')) throw new Error(`${build.name}: utf8Length is wrong on ${label}`);
  let sink = 0;
  const t0 = process.hrtime.bigint();
  for (let k = 0; k < calls; k++) sink += build.utf8Length(texts[k % texts.length]);
  const ns = Number(process.hrtime.bigint() - t0) / calls;
  if (sink === -1) console.log('');
  return ns;
}

/** One round's figure for a build: fresh texts are timed over ten passes, one call per text each. */
function passFigure(build, label, c) {
  if (!c.fresh) return measure(build, label, c.texts(), Math.max(1000, Math.floor(CALLS / Math.max(1, c.characters / 200))));
  let ns = 0;
  for (let pass = 0; pass < 10; pass++) {
    const texts = c.texts();
    ns += measure(build, label, texts, texts.length) / 10;
  }
  return ns;
}

console.log(`utf8Length A/B, ${ROUNDS} rounds, load at the start ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
for (const [label, c] of Object.entries(CASES)) {
  for (const b of builds) passFigure(b, label, c); // warm-up
  const perBuild = builds.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    for (const i of roundOrder(builds.keys(), r)) perBuild[i].push(passFigure(builds[i], label, c));
  }
  const line = builds.map((b, i) => {
    const ns = median(perBuild[i]);
    const ratio = i === 0 ? '' : ` (${median(perBuild[i].map((x, r) => x / perBuild[0][r])).toFixed(2)}x)`;
    return `${b.name} ${ns >= 100 ? ns.toFixed(0) : ns.toFixed(1)} ns${ratio}`;
  });
  console.log(`  ${label} (${c.characters} characters): ${line.join(', ')}`);
}
