/**
 * Storage-level A/B of the events table's idempotency index (issue 19, the storage format 5
 * decision in packages/server/src/engine/schema.ts): what one group commit of appends with
 * idempotency keys writes, with the Node host's pragmas (WAL, exclusive locking, synchronous
 * NORMAL here: frames and CPU are what is compared, not fsync time).
 *
 *   format4   the unique index on (sid, idem): a stream's keys side by side
 *   format5   the same index on (idem, sid): keys side by side whatever their stream
 *   deferred  a candidate, not the engine's: no key index on the events table. A fresh key is
 *             looked up in an in-memory map of recent keys and in a key table (idem, sid) → ofs
 *             WITHOUT ROWID, and appended to a recent-keys table (rowid order: its tail page only);
 *             every --migrate-every commits one transaction moves the recent keys into the key
 *             table sorted, where keys of one caller land together (bench/README "a key index
 *             written in batches"). Its migrations are inside the figures.
 *   batched   a candidate, not the engine's: the events table has no index at all, so an append
 *             writes only the table's tail; both indexes are tables of their own, (sid, ofs) →
 *             rowid and (idem, sid) → rowid WITHOUT ROWID, filled from the rows past the last
 *             move every --migrate-every commits (one transaction, sorted). A fresh key is looked
 *             up in an in-memory map of the keys since the last move and in the key table
 *             (bench/README "What the two indexes cost an append"). Its moves are inside the figures.
 *
 * Each commit inserts --group events (default 25) into --streams streams (default 100) picked at
 * random, each with a fresh key, `seq` shaped ("c<client>-<n>", 50 clients, as bench/peers sends)
 * `uuid` shaped (random) or `time` shaped (time-ordered, as UUIDv7 and ULID are). Counts WAL frames per commit (the WAL is checkpointed between counts),
 * µs of CPU per append and database bytes per event; rounds alternate the layouts' order and the
 * table shows medians and format5 ÷ format4 and deferred ÷ format5 ratios. `none` (no key at all, the index untouched) is
 * the floor a key's cost is measured from.
 *
 * Each keyed row is written as the engine writes a fresh key: one `INSERT … ON CONFLICT DO NOTHING`
 * (engine/stream-store.ts insertEventIfNewKey); --lookup adds the SELECT of the key before it that
 * the engine made until 2026-12-03 (bench/README "Idempotency keys without a lookup").
 *
 * --page-size: SQLite's page size for the run (the Node host uses SQLite's default, 4096).
 *
 *   node bench/peers/storage-layout.mjs [--events 50000] [--group 25] [--streams 100] [--rounds 3] [--lookup] [--page-size 4096] [--migrate-every 100]
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { parseOptions, positiveInteger } from '../lib/options.mjs';
import { median, ratio, roundOrder } from './verdict.mjs';

const USAGE = `Usage: node bench/peers/storage-layout.mjs [options]

What one group commit of keyed appends writes to SQLite (WAL frames per commit, µs CPU per append,
database bytes per event, and µs CPU per event of pages read back) under four layouts: the
idempotency index as format 4 and format 5 have it, a candidate key index written in batches, and a
candidate with both indexes written in batches; rounds interleaved.

  --events N      appends per layout, key shape and round (default 50000)
  --group N       appends per commit (default 25)
  --streams N     streams the appends are spread over at random (default 100)
  --rounds N      rounds, layouts in alternating order (default 3)
  --lookup        also SELECT each key before its INSERT (the engine until 2026-12-03)
  --page-size N   SQLite's page size, a power of two from 512 to 65536 (default 4096, the host's)
  --migrate-every N  commits between two moves of the deferred layout's recent keys and of the
                  batched layout's index entries (default 100)
  --pages N       pages read back at random after the appends, per run (default 2000)
  --page-events N events per page read back (default 100)
  -h, --help      this text`;

const { values } = parseOptions(
  {
    options: {
      events: { type: 'string', default: '50000' },
      group: { type: 'string', default: '25' },
      streams: { type: 'string', default: '100' },
      rounds: { type: 'string', default: '3' },
      lookup: { type: 'boolean', default: false },
      'page-size': { type: 'string', default: '4096' },
      'migrate-every': { type: 'string', default: '100' },
      pages: { type: 'string', default: '2000' },
      'page-events': { type: 'string', default: '100' },
    },
  },
  USAGE,
);
const positive = (name) => positiveInteger(values, name);
const EVENTS = positive('events');
const GROUP = positive('group');
const STREAMS = positive('streams');
const ROUNDS = positive('rounds');
const PAGE = positive('page-size');
const MIGRATE_EVERY = positive('migrate-every');
const PAGES = positive('pages');
const PAGE_EVENTS = positive('page-events');
if (PAGE < 512 || PAGE > 65536 || (PAGE & (PAGE - 1)) !== 0) {
  console.error(`--page-size must be a power of two from 512 to 65536, not ${PAGE}`);
  process.exit(2);
}
const KEY_SHAPES = ['none', 'seq', 'uuid', 'time'];

const TABLE = `CREATE TABLE events (sid INTEGER NOT NULL, ofs INTEGER NOT NULL, type TEXT NOT NULL, ephemeral INTEGER NOT NULL,
  idem TEXT, created_ms INTEGER NOT NULL, body TEXT NOT NULL)`;
const EPHEMERAL = `CREATE INDEX events_ephemeral ON events (sid, created_ms) WHERE ephemeral = 1`;
const BY_OFFSET = `CREATE UNIQUE INDEX events_by_offset ON events (sid, ofs)`;
const LAYOUTS = {
  format4: [BY_OFFSET, EPHEMERAL, `CREATE UNIQUE INDEX events_by_idem ON events (sid, idem) WHERE idem IS NOT NULL`],
  format5: [BY_OFFSET, EPHEMERAL, `CREATE UNIQUE INDEX events_by_idem ON events (idem, sid) WHERE idem IS NOT NULL`],
  deferred: [
    BY_OFFSET,
    EPHEMERAL,
    `CREATE TABLE event_keys (idem TEXT NOT NULL, sid INTEGER NOT NULL, ofs INTEGER NOT NULL, PRIMARY KEY (idem, sid)) WITHOUT ROWID`,
    `CREATE TABLE recent_keys (sid INTEGER NOT NULL, idem TEXT NOT NULL, ofs INTEGER NOT NULL)`,
  ],
  batched: [
    EPHEMERAL,
    `CREATE TABLE event_offsets (sid INTEGER NOT NULL, ofs INTEGER NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (sid, ofs)) WITHOUT ROWID`,
    `CREATE TABLE event_keys (idem TEXT NOT NULL, sid INTEGER NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (idem, sid)) WITHOUT ROWID`,
  ],
};
/** A page of --page-events events of one stream after an offset, as each layout reads it once its rows are indexed. */
const PAGE_READ = {
  batched: `SELECT e.body FROM event_offsets o JOIN events e ON e.rowid = o.rid WHERE o.sid = ? AND o.ofs > ? ORDER BY o.ofs LIMIT ?`,
  other: `SELECT body FROM events WHERE sid = ? AND ofs > ? ORDER BY ofs LIMIT ?`,
};

