#!/usr/bin/env node
/**
 * Summarises a V8 .cpuprofile (from `run.mjs --profile`): self time per function and inclusive
 * time per function, top N, plus self time grouped by package (node_modules/<pkg>, packages/<pkg>,
 * node internals, GC, idle).
 *
 *   node bench/append/profile-summary.mjs FILE.cpuprofile [--top 30] [--requests N]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  options: { top: { type: 'string', default: '30' }, requests: { type: 'string' } },
  allowPositionals: true,
});
const top = Number(values.top);
/** With --requests N (the run's totalRequests from the result JSON), times are also shown per request. */
const requests = values.requests ? Number(values.requests) : 0;

/**
 * Where the time of one append request goes: every sample is charged to the deepest frame on its
 * stack that matches one of these (so nested buckets do not count twice); unmatched samples fall
 * to "other".
 *
 * The profiler samples wall time: a native call such as `writev` also collects the time the thread
 * waited to run again after it (a sequential load generator woken by the answer often runs first on
 * the same core), so compare its share with the run's CPU µs/req before reading it as work.
 */
const BUCKETS = [
  ['(idle)', /^\(idle\)/],
  ['(garbage collector)', /^\(garbage collector\)/],
  ['(program)', /^\(program\)/],
  ['module loading (startup)', /node:internal\/modules\/|compileSourceTextModule|loadAndTranslate/],
  ['node:http request parsing', /parserOnHeadersComplete|parserOnIncoming|_http_incoming|onParserExecute/],
  ['hono / app middleware', /hono-base\.js|dist\/http\/app\.js|@hono\/node-server\/dist\/index\.mjs:1052/],
  ['native append path (hosts/node/append)', /hosts\/node\/append\.js/],
  ['Request object (@hono/node-server + undici)', /newRequestFromIncoming|Request\$1|RequestHeaders|requestPrototype|getRequestCache|_Request node/],
  ['body via web ReadableStream', /readBodyText|get body|Readable\.toWeb|webstreams/],
  ['JSON.parse + depth check', /parseJsonText|jsonDepthExceeds/],
  ['path parsing / route template', /parseStreamAddress|routeTemplate|canonicalizePath|stream-url\.js|^URL node/],
  ['zod validation', /parseOrThrow|nm:zod/],
  ['engine (registry, actor, decide, reduce)', /dist\/engine\/|dist\/core\//],
  ['SQLite statements (incl. savepoints)', /sqlite-storage\.js:\d+$|better-sqlite3|probe-groups/],
  ['group COMMIT (setImmediate)', /commitGroup/],
  ['response: JSON.stringify + Response + write', /stream-routes\.js:10$|responseViaResponseObject|responseViaCache|_http_outgoing|writev/],
  ['metrics', /engine\/metrics\.js|httpDuration/],
];
for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map();
  const deltas = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    selfUs.set(id, (selfUs.get(id) ?? 0) + (deltas[i] ?? 0));
  }
  const total = [...selfUs.values()].reduce((s, v) => s + v, 0);
  const label = (n) => {
    const f = n.callFrame;
    const url = f.url.replace(/^file:\/\//, '').replace(/.*\/node_modules\//, 'nm:').replace(/.*\/packages\//, 'pkg:');
    return `${f.functionName || '(anonymous)'} ${url ? `${url}:${f.lineNumber + 1}` : ''}`.trim();
  };
  const group = (n) => {
    const f = n.callFrame;
    if (!f.url) return f.functionName.startsWith('(') ? f.functionName : '(native)';
    let m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(f.url);
    if (m) return m[1];
    m = /packages\/([^/]+)\/(?:dist|src)\/([^/]+)/.exec(f.url);
    if (m) return `@rivulet/${m[1]} ${m[2]}`;
    if (f.url.startsWith('node:')) return 'node internals';
    return f.url;
  };
  const byBucket = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    let bucket = 'other';
    for (let cur = profile.samples[i]; cur !== undefined; cur = parent.get(cur)) {
      const l = label(nodes.get(cur));
      const hit = BUCKETS.find(([, re]) => re.test(l));
      if (hit) {
        bucket = hit[0];
        break;
      }
    }
    byBucket.set(bucket, (byBucket.get(bucket) ?? 0) + (deltas[i] ?? 0));
  }
  const bySelf = new Map();
  const byGroup = new Map();
  const inclusive = new Map();
  for (const [id, us] of selfUs) {
    const n = nodes.get(id);
    const l = label(n);
    bySelf.set(l, (bySelf.get(l) ?? 0) + us);
    const g = group(n);
    byGroup.set(g, (byGroup.get(g) ?? 0) + us);
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const cl = label(nodes.get(cur));
      if (seen.has(cl)) continue;
      seen.add(cl);
      inclusive.set(cl, (inclusive.get(cl) ?? 0) + us);
    }
  }
  const show = (title, map, n) => {
    console.log(`\n${title}`);
    for (const [k, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, n)) {
      const per = requests ? `  ${(us / requests).toFixed(1).padStart(7)} µs/req` : '';
      console.log(`  ${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms${per}  ${k}`);
    }
  };
  console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled`);
  show('time by bucket (deepest matching frame)', byBucket, top);
  show('self time by package', byGroup, top);
  show('self time by function', bySelf, top);
  show('inclusive time by function', inclusive, top);
}
