#!/usr/bin/env node
/**
 * bench/live (processors): hosted processor folding throughput. See bench/README.md.
 *
 *   npm run build && node bench/live/processors.mjs            # full run
 *   node bench/live/processors.mjs --quick                     # smoke run
 *
 * A source stream holding N events gets a processor-wake subscription; a processor host process
 * (the SDK's serveProcessors, bench/live/processor-host.mjs) with a trivial reducer (n + 1) folds
 * them, one event per batch as the protocol says: per event one wake-free batch call, one fold,
 * one SQLite commit of state and checkpoint, one report. Throughput = N / (commit of the last
 * event − configure acknowledged), measured with the host's commits synced (`durability: full`,
 * the default) and not (`relaxed`). Baseline in the same run: the same host code folding and
 * committing N events in a loop without RPC or server (`--bare`), the floor one commit per event
 * sets.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CLI, root, startServer, stopServer, tempFolders, track } from '../lib/processes.mjs';
import { call, machineInfo, median, preload, writeResult } from '../lib/report.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const HOST = join(here, 'processor-host.mjs');

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    events: { type: 'string' },
    rounds: { type: 'string' },
    out: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (flags.help) {
  console.log('Usage: node bench/live/processors.mjs [--quick] [--events N] [--rounds N] [--out FILE] [--no-write]');
  process.exit(0);
}
const cfg = {
  events: Number(flags.events ?? (flags.quick ? 1000 : 5000)),
  rounds: Number(flags.rounds ?? (flags.quick ? 1 : 3)),
};
const freshDir = tempFolders('rivulet-bench-processors-');


/** Runs the host script; resolves with the child and a waiter for a line matching `pattern`. */
function startHost(args) {
  const child = track(spawn(process.execPath, [HOST, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  let err = '';
  const waiters = new Set();
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    out += chunk;
    for (const w of waiters) w();
  });
  child.stderr.on('data', (chunk) => (err += chunk));
  const line = (pattern, timeoutMs = 600_000) =>
    new Promise((resolvePromise, reject) => {
      const check = () => {
        const m = pattern.exec(out);
        if (m) {
          waiters.delete(check);
          clearTimeout(timer);
          resolvePromise(m);
        } else if (child.exitCode !== null) {
          waiters.delete(check);
          clearTimeout(timer);
          reject(new Error(`the processor host exited (${child.exitCode}) before ${pattern}\n${out}${err}`));
        }
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`no ${pattern} within ${timeoutMs} ms\n${out}${err}`));
      }, timeoutMs);
      waiters.add(check);
      child.once('exit', check);
      check();
    });
  const stop = () =>
    new Promise((res) => {
      if (child.exitCode !== null || child.signalCode !== null) return res();
      child.once('exit', () => res());
      child.kill('SIGTERM');
    });
  return { child, line, stop };
}

async function foldRound(durability, round) {
  const dir = freshDir(`${durability}-r${round}`);
  const server = await startServer([CLI, 'serve', '--port', '0', '--data', join(dir, 'data'), '--processor-idle-ms', '600000'], 'rivulet');
  try {
    const head = await preload(server.url, '/bench/p', cfg.events);
    const host = startHost(['--url', server.url, '--db', join(dir, 'host.db'), '--durability', durability, '--target', String(head)]);
    await host.line(/READY/);
    const t0 = Date.now();
    await call(server.url, 'POST', '/v1/streams/bench/p', {
      type: 'events.iterate.com/stream/subscription-configured',
      payload: {
        subscriptionKey: 'count',
        filter: { eventTypes: ['bench/e'] },
        receiver: { action: 'processor-wake', expression: ['processors', ['get', 'bench'], 'wakeStreamProcessor'] },
      },
    });
    const [, checkpoint, at, folded] = await host.line(/DONE (\d+) (\d+) (\d+)/);
    const seconds = (Number(at) - t0) / 1000;
    const state = await call(server.url, 'GET', '/v1/streams/bench/p:state');
    await host.stop();
    if (Number(folded) !== cfg.events) throw new Error(`the processor folded ${folded} events, expected ${cfg.events}`);
    return {
      durability,
      round,
      events: Number(folded),
      checkpoint: Number(checkpoint),
      seconds,
      eventsPerSecond: Math.round(Number(folded) / seconds),
      batchesSent: state.runtime.connections.count?.batchesSent ?? null,
      deliveryDurationMs: state.runtime.subscriptions.count?.deliveryDurationMs ?? null,
    };
  } finally {
    await stopServer(server);
  }
}

async function bareRound(durability, round) {
  const dir = freshDir(`bare-${durability}-r${round}`);
  const host = startHost(['--bare', String(cfg.events), '--db', join(dir, 'host.db'), '--durability', durability]);
  const [, n, ms] = await host.line(/BARE (\d+) ([\d.]+)/);
  await host.stop();
  return { durability, round, events: Number(n), seconds: Number(ms) / 1000, eventsPerSecond: Math.round(Number(n) / (Number(ms) / 1000)) };
}

const startedAt = new Date();
const machine = machineInfo(startedAt);
console.log(`bench/live processors on ${machine.nproc} x ${machine.cpuModel}, node ${machine.node}; ${cfg.events} events, ${cfg.rounds} round(s)`);
const folds = [];
const bare = [];
for (let round = 1; round <= cfg.rounds; round++) {
  for (const durability of ['full', 'relaxed']) {
    const r = await foldRound(durability, round);
    folds.push(r);
    console.log(`  round ${round} ${durability.padEnd(7)} hosted: ${String(r.eventsPerSecond).padStart(6)} events/s (${r.seconds.toFixed(2)} s, one event per batch)`);
    const b = await bareRound(durability, round);
    bare.push(b);
    console.log(`  round ${round} ${durability.padEnd(7)} bare:   ${String(b.eventsPerSecond).padStart(6)} events/s (host code in a loop, no RPC, no server)`);
  }
}
const summary = {};
for (const durability of ['full', 'relaxed']) {
  summary[durability] = {
    hostedEventsPerSecond: median(folds.filter((r) => r.durability === durability).map((r) => r.eventsPerSecond)),
    bareEventsPerSecond: median(bare.filter((r) => r.durability === durability).map((r) => r.eventsPerSecond)),
  };
}
console.log('median events/s:', JSON.stringify(summary));
if (!flags['no-write']) {
  writeResult('processors', startedAt, { machine, config: { ...cfg, quick: flags.quick }, summary, folds, bare }, flags.out);
}
