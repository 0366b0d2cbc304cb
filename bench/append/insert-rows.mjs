#!/usr/bin/env node
/**
 * What one INSERT per event row costs against one INSERT per 14 rows (engine/event-rows.ts
 * ROWS_PER_INSERT), at the storage alone: better-sqlite3 on a WAL file with the events table of
 * storage format 6, transactions of BATCH rows shaped like a copy of bench/peers' drain (a body of
 * BODY characters and a copy key), committed without a sync. Rounds alternate the order; prints
 * CPU µs per row per round and the ratio of the medians (docs/performance.md "A batch's rows go
 * in 14 to a statement").
 *
 *   node bench/append/insert-rows.mjs [ROUNDS]   (BATCH=500, BODY=560, ROWS=100000 per round)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

const rounds = Number(process.argv[2] ?? 6);
const batch = Number(process.env.BATCH ?? 500);
const bodyLength = Number(process.env.BODY ?? 560);
const rowsPerRound = Number(process.env.ROWS ?? 100_000);
const PER_INSERT = 14;
const COLUMNS = '(sid, ofs, type, ephemeral, idem, created_ms, body)';
const KEY = 'rivulet-internal/copy:["drain",12,null,"/bench/src","da724640-130f-44c0-9938-53635f32fd43",';

function open() {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-insert-rows-'));
  const db = new Database(join(dir, 'rivulet.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('wal_autocheckpoint = 4000');
  db.exec(`CREATE TABLE events (sid INTEGER NOT NULL, ofs INTEGER NOT NULL, type TEXT NOT NULL, ephemeral INTEGER NOT NULL,
             idem TEXT, created_ms INTEGER NOT NULL, body TEXT NOT NULL);
           CREATE UNIQUE INDEX events_by_offset ON events (sid, ofs)`);
  return { db, close: () => (db.close(), rmSync(dir, { recursive: true, force: true })) };
}

const body = 'x'.repeat(bodyLength);
const values = (ofs) => [1, ofs, 'bench/e', 0, `${KEY}${ofs}]`, 1_700_000_000_000 + ofs, `${body}${ofs}`];

function oneEach(db) {
  const insert = db.prepare(`INSERT INTO events ${COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?)`);
  return (first, n) => {
    for (let i = 0; i < n; i++) insert.run(...values(first + i));
  };
}

function fourteenEach(db) {
  const statements = [];
  const of = (n) => (statements[n] ??= db.prepare(`INSERT INTO events ${COLUMNS} VALUES ${Array.from({ length: n }, () => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`));
  return (first, n) => {
    for (let start = 0; start < n; start += PER_INSERT) {
      const k = Math.min(PER_INSERT, n - start);
      const params = [];
      for (let i = 0; i < k; i++) params.push(...values(first + start + i));
      of(k).run(...params);
    }
  };
}

function measure(make) {
  const { db, close } = open();
  try {
    const write = make(db);
    const begin = db.prepare('BEGIN');
    const commit = db.prepare('COMMIT');
    const cpu = process.cpuUsage();
    for (let ofs = 1; ofs <= rowsPerRound; ofs += batch) {
      begin.run();
      write(ofs, Math.min(batch, rowsPerRound - ofs + 1));
      commit.run();
    }
    const used = process.cpuUsage(cpu);
    const count = db.prepare('SELECT count(*) AS n FROM events').get().n;
    if (count !== rowsPerRound) throw new Error(`stored ${count} rows, expected ${rowsPerRound}`);
    return (used.user + used.system) / rowsPerRound;
  } finally {
    close();
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cases = [
  ['one row per INSERT', oneEach],
  [`${PER_INSERT} rows per INSERT`, fourteenEach],
];
const results = cases.map(() => []);
console.log(`event rows: ${rowsPerRound} per round in transactions of ${batch}, bodies of ${bodyLength} characters`);
for (let round = 0; round < rounds; round++) {
  const order = round % 2 ? [1, 0] : [0, 1];
  for (const i of order) {
    const us = measure(cases[i][1]);
    results[i].push(us);
    console.log(`${round + 1} ${cases[i][0].padEnd(20)} ${us.toFixed(2)} µs CPU/row`);
  }
}
const [one, many] = results.map(median);
console.log(`median: one row ${one.toFixed(2)}, ${PER_INSERT} rows ${many.toFixed(2)} µs CPU/row; ${PER_INSERT} ÷ one ${(many / one).toFixed(3)}`);
