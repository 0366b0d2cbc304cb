#!/usr/bin/env node
/**
 * Storage-level split of a catch-up page (bench/README "catch-up reads (reads group)"): the page
 * statement of StreamStore.readRangeJoined over three layouts of the same events, in one process
 * (better-sqlite3, WAL, the Node host's pragmas), without HTTP:
 *
 *   rowid      format 5: a rowid table plus the unique (sid, ofs) index, two b-trees per row
 *   without    a WITHOUT ROWID table keyed by (sid, ofs): one b-tree pass
 *   covering   the rowid table plus an index on (sid, ofs, ephemeral, body): one pass, bodies twice
 *
 * and, on the rowid layout, what parts of the statement cost: only stepping the index (`index`),
 * the rows without joining them (`rows`: count, first and last offsets), the join without them
 * (`join`). Events are ~200-byte stored JSON bodies appended to --streams streams (default 4)
 * interleaved, 1000 rows per transaction, as concurrent appends lay them down; the stream read
 * holds --events of them. Rounds
 * alternate the order; medians of µs of CPU per event read.
 *
 *   node bench/peers/read-layout.mjs [--events 200000] [--streams 4] [--rounds 7] [--cache-mb N]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { eventBody } from './load.mjs';
import { median, roundOrder } from './verdict.mjs';

const { values } = parseArgs({ options: { events: { type: 'string', default: '200000' }, 'cache-mb': { type: 'string' }, streams: { type: 'string', default: '4' }, rounds: { type: 'string', default: '7' } } });
const EVENTS = Number(values.events);
const STREAMS = Number(values.streams);
const ROUNDS = Number(values.rounds);
const PAGE_EVENTS = 500;
const COLUMNS = `sid INTEGER NOT NULL, ofs INTEGER NOT NULL, type TEXT NOT NULL, ephemeral INTEGER NOT NULL, idem TEXT, created_ms INTEGER NOT NULL, body TEXT NOT NULL`;

const dir = mkdtempSync(join(tmpdir(), 'rivulet-read-layout-'));
const db = new Database(join(dir, 'layout.db'));
db.pragma('locking_mode = EXCLUSIVE');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
// SQLite's page cache; its default (2 MB) is the Node host's.
if (values['cache-mb']) db.pragma(`cache_size = -${Number(values['cache-mb']) * 1024}`);
try {
  db.exec(`CREATE TABLE events (${COLUMNS}); CREATE UNIQUE INDEX events_by_offset ON events (sid, ofs);`);
  db.exec(`CREATE TABLE ev_without (${COLUMNS}, PRIMARY KEY (sid, ofs)) WITHOUT ROWID;`);
  db.exec(`CREATE TABLE ev_covering (${COLUMNS}); CREATE UNIQUE INDEX ev_covering_page ON ev_covering (sid, ofs, ephemeral, body);`);
  // The stream read is sid 1; the others get as many events, interleaved with it.
  const others = STREAMS;
  const inserts = ['events', 'ev_without', 'ev_covering'].map((t) => db.prepare(`INSERT INTO ${t} VALUES (?, ?, 'bench/e', 0, NULL, 0, ?)`));
  const path = (sid) => `/bench/s-${sid}`;
  for (let ofs = 1; ofs <= EVENTS; ofs += 1000 / others) {
    db.transaction(() => {
      for (let o = ofs; o < ofs + 1000 / others && o <= EVENTS; o++) {
        for (let sid = 1; sid <= others; sid++) {
          const body = `{"path":"${path(sid)}","offset":${o},"createdAt":"2026-12-02T00:00:00.000Z",${eventBody(0, o, false).toString().slice(1)}`;
          for (const insert of inserts) insert.run(sid, o, body);
        }
      }
    })();
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
  const sub = (table) => `SELECT ofs, body FROM ${table} WHERE sid = ? AND ofs > ? AND ofs < ? AND ephemeral = 0 ORDER BY ofs LIMIT ?`;
  const page = (table) => `SELECT count(*), min(ofs), max(ofs), group_concat(body, ',') FROM (${sub(table)})`;
  const variants = [
    ['rowid', page('events')],
    ['without', page('ev_without')],
    ['covering', page('ev_covering INDEXED BY ev_covering_page')],
    ['index', `SELECT count(*), min(ofs), max(ofs) FROM (SELECT ofs FROM events WHERE sid = ? AND ofs > ? AND ofs < ? ORDER BY ofs LIMIT ?)`],
    ['rows', `SELECT count(*), min(ofs), max(ofs) FROM (${sub('events')})`],
    ['join', `SELECT group_concat(body, ',') FROM (${sub('events')})`],
  ].map(([name, sql]) => [name, db.prepare(sql).raw()]);
  const runs = Object.fromEntries(variants.map(([name]) => [name, []]));
  const sys = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, stmt] of roundOrder(variants, round)) {
      const t0 = process.cpuUsage();
      let read = 0;
      for (let after = 0; after < EVENTS; after += PAGE_EVENTS) read += stmt.get(1, after, Number.MAX_SAFE_INTEGER, PAGE_EVENTS)[0] ?? PAGE_EVENTS;
      const cpu = process.cpuUsage(t0);
      if (name !== 'join' && read !== EVENTS) throw new Error(`${name}: read ${read} events, expected ${EVENTS}`);
      runs[name].push((cpu.user + cpu.system) / EVENTS);
      (sys[name] ??= []).push(cpu.system / EVENTS);
    }
  }
  const base = median(runs.rowid);
  console.log(`${EVENTS.toLocaleString('en')} events of one stream among ${others} interleaved, pages of ${PAGE_EVENTS}, ${ROUNDS} rounds`);
  for (const [name, rs] of Object.entries(runs)) console.log(`${name.padEnd(9)} ${median(rs).toFixed(3)} µs CPU/event, ${median(sys[name]).toFixed(3)} of it system  (${(median(rs) / base).toFixed(2)}x rowid)`);
} finally {
  db.close();
  rmSync(dir, { recursive: true, force: true });
}
