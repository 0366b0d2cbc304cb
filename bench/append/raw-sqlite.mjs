/**
 * Baseline (2) of bench/append: raw better-sqlite3 inserts, no HTTP, no JSON parsing. The same
 * table and pragmas as baseline-server.mjs; N rows per transaction, one transaction after another
 * for a fixed time. Prints one JSON line.
 *
 *   node bench/append/raw-sqlite.mjs --data DIR --durability full|relaxed --rows 1|100 --warmup-ms 300 --duration-ms 3000
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { eventJson } from './loadgen.mjs';

const { values } = parseArgs({
  options: {
    data: { type: 'string' },
    durability: { type: 'string', default: 'full' },
    rows: { type: 'string', default: '1' },
    'warmup-ms': { type: 'string', default: '300' },
    'duration-ms': { type: 'string', default: '3000' },
  },
});
if (!values.data) throw new Error('--data DIR is required');
const rows = Number(values.rows);
const warmupMs = Number(values['warmup-ms']);
const durationMs = Number(values['duration-ms']);

mkdirSync(values.data, { recursive: true });
const db = new Database(join(values.data, 'raw.db'));
db.pragma('journal_mode = WAL');
db.pragma(`synchronous = ${values.durability === 'relaxed' ? 'NORMAL' : 'FULL'}`);
db.pragma('wal_autocheckpoint = 4000');
db.exec(`CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY,
  stream TEXT NOT NULL,
  type TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  body TEXT NOT NULL
)`);
const insert = db.prepare('INSERT INTO events (stream, type, created_ms, body) VALUES (?, ?, ?, ?)');
const texts = Array.from({ length: 256 }, (_, i) => eventJson(i, 0));
let seq = 0;
const tx = db.transaction((now) => {
  for (let i = 0; i < rows; i++) insert.run('/bench/raw', 'bench/e', now, texts[seq++ & 255]);
});

const latencies = [];
const start = performance.now();
const from = start + warmupMs;
const to = from + durationMs;
let txs = 0;
for (;;) {
  const t0 = performance.now();
  if (t0 >= to) break;
  tx(Date.now());
  const t1 = performance.now();
  if (t0 >= from) {
    txs++;
    latencies.push(t1 - t0);
  }
}
db.close();
latencies.sort((a, b) => a - b);
const pct = (p) => latencies[Math.min(latencies.length - 1, Math.max(0, Math.ceil((p / 100) * latencies.length) - 1))];
const seconds = durationMs / 1000;
process.stdout.write(
  `${JSON.stringify({ rowsPerTx: rows, seconds, transactions: txs, txPerSec: txs / seconds, rowsPerSec: (txs * rows) / seconds, p50ms: pct(50), p99ms: pct(99) })}\n`,
);