function walBytes(file) {
  try {
    return statSync(`${file}-wal`).size;
  } catch {
    return 0;
  }
}

function measure(layout, keyShape, seed) {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-storage-layout-'));
  try {
    const file = join(dir, 'e.db');
    const db = new Database(file);
    db.pragma(`page_size = ${PAGE}`);
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('wal_autocheckpoint = 0');
    for (const ddl of [TABLE, ...LAYOUTS[layout]]) db.exec(ddl);
    const insert = db.prepare(`INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (?, ?, 'bench/e', 0, ?, ?, ?)`);
    const deferred = layout === 'deferred';
    const batched = layout === 'batched';
    const insertIfNew = deferred || batched
      ? null
      : db.prepare(
          `INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (?, ?, 'bench/e', 0, ?, ?, ?) ON CONFLICT (idem, sid) WHERE idem IS NOT NULL DO NOTHING`,
        );
    const lookup = db.prepare(
      deferred ? `SELECT ofs FROM event_keys WHERE sid = ? AND idem = ?` : batched ? `SELECT rid FROM event_keys WHERE sid = ? AND idem = ?` : `SELECT body FROM events WHERE sid = ? AND idem = ?`,
    );
    const insertRecent = deferred ? db.prepare(`INSERT INTO recent_keys (sid, idem, ofs) VALUES (?, ?, ?)`) : null;
    const migrate = deferred
      ? [db.prepare(`INSERT INTO event_keys (idem, sid, ofs) SELECT idem, sid, ofs FROM recent_keys ORDER BY idem, sid`), db.prepare(`DELETE FROM recent_keys`)]
      : batched
        ? [
            db.prepare(`INSERT INTO event_offsets (sid, ofs, rid) SELECT sid, ofs, rowid FROM events WHERE rowid > ? ORDER BY sid, ofs`),
            db.prepare(`INSERT INTO event_keys (idem, sid, rid) SELECT idem, sid, rowid FROM events WHERE rowid > ? AND idem IS NOT NULL ORDER BY idem, sid`),
          ]
        : [];
    // batched: the last rowid whose row is in the index tables, and the last rowid written.
    let moved = 0;
    let lastRowid = 0;
    const move = () => {
      begin.run();
      for (const statement of migrate) statement.run(...(batched ? [moved] : []));
      commit.run();
      moved = lastRowid;
      recent.clear();
    };
    const recent = new Map();
    const begin = db.prepare('BEGIN');
    const commit = db.prepare('COMMIT');
    const heads = new Array(STREAMS).fill(0);
    const clientSeq = new Array(50).fill(0);
    let rnd = seed;
    const next = () => (rnd = (rnd * 1103515245 + 12345) % 2147483648);
    let tick = 0;
    const key = () => {
      if (keyShape === 'none') return null;
      if (keyShape === 'uuid') return randomUUID();
      // Time-ordered like a UUIDv7 or a ULID: a millisecond prefix (one step per commit here), a
      // counter, then random hex.
      if (keyShape === 'time') return `${(1_800_000_000_000 + Math.floor(tick++ / GROUP)).toString(16)}-${(tick & 0xfff).toString(16).padStart(3, '0')}-${randomUUID().slice(14)}`;
      const c = next() % 50;
      return `c${c}-${clientSeq[c]++}`;
    };
    let frames = 0;
    let cpuUs = 0;
    let commits = 0;
    for (let i = 0; i < EVENTS; i += GROUP) {
      const rows = [];
      for (let j = 0; j < GROUP; j++) {
        const sid = next() % STREAMS;
        const k = key();
        const keyJson = k === null ? '' : `,"idempotencyKey":"${k}"`;
        rows.push([sid, ++heads[sid], k, Date.now(), `{"path":"/bench/b-${sid}","offset":${heads[sid]},"type":"bench/e","payload":{"text":"the quick brown fox jumps over the lazy dog 0123456789"}${keyJson}}`]);
      }
      const cpu0 = process.cpuUsage();
      begin.run();
      for (const [sid, ofs, k, ms, body] of rows) {
        if (k === null) lastRowid = Number(insert.run(sid, ofs, k, ms, body).lastInsertRowid);
        else if (deferred || batched) {
          const mapKey = `${sid}\u0000${k}`;
          if (recent.has(mapKey) || lookup.get(sid, k) !== undefined) throw new Error(`key ${k} taken twice`);
          if (batched) {
            // The key stays on its row until the move copies it into the key table.
            lastRowid = Number(insert.run(sid, ofs, k, ms, body).lastInsertRowid);
            recent.set(mapKey, lastRowid);
          } else {
            insert.run(sid, ofs, null, ms, body);
            insertRecent.run(sid, k, ofs);
            recent.set(mapKey, ofs);
          }
        } else if (values.lookup) {
          lookup.get(sid, k);
          insert.run(sid, ofs, k, ms, body);
        } else insertIfNew.run(sid, ofs, k, ms, body);
      }
      commit.run();
      if ((deferred || batched) && (commits + 1) % MIGRATE_EVERY === 0) move();
      const cpu = process.cpuUsage(cpu0);
      cpuUs += cpu.user + cpu.system;
      commits++;
      if (commits % 100 === 0 || i + GROUP >= EVENTS) {
        const size = walBytes(file);
        frames += size <= 32 ? 0 : (size - 32) / (PAGE + 24);
        db.pragma('wal_checkpoint(TRUNCATE)');
      }
    }
    const bytes = statSync(file).size;
    // Pages of one stream read back once every row is indexed: what the layout costs a catch-up read.
    if (batched && moved < lastRowid) move();
    const read = db.prepare(batched ? PAGE_READ.batched : PAGE_READ.other).raw(true);
    const readCpu0 = process.cpuUsage();
    let eventsRead = 0;
    for (let p = 0; p < PAGES; p++) {
      const sid = next() % STREAMS;
      eventsRead += read.all(sid, next() % Math.max(1, heads[sid] - PAGE_EVENTS), PAGE_EVENTS).length;
    }
    const readCpu = process.cpuUsage(readCpu0);
    db.close();
    return {
      framesPerCommit: frames / commits,
      cpuUsPerAppend: cpuUs / EVENTS,
      dbBytesPerEvent: bytes / EVENTS,
      readUsPerEvent: (readCpu.user + readCpu.system) / Math.max(1, eventsRead),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const runs = [];
for (let round = 0; round < ROUNDS; round++) {
  for (const keyShape of KEY_SHAPES) {
    for (const layout of roundOrder(Object.keys(LAYOUTS), round)) runs.push({ layout, keyShape, round, ...measure(layout, keyShape, 7 + round) });
  }
}
console.log(
  `${GROUP} appends per commit over ${STREAMS} streams at random, ${EVENTS} appends per run, medians of ${ROUNDS} rounds, ${values.lookup ? 'SELECT then INSERT' : 'INSERT … ON CONFLICT DO NOTHING'} per keyed row`,
);
console.log('keys | layout   | WAL frames/commit | µs CPU/append | db bytes/event | µs CPU/event read');
const med = (layout, keyShape, field) => median(runs.filter((r) => r.layout === layout && r.keyShape === keyShape).map((r) => r[field]));
for (const keyShape of KEY_SHAPES) {
  for (const layout of Object.keys(LAYOUTS)) {
    console.log(
      `${keyShape.padEnd(4)} | ${layout.padEnd(8)} | ${med(layout, keyShape, 'framesPerCommit').toFixed(1).padStart(17)} | ${med(layout, keyShape, 'cpuUsPerAppend').toFixed(1).padStart(13)} | ${med(layout, keyShape, 'dbBytesPerEvent').toFixed(0).padStart(14)} | ${med(layout, keyShape, 'readUsPerEvent').toFixed(2).padStart(17)}`,
    );
  }
  for (const [label, a, b] of [['5 ÷ 4   ', 'format5', 'format4'], ['def. ÷ 5', 'deferred', 'format5'], ['bat. ÷ 5', 'batched', 'format5']]) {
    const r = (field) => ratio(med(a, keyShape, field), med(b, keyShape, field)).toFixed(2);
    console.log(
      `${keyShape.padEnd(4)} | ${label} | ${`${r('framesPerCommit')}x`.padStart(17)} | ${`${r('cpuUsPerAppend')}x`.padStart(13)} | ${`${r('dbBytesPerEvent')}x`.padStart(14)} | ${`${r('readUsPerEvent')}x`.padStart(17)}`,
    );
  }
}
