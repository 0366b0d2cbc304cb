#!/usr/bin/env node
/**
 * The watching side of bench/live, a process of its own: connects to a Rivulet server with the
 * SDK, opens N live connections (live only) on one stream over one RPC session and, with --sse, one
 * SSE tail (GET ?live=sse) of the same stream. For every probe event (type bench/probe) each reader
 * records the receive time (performance.timeOrigin + performance.now(), sub-millisecond wall clock)
 * minus the event's createdAt, and minus the time the driver sent the append (payload.sentAt, the
 * same clock).
 *
 * Lines on stdout: "listening on <url>" once every connection's first batch arrived and the SSE
 * tail is open; "DONE" once every reader saw --probes probes; then, after "REPORT" on stdin, one
 * line "RESULT <json>" and exit.
 */
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    path: { type: 'string', default: '/bench/live' },
    connections: { type: 'string', default: '1' },
    probes: { type: 'string', default: '100' },
    sse: { type: 'boolean', default: false },
    warmup: { type: 'string', default: '0' },
  },
});
const client = await import(pathToFileURL(join(root, 'packages', 'client', 'dist', 'index.js')).href);
const N = Number(values.connections);
const PROBES = Number(values.probes);
/** Probes each reader drops first (JIT and connection warm-up). */
const WARMUP = Number(values.warmup);
const now = () => performance.timeOrigin + performance.now();

/** Per reader: [fromCreatedAt, fromSent] pairs, one per probe. */
const live = [];
const sse = { fromCreatedAt: [], fromSent: [], seen: 0 };
let done = false;

function record(sink, event, at) {
  if (event.type !== 'bench/probe') return;
  sink.fromCreatedAt.push(at - Date.parse(event.createdAt));
  sink.fromSent.push(at - event.payload.sentAt);
  sink.seen++;
}

function checkDone() {
  if (done) return;
  if (live.every((s) => s.seen >= PROBES) && (!values.sse || sse.seen >= PROBES)) {
    done = true;
    console.log('DONE');
  }
}

const itx = await client.connect(values.url, { reconnect: false });
const stream = itx.root.streams.get(values.path);
const firstBatches = [];
for (let i = 0; i < N; i++) {
  const sink = { fromCreatedAt: [], fromSent: [], seen: 0 };
  live.push(sink);
  let first;
  firstBatches.push(new Promise((r) => (first = r)));
  await stream.openConnection({
    connectionKey: `bench-${i}`,
    state: true,
    processEventBatch(batch) {
      const at = now();
      for (const event of batch.events) record(sink, event, at);
      first();
      checkDone();
    },
  });
}
await Promise.all(firstBatches);

let sseAbort;
if (values.sse) {
  const { streamMaxOffset } = await stream.getEvents({ limit: 1 });
  sseAbort = new AbortController();
  const http = client.createClient({ url: values.url });
  let opened;
  const open = new Promise((r) => (opened = r));
  void (async () => {
    try {
      for await (const event of http.tail(values.path, { afterOffset: streamMaxOffset, signal: sseAbort.signal, onOpen: () => opened() })) {
        record(sse, event, now());
        checkDone();
      }
    } catch (error) {
      if (!sseAbort.signal.aborted) console.error('sse tail failed', error);
    }
  })();
  await open;
}

console.log(`listening on ${values.url} with ${N} connection(s)${values.sse ? ' and an SSE tail' : ''}`);

const rl = createInterface({ input: process.stdin });
function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** p50/p99/max over every reader's samples after its warm-up. */
function stats(readers, field) {
  const all = readers.flatMap((r) => r[field].slice(WARMUP)).sort((a, b) => a - b);
  return { count: all.length, p50: percentile(all, 50), p99: percentile(all, 99), max: all.at(-1) ?? NaN };
}

rl.on('line', (line) => {
  if (line.trim() !== 'REPORT') return;
  const result = {
    live: { fromCreatedAt: stats(live, 'fromCreatedAt'), fromSent: stats(live, 'fromSent'), seenMin: Math.min(...live.map((s) => s.seen)) },
    sse: values.sse ? { fromCreatedAt: stats([sse], 'fromCreatedAt'), fromSent: stats([sse], 'fromSent') } : null,
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`, () => {
    sseAbort?.abort();
    itx.close();
    process.exit(0);
  });
});
