#!/usr/bin/env node
/**
 * bench/copy: copy-to-stream throughput and end-to-end latency, against the source's own append
 * rate measured in the same run. See bench/README.md.
 *
 *   npm run bench:copy                 # full run (about 2 minutes)
 *   npm run bench:copy -- --quick      # smoke run (about 30 seconds)
 *   node bench/copy/run.mjs --help     # every option (expects a built workspace)
 *
 * Every measurement starts a fresh server child, configures its subscriptions over HTTP, drives
 * the source with the append benchmark's load generator, waits until every receiver caught up,
 * and reads the copies back. Latency is the receiver's commit time minus the source event's
 * commit time (both `createdAt`, one clock); throughput counts copies committed inside the
 * measured window.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { runLoad } from '../append/loadgen.mjs';
import { CLI, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { call, fmtMs, fmtN, fmtX, machineInfo, median, writeResult } from '../lib/report.mjs';

const usage = `Usage: node bench/copy/run.mjs [options]   (npm run bench:copy -- [options])

  --quick              smoke run: 1 round, 0.5 s warm-up, 2 s per measurement
  --rounds N           repetitions, baseline and subscription runs alternated (default 3)
  --warmup S           warm-up seconds per measurement (default 1)
  --duration S         measured seconds per measurement (default 4)
  --clients N          concurrent clients appending to the source (default 20)
  --durability MODE    full | relaxed (default full)
  --only LIST          comma-separated scenario names to run (default: all; source always runs)
  --cli PATH           the rivulet CLI to serve with (default: this workspace's build), e.g. an
                       older build for a before/after comparison
  --ab-cli PATH        also measure every scenario with this other CLI in the same rounds
                       (interleaved), and print each scenario's ratio this ÷ other, e.g. a build
                       of an earlier commit from \`node bench/peers/build-commit.mjs COMMIT\`
  --out FILE           JSON result file (default bench/results/copy-<timestamp>.json)
  --no-write           do not write the JSON result file
  -h, --help           this text`;

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    warmup: { type: 'string' },
    duration: { type: 'string' },
    clients: { type: 'string', default: '20' },
    durability: { type: 'string', default: 'full' },
    only: { type: 'string' },
    cli: { type: 'string' },
    'ab-cli': { type: 'string' },
    out: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (flags.help) {
  console.log(usage);
  process.exit(0);
}
const cfg = {
  rounds: Number(flags.rounds ?? (flags.quick ? 1 : 3)),
  warmupMs: Number(flags.warmup ?? (flags.quick ? 0.5 : 1)) * 1000,
  durationMs: Number(flags.duration ?? (flags.quick ? 2 : 4)) * 1000,
  clients: Number(flags.clients),
  durability: flags.durability,
};
if (cfg.durability !== 'full' && cfg.durability !== 'relaxed') throw new Error(`unknown durability ${cfg.durability}`);

const freshDir = tempFolders('rivulet-bench-copy-');
const SOURCE = '/bench/src';
const CATCH_UP_MS = 120_000;

const streamUrl = (path) => `/v1/streams${path}`;

function subscribe(url, receiving, source, key, filter, jsonataTransform) {
  return call(url, 'POST', `${streamUrl(receiving)}:subscribeToEventsFrom`, {
    sourceStreamPath: source,
    subscriptionKey: key,
    delivery: { start: 'now' },
    ...(filter ? { filter } : {}),
    ...(jsonataTransform ? { jsonataTransform } : {}),
  });
}

/** Waits until no subscription of `sources` lags behind its source head. */
async function caughtUp(url, sources) {
  const deadline = Date.now() + CATCH_UP_MS;
  for (;;) {
    let lagging = 0;
    for (const source of sources) {
      const { runtime } = await call(url, 'GET', `${streamUrl(source)}:state`);
      for (const s of Object.values(runtime?.subscriptions ?? {})) lagging += s.lag;
    }
    if (lagging === 0) return;
    if (Date.now() > deadline) throw new Error(`receivers still ${lagging} events behind after ${CATCH_UP_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function readAll(url, path) {
  const events = [];
  let after = 0;
  for (;;) {
    const page = await call(url, 'GET', `${streamUrl(path)}?afterOffset=${after}&limit=500`);
    events.push(...page.events);
    if (page.events.length < 500) return events;
    after = page.events[page.events.length - 1].offset;
  }
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/**
 * One measurement: a fresh server, `setup(url)` answering the receiving streams to inspect (each
 * with the number of hops its copies travelled), the load on the source, catch-up, read-back.
 */
async function measure(name, round, setup, variant = VARIANTS[0]) {
  const dir = freshDir(`${name}-${variant.label}-r${round}`);
  const server = await startServer([variant.cli, 'serve', '--port', '0', '--data', dir, '--durability', cfg.durability], name);
  try {
    await call(server.url, 'POST', streamUrl(SOURCE), { type: 'bench/setup' });
    const { receivers, sources } = await setup(server.url);
    const started = Date.now();
    const load = await runLoad({
      url: server.url,
      path: () => streamUrl(SOURCE),
      clients: cfg.clients,
      batch: 1,
      warmupMs: cfg.warmupMs,
      durationMs: cfg.durationMs,
    });
    const from = started + cfg.warmupMs;
    const to = from + cfg.durationMs;
    const caughtUpAt = performance.now();
    await caughtUp(server.url, sources);
    const catchUpMs = performance.now() - caughtUpAt;
    const latencies = [];
    let copiesInWindow = 0;
    let copies = 0;
    for (const receiver of receivers) {
      for (const event of await readAll(server.url, receiver.path)) {
        const hops = event.source?.copiedFrom;
        if (!hops || hops.length !== receiver.hops) continue;
        copies++;
        const sourceAt = Date.parse(hops[0].createdAt);
        const copiedAt = Date.parse(event.createdAt);
        if (copiedAt >= from && copiedAt < to) copiesInWindow++;
        if (sourceAt >= from && sourceAt < to) latencies.push(copiedAt - sourceAt);
      }
    }
    latencies.sort((a, b) => a - b);
    return {
      name,
      variant: variant.label,
      round,
      sourceEventsPerSec: load.eventsPerSec,
      appendP50ms: load.p50ms,
      appendP99ms: load.p99ms,
      errors: load.errors,
      receivers: receivers.length,
      copies,
      copyEventsPerSec: receivers.length ? copiesInWindow / (cfg.durationMs / 1000) : NaN,
      latencyP50ms: percentile(latencies, 50),
      latencyP99ms: percentile(latencies, 99),
      latencyMaxms: latencies.at(-1) ?? NaN,
      catchUpMs,
    };
  } finally {
    await stopServer(server);
  }
}

// The build under test, and with --ab-cli the other one measured beside it.
const VARIANTS = [{ label: 'this', cli: flags.cli ?? CLI }, ...(flags['ab-cli'] ? [{ label: 'other', cli: flags['ab-cli'] }] : [])];

const SCENARIOS = {
  source: { title: 'source alone (baseline)', setup: async () => ({ receivers: [], sources: [] }) },
  nonMatching: {
    title: 'source with 1 non-matching subscription',
    setup: async (url) => {
      await subscribe(url, '/bench/never', SOURCE, 'never', { eventTypes: ['bench/never'] });
      return { receivers: [], sources: [SOURCE] };
    },
  },
  one: {
    title: '(a) 1 source -> 1 receiver',
    setup: async (url) => {
      await subscribe(url, '/bench/r0', SOURCE, 'r0');
      return { receivers: [{ path: '/bench/r0', hops: 1 }], sources: [SOURCE] };
    },
  },
  ten: {
    title: '(b) 1 source -> 10 receivers',
    setup: async (url) => {
      const receivers = [];
      for (let i = 0; i < 10; i++) {
        await subscribe(url, `/bench/r${i}`, SOURCE, `r${i}`);
        receivers.push({ path: `/bench/r${i}`, hops: 1 });
      }
      return { receivers, sources: [SOURCE] };
    },
  },
  shaped: {
    title: '(d) 1 receiver, JSONata condition + transform',
    setup: async (url) => {
      // Every load event matches, so the copies compare with (a); both expressions are evaluated on each.
      const condition = { eventTypes: ['bench/e'], jsonataCondition: 'payload.seq >= 0 and $length(payload.user) > 0' };
      const transform = '{"type": "bench/shaped", "payload": {"seq": payload.seq, "user": $uppercase(payload.user), "n": $length(payload.text)}}';
      await subscribe(url, '/bench/d0', SOURCE, 'd0', condition, transform);
      return { receivers: [{ path: '/bench/d0', hops: 1 }], sources: [SOURCE] };
    },
  },
  chain: {
    title: '(c) chain of 5 copies (src -> c1 -> ... -> c5)',
    setup: async (url) => {
      const chain = [SOURCE, '/bench/c1', '/bench/c2', '/bench/c3', '/bench/c4', '/bench/c5'];
      for (let i = 1; i < chain.length; i++) await subscribe(url, chain[i], chain[i - 1], `c${i}`);
      return { receivers: [{ path: '/bench/c5', hops: 5 }], sources: chain.slice(0, -1) };
    },
  },
};


async function main() {
  const startedAt = new Date();
  const wall0 = performance.now();
  const machine = machineInfo(startedAt);
  console.log(`bench/copy on ${machine.nproc} x ${machine.cpuModel}, node ${machine.node}, durability ${cfg.durability}, ${cfg.clients} source clients`);
  const runs = [];
  for (let round = 0; round < cfg.rounds; round++) {
    // Alternate the order so drift on a noisy machine hits the baseline and the others alike.
    const only = flags.only?.split(',');
    const names = Object.keys(SCENARIOS).filter((name) => !only || name === 'source' || only.includes(name));
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      for (const variant of round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
        const r = await measure(name, round, SCENARIOS[name].setup, variant);
        runs.push(r);
        console.log(
          `  ${name.padEnd(11)} ${VARIANTS.length > 1 ? `${variant.label.padEnd(5)} ` : ''}r${round}: source ${fmtN(r.sourceEventsPerSec).padStart(7)} ev/s (append p99 ${fmtMs(r.appendP99ms)} ms)` +
            (r.receivers ? `  copies ${fmtN(r.copyEventsPerSec).padStart(7)} ev/s  latency p50 ${fmtMs(r.latencyP50ms)} p99 ${fmtMs(r.latencyP99ms)} ms  catch-up ${fmtMs(r.catchUpMs)} ms` : '') +
            (r.errors ? `  ERRORS ${r.errors}` : ''),
        );
      }
    }
  }
  const summary = {};
  for (const name of Object.keys(SCENARIOS)) {
    const rs = runs.filter((r) => r.name === name && r.variant === 'this');
    if (rs.length === 0) continue;
    summary[name] = {
      title: SCENARIOS[name].title,
      sourceEventsPerSec: median(rs.map((r) => r.sourceEventsPerSec)),
      copyEventsPerSec: median(rs.map((r) => r.copyEventsPerSec)),
      latencyP50ms: median(rs.map((r) => r.latencyP50ms)),
      latencyP99ms: median(rs.map((r) => r.latencyP99ms)),
    };
  }
  const base = summary.source.sourceEventsPerSec;
  const rows = Object.entries(summary).map(([name, s]) => [
    s.title,
    fmtN(s.sourceEventsPerSec),
    fmtX(s.sourceEventsPerSec / base),
    fmtN(s.copyEventsPerSec),
    fmtX(s.copyEventsPerSec / base),
    fmtMs(s.latencyP50ms),
    fmtMs(s.latencyP99ms),
    name,
  ]);
  const header = ['scenario', 'source ev/s', 'vs alone', 'copies ev/s', 'copies vs source alone', 'p50 ms', 'p99 ms'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  console.log(`\n${line(header)}\n|${widths.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`);
  for (const r of rows) console.log(line(r.slice(0, -1)));
  console.log('\nmedians over rounds; latency: receiver commit minus source commit (createdAt, one clock)');

  const one = summary.one ?? { copyEventsPerSec: NaN, latencyP99ms: NaN };
  const costOfNonMatching = 1 - (summary.nonMatching?.sourceEventsPerSec ?? NaN) / base;
  const targets = [
    {
      target: '(a) copies >= 0.5x the source alone, p99 end-to-end < 50 ms',
      value: `${fmtX(one.copyEventsPerSec / base)}, p99 ${fmtMs(one.latencyP99ms)} ms`,
      pass: one.copyEventsPerSec / base >= 0.5 && one.latencyP99ms < 50,
    },
    {
      target: 'a non-matching subscription costs < 5 % of append throughput',
      value: `${(costOfNonMatching * 100).toFixed(1)} %`,
      pass: costOfNonMatching < 0.05,
    },
  ];
  if (VARIANTS.length > 1) {
    // Per scenario: medians of the per-round ratios this ÷ other (the rounds ran side by side).
    console.log(`\nthis build ÷ ${flags['ab-cli']}, medians of per-round ratios:`);
    const ab = {};
    for (const name of Object.keys(summary)) {
      const ratios = (field) =>
        median(
          runs
            .filter((r) => r.name === name && r.variant === 'this')
            .map((r) => r[field] / runs.find((o) => o.name === name && o.variant === 'other' && o.round === r.round)[field]),
        );
      ab[name] = { source: ratios('sourceEventsPerSec'), copies: summary[name].copyEventsPerSec ? ratios('copyEventsPerSec') : NaN };
      console.log(`  ${summary[name].title.padEnd(48)} source ${fmtX(ab[name].source)}` + (Number.isNaN(ab[name].copies) ? '' : `  copies ${fmtX(ab[name].copies)}`));
    }
    if (ab.shaped) {
      targets.push({
        target: '(d) condition + transform copies >= 0.9x the other build in the same run',
        value: fmtX(ab.shaped.copies),
        pass: ab.shaped.copies >= 0.9,
      });
    }
    summary.ab = ab;
  }
  console.log('');
  // A target whose scenario --only left out is not judged.
  const ran = { '(a)': summary.one !== undefined, 'a non-matching': summary.nonMatching !== undefined };
  for (const t of targets) {
    const skipped = Object.entries(ran).some(([prefix, yes]) => t.target.startsWith(prefix) && !yes);
    console.log(skipped ? `SKIP  ${t.target}: not run (--only)` : `${t.pass ? 'PASS' : 'MISS'}  ${t.target}: ${t.value}`);
  }
  const wallSeconds = (performance.now() - wall0) / 1000;
  console.log(`\n${Math.round(wallSeconds)} s; load average at end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  if (!flags['no-write']) {
    writeResult('copy', startedAt, { machine, config: { ...cfg, quick: flags.quick }, summary, targets, runs, wallSeconds }, flags.out);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
