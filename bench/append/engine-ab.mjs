/**
 * In-process A/B of the append path below HTTP: `StreamActor.append` over `SqliteStorage`
 * (relaxed durability, exclusive locking, group commit: the Node host's settings), one event per
 * append, with builds of packages/server given as dist folders. Rounds interleave the builds (the
 * order alternates), each on a fresh database with a warm-up; it prints the CPU time of this
 * process per append (median and every round). Much steadier than the HTTP figures of run.mjs on a
 * shared machine, since no second process and no socket is involved; it measures only the engine,
 * the stream store and SQLite, not the edge.
 *
 *   node bench/append/engine-ab.mjs NAME=DIST [NAME=DIST …] [--appends 10000] [--rounds 9] [--group 1] [--keys]
 *
 * --keys: every append carries a unique idempotency key, made as bench/peers/load.mjs makes them
 * (50 callers each counting, "c<caller>-<n>"), for the cost of keys below HTTP (bench/README
 * "Idempotency keys without a lookup").
 *
 * --group 1: one stream, each append awaited before the next (scenario a). --group N: N appends to
 * streams picked at random among 100, issued in one turn so they share a group commit (scenario b).
 */
import { parseArgs } from 'node:util';
import { EVENT_TEXT, keyedEventText, loadEngineBuild, openEngine } from './engine-build.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    appends: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '9' },
    group: { type: 'string', default: '1' },
    keys: { type: 'boolean', default: false },
  },
});
const N = Number(values.appends);
const ROUNDS = Number(values.rounds);
const GROUP = Number(values.group);
if (positionals.length === 0) throw new Error('usage: engine-ab.mjs NAME=DIST [NAME=DIST …] [--appends N] [--rounds N] [--group N]');

const builds = [];
for (const arg of positionals) {
  const [name, dir] = arg.split('=');
  builds.push({ name, ...(await loadEngineBuild(dir)) });
}

async function measure(b) {
  const { actors, close } = await openEngine(b, 'rivulet-engine-ab-', GROUP === 1 ? 1 : 100);
  try {
    let seed = 7;
    const pick = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return actors[seed % actors.length];
    };
    // Every input is made before the clock starts, by JSON.parse as an HTTP body would be (a spread
    // copy per append measured the harness: about 2 µs of the keyed figure).
    const inputs = Array.from({ length: 2000 + N }, (_, n) => JSON.parse(values.keys ? keyedEventText(n) : EVENT_TEXT));
    let seq = 0;
    const one = (actor) => actor.append([b.checkInput(inputs[seq++], 'public', 0)], 'public');
    const step = () => (GROUP === 1 ? one(actors[0]) : Promise.all(Array.from({ length: GROUP }, () => one(pick()))));
    for (let i = 0; i < 2000 / GROUP; i++) await step();
    const before = process.cpuUsage();
    for (let i = 0; i < N / GROUP; i++) await step();
    const used = process.cpuUsage(before);
    return (used.user + used.system) / N;
  } finally {
    close();
  }
}

const results = new Map(builds.map((b) => [b.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const b of round % 2 ? [...builds].reverse() : builds) results.get(b.name).push(await measure(b));
}
console.log(
  `${N} appends per round, ${ROUNDS} rounds, ${GROUP === 1 ? 'one stream, sequential' : `groups of ${GROUP} over 100 streams`}${values.keys ? ', a unique idempotency key each' : ''}`,
);
for (const [name, rounds] of results) {
  const sorted = [...rounds].sort((a, b) => a - b);
  console.log(`${name.padEnd(10)} CPU µs/append: median ${sorted[sorted.length >> 1].toFixed(1)}  (${rounds.map((x) => x.toFixed(1)).join(' ')})`);
}
