/**
 * What SQLite's locking mode costs a lone write and a read (issue 19, the copy drain's background
 * checkpointer, bench/README "Checkpoints in the copy drain"): a checkpoint on another thread
 * needs a second connection, so the Node host's `locking_mode=EXCLUSIVE` (set before WAL: no
 * shared-memory index, no file lock per transaction) would become the normal mode.
 *
 * Each operation is what a lone append and a read after it do on the database: BEGIN, one INSERT,
 * COMMIT, then one SELECT outside a transaction. WAL, synchronous NORMAL (CPU is compared, not
 * fsync time), autocheckpoint 4000 as the Node host sets it; a fresh database per round, the two
 * modes alternating which goes first. Prints µs of CPU per operation, medians, and their ratio.
 *
 *   node bench/peers/locking-cost.mjs [--ops 20000] [--rounds 5]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { parseOptions, positiveInteger } from '../lib/options.mjs';

const USAGE = 'usage: node bench/peers/locking-cost.mjs [--ops 20000] [--rounds 5]';
const { values } = parseOptions({ options: { ops: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '5' } } }, USAGE);
const ops = positiveInteger(values, 'ops');
const rounds = positiveInteger(values, 'rounds');

/** µs of CPU per operation in a fresh database opened in `mode` ('exclusive' or 'normal'). */
function measure(mode) {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-locking-'));
  const db = new Database(join(dir, 'data.sqlite'));
  try {
    if (mode === 'exclusive') db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('wal_autocheckpoint = 4000');
    db.exec('CREATE TABLE events (sid INTEGER, ofs INTEGER, body TEXT, PRIMARY KEY (sid, ofs)) WITHOUT ROWID');
    const [begin, commit] = [db.prepare('BEGIN'), db.prepare('COMMIT')];
    const insert = db.prepare('INSERT INTO events VALUES (?, ?, ?)');
    const select = db.prepare('SELECT body FROM events WHERE sid = ? AND ofs = ?');
    const body = JSON.stringify({ type: 'bench/e', payload: { text: 'x'.repeat(100) } });
    const before = process.cpuUsage();
    for (let i = 0; i < ops; i++) {
      begin.run();
      insert.run(1, i, body);
      commit.run();
      select.get(1, i);
    }
    const used = process.cpuUsage(before);
    return (used.user + used.system) / ops;
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const figures = { exclusive: [], normal: [] };
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? ['exclusive', 'normal'] : ['normal', 'exclusive'];
  for (const mode of order) figures[mode].push(measure(mode));
  console.log(`round ${round + 1}/${rounds}: exclusive ${figures.exclusive.at(-1).toFixed(1)} µs, normal ${figures.normal.at(-1).toFixed(1)} µs`);
}
const [exclusive, normal] = [median(figures.exclusive), median(figures.normal)];
console.log(`medians of ${rounds} rounds, ${ops} operations each: exclusive ${exclusive.toFixed(1)} µs, normal ${normal.toFixed(1)} µs per operation; normal ÷ exclusive ${(normal / exclusive).toFixed(2)}x`);
