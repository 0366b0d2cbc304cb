// Where the Node host's lag query spends its time (rivulet_subscription_lag_events, run by every
// scrape: StreamStore.largestLags). A database of the engine's own schema (packages/server/dist),
// N streams of 5 events with one subscription each, every tenth of them 4 events behind, and the
// streams rows' head checkpoints left behind the events (as after appends that wrote no streams
// row). Interleaved rounds time, over the same database:
//   largestLags  the query /metrics runs (the head of each stream derived from its events)
//   checkpoint   the same query over the head checkpoints alone (a floor: what the query would
//                cost if every stream's head were known without reading its events; its answer
//                is wrong, which is why it is not what the engine runs)
// Prints medians, the ratio and the load average (the machine is shared: read ratios, not times).
//   npm run build && node bench/metrics/lag-query.mjs [--streams 10000] [--rounds 30]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { SqliteStorage } from '../../packages/server/dist/adapters/sqlite/sqlite-storage.js';
import { openSchema } from '../../packages/server/dist/engine/schema.js';
import { StreamStore } from '../../packages/server/dist/engine/stream-store.js';

const { values } = parseArgs({ options: { streams: { type: 'string', default: '10000' }, rounds: { type: 'string', default: '30' } } });
const n = Number(values.streams);
const rounds = Number(values.rounds);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const dir = mkdtempSync(join(tmpdir(), 'rivulet-lag-query-'));
const storage = new SqliteStorage(join(dir, 'data.sqlite'), { durability: 'relaxed' });
try {
  openSchema(storage);
  const store = new StreamStore(storage);
  storage.transaction(() => {
    for (let sid = 1; sid <= n; sid++) {
      storage.run(`INSERT INTO streams VALUES (?, '', ?, ?, 't', 2, 5, 5, '{}', 2)`, sid, `/s/${sid}`, `id-${sid}`);
      for (let ofs = 1; ofs <= 5; ofs++) storage.run(`INSERT INTO events VALUES (?, ?, 'x', 0, NULL, 0, '{}')`, sid, ofs);
      storage.run(
        `INSERT INTO subscription_runtime VALUES (?, 'k', 0, 0, ?, 0, NULL, NULL, NULL, 0, 0, NULL, 0, 0, 0, NULL)`,
        sid,
        sid % 10 === 0 ? 1 : 5,
      );
    }
  });
  const checkpointSql = `SELECT project, path, key, lag FROM
     (SELECT s.project, s.path, r.key, s.head - r.cursor AS lag FROM subscription_runtime r JOIN streams s ON s.sid = r.sid)
   WHERE lag > 0 ORDER BY lag DESC LIMIT ?`;
  const first = store.largestLags(100);
  if (first.length !== 100 || first[0].lag !== 4) throw new Error(`unexpected answer: ${JSON.stringify(first[0])} (${first.length} rows)`);
  const times = { largestLags: [], checkpoint: [] };
  for (let round = 0; round < rounds; round++) {
    // Alternate which goes first, so that neither always runs on a warmer cache.
    const order = round % 2 === 0 ? ['largestLags', 'checkpoint'] : ['checkpoint', 'largestLags'];
    for (const which of order) {
      const t0 = performance.now();
      if (which === 'largestLags') store.largestLags(100);
      else storage.exec(checkpointSql, 100);
      times[which].push(performance.now() - t0);
    }
  }
  const a = median(times.largestLags);
  const b = median(times.checkpoint);
  const load = readFileSync('/proc/loadavg', 'utf8').trim();
  console.log(`${n} subscriptions (${n / 10} lagging), ${rounds} rounds, load average ${load}`);
  console.log(`largestLags (what /metrics runs): median ${a.toFixed(2)} ms`);
  console.log(`checkpoint heads only (floor):    median ${b.toFixed(2)} ms`);
  console.log(`ratio largestLags / floor: ${(a / b).toFixed(2)}`);
} finally {
  storage.close();
  rmSync(dir, { recursive: true, force: true });
}
