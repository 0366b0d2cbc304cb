/**
 * Optional preload for the Rivulet server child (`run.mjs --probe`): wraps better-sqlite3's
 * Statement#run to measure group commit from the outside, without touching packages/. Counts, per
 * BEGIN..COMMIT group, the savepoints and the event rows inserted (one-event appends to an existing
 * stream join a group without a savepoint, so event rows are what counts appends),
 * and times the COMMIT statement (where the fsync happens) and the whole group. Prints one line
 * "PROBE {json}" on stderr when the process exits. It also counts the WAL syncs run on the thread
 * pool (node:fs fdatasync, decision 010) and how long each took from call to callback.
 */
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import Database from 'better-sqlite3';
import { performance } from 'node:perf_hooks';

const probeDb = new Database(':memory:');
const proto = Object.getPrototypeOf(probeDb.prepare('SELECT 1'));
probeDb.close();
const originalRun = proto.run;

const syncs = []; // wall ms from call to callback
const originalFdatasync = fs.fdatasync;
fs.fdatasync = function fdatasync(fd, callback) {
  const t0 = performance.now();
  return originalFdatasync.call(this, fd, (error) => {
    syncs.push(performance.now() - t0);
    callback(error);
  });
};
syncBuiltinESMExports();

const groups = []; // [savepoints, eventRows, commitMs, openMs]
let open = null;
let commitTotalMs = 0;
let statementsMs = 0;

proto.run = function run(...args) {
  const source = this.source;
  if (source === 'BEGIN') {
    open = { t0: performance.now(), savepoints: 0, rows: 0 };
    return originalRun.apply(this, args);
  }
  if (source === 'COMMIT') {
    const t0 = performance.now();
    const result = originalRun.apply(this, args);
    const t1 = performance.now();
    commitTotalMs += t1 - t0;
    if (open) groups.push([open.savepoints, open.rows, t1 - t0, t1 - open.t0]);
    open = null;
    return result;
  }
  if (open) {
    if (source === 'SAVEPOINT tx') open.savepoints++;
    else if (source.startsWith('INSERT INTO events')) open.rows++;
  }
  const t0 = performance.now();
  const result = originalRun.apply(this, args);
  statementsMs += performance.now() - t0;
  return result;
};

function summary(values) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
  const mean = sorted.reduce((s, v) => s + v, 0) / sorted.length;
  return { mean, p50: at(50), p90: at(90), p99: at(99), max: sorted[sorted.length - 1] };
}

process.on('exit', () => {
  const out = {
    commits: groups.length,
    savepointsPerCommit: summary(groups.map((g) => g[0])),
    eventRowsPerCommit: summary(groups.map((g) => g[1])),
    commitMs: summary(groups.map((g) => g[2])),
    groupOpenMs: summary(groups.map((g) => g[3])),
    commitTotalMs,
    // COMMITs above 1 ms: almost always the ones that ran a WAL checkpoint (wal_autocheckpoint).
    slowCommits: { count: groups.filter((g) => g[2] > 1).length, totalMs: groups.reduce((s, g) => s + (g[2] > 1 ? g[2] : 0), 0) },
    otherStatementsMs: statementsMs,
    syncs: syncs.length,
    syncMs: summary(syncs),
    uptimeMs: performance.now(),
  };
  process.stderr.write(`PROBE ${JSON.stringify(out)}\n`);
});
