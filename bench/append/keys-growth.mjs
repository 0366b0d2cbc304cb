/**
 * How the cost of an idempotency key grows with the keys already stored, below HTTP: appends in
 * group commits of 25 over 100 streams (`--streams`; `StreamActor.append` over `SqliteStorage`, relaxed
 * durability, exclusive locking, as bench/append/engine-ab.mjs), each with a unique key made as
 * bench/peers/load.mjs makes them ("c<caller>-<n>", 50 callers) or none, on builds of
 * packages/server given as dist folders, each build and round in a process of its own (several
 * builds loaded in one process favour the first: bench/README "In-process A/Bs of two builds carry
 * a load-order bias"). The appends are cut into slices of equal size; for each
 * slice it prints the CPU time of this process per append (every thread: the checkpointer's work
 * counts) and the write system calls per append (/proc/self/io: WAL frames and the checkpoints'
 * copies of them). Each build and round runs on a fresh database; rounds alternate the order.
 *
 *   node bench/append/keys-growth.mjs NAME=DIST[,nokeys] [NAME=DIST[,nokeys] …] [--appends 150000] [--slices 5] [--rounds 2] [--streams 100] [--random-keys]
 *
 * A build named twice, once with `,nokeys`, shows the keys' cost as the tables grow (bench/README
 * "A key's cost grows with the keys stored"). `--random-keys` takes a random UUID per append
 * instead (no two keys of a caller close in order).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { median } from '../lib/report.mjs';
import { EVENT_TEXT, keyedEventText, loadEngineBuild, openEngine } from './engine-build.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    appends: { type: 'string', default: '150000' },
    slices: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '2' },
    streams: { type: 'string', default: '100' },
    'random-keys': { type: 'boolean', default: false },
    child: { type: 'boolean', default: false },
  },
});
const [N, SLICES, ROUNDS, STREAMS, GROUP] = [Number(values.appends), Number(values.slices), Number(values.rounds), Number(values.streams), 25];
if (positionals.length === 0 || N % (SLICES * GROUP) !== 0) {
  console.error('usage: keys-growth.mjs NAME=DIST[,nokeys] … [--appends N (a multiple of 25 × slices)] [--slices 5] [--rounds 2] [--streams 100] [--random-keys]');
  process.exit(2);
}

const specs = positionals.map((arg) => {
  const [name, rest] = arg.split('=');
  const [dir, option] = rest.split(',');
  return { name, dir, keys: option !== 'nokeys', slices: Array.from({ length: SLICES }, () => []) };
});

const writeCalls = () => Number(/syscw: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))[1]);
const cpuUs = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

async function measure(b) {
  const slices = [];
  const { actors, close } = await openEngine(b, 'rivulet-keys-growth-', STREAMS);
  try {
    let seed = 7;
    let n = 0;
    const one = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      const k = n++;
      const body = b.keys ? keyedEventText(k, values['random-keys'] ? randomUUID() : undefined) : EVENT_TEXT;
      return actors[seed % STREAMS].append([b.checkInput(JSON.parse(body), 'public', 0)], 'public');
    };
    const perSlice = N / SLICES / GROUP;
    for (let slice = 0; slice < SLICES; slice++) {
      const [cpu0, writes0] = [cpuUs(), writeCalls()];
      for (let i = 0; i < perSlice; i++) await Promise.all(Array.from({ length: GROUP }, one));
      slices.push({ cpu: (cpuUs() - cpu0) / (N / SLICES), writes: (writeCalls() - writes0) / (N / SLICES) });
    }
  } finally {
    close();
  }
  return slices;
}

if (values.child) {
  // One build, one round, in this process: its slices as JSON on stdout.
  console.log(JSON.stringify(await measure({ ...specs[0], ...(await loadEngineBuild(specs[0].dir)) })));
  process.exit(0);
}
const args = ['--appends', String(N), '--slices', String(SLICES), '--streams', String(STREAMS), ...(values['random-keys'] ? ['--random-keys'] : [])];

for (let round = 0; round < ROUNDS; round++) {
  for (const b of round % 2 ? [...specs].reverse() : specs) {
    const spec = `${b.name}=${b.dir}${b.keys ? '' : ',nokeys'}`;
    const slices = JSON.parse(execFileSync(process.execPath, [new URL(import.meta.url).pathname, '--child', spec, ...args], { encoding: 'utf8' }));
    slices.forEach((slice, i) => b.slices[i].push(slice));
  }
}
console.log(`${N} appends in ${SLICES} slices, groups of ${GROUP} over ${STREAMS} streams, ${ROUNDS} rounds (medians): CPU µs and write calls per append, by slice`);
console.log(`${''.padEnd(16)}${Array.from({ length: SLICES }, (_, i) => `to ${(((i + 1) * N) / SLICES / 1000).toFixed(0)}k`.padStart(16)).join('')}`);
for (const b of specs) {
  const cells = b.slices.map((rounds) => `${median(rounds.map((r) => r.cpu)).toFixed(1)} µs ${median(rounds.map((r) => r.writes)).toFixed(2)} w`.padStart(16));
  console.log(`${`${b.name}${b.keys ? '' : ' (no keys)'}`.padEnd(16)}${cells.join('')}`);
}
