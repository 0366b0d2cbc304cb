/**
 * SQLite-only comparison of layouts of the `events` table (the storage-format-3 decision of
 * packages/server/src/engine/schema.ts), with the Node host's pragmas (WAL, synchronous=NORMAL,
 * exclusive locking); the WAL is checkpointed by the script between counts.
 *
 *   format2        the rowid table and its unique (sid, ofs) index, plus the streams row updated
 *                  per append (what format 2 wrote)
 *   rowid+index    the same without the streams row (format 3: the streams row is a checkpoint)
 *   rowid-only     the rowid table without any (sid, ofs) index: what the index costs (an upper bound
 *                  of what writing it later, in batches, could save)
 *   batched-index  the rowid table, and a (sid, ofs) → rowid table written in batches: every
 *                  --index-batch rows (default 1000) one group commit also indexes every row since
 *                  the last batch, in (sid, ofs) order, and moves a watermark (the design sketched
 *                  as storage format 4 in bench/README; rows above the watermark would be found from
 *                  memory or a bounded scan, which this script does not model)
 *   without-rowid  PRIMARY KEY (sid, ofs) WITHOUT ROWID
 *   split          WITHOUT ROWID, bodies above 900 bytes in a rowid side table
 *
 * Per body size: µs per transaction, WAL frames (pages) written per transaction, database bytes per
 * event, and µs per event reading 500-event ranges. `--group N` inserts N events per transaction
 * (a group commit), `--random` picks each event's stream at random instead of in turn, `--page-size`
 * sets SQLite's page size of the new database (default 4096).
 *
 *   node bench/append/events-table.mjs [--events 4000] [--streams 10] [--sizes 150,600,1200,2500,6000]
 *        [--group 1] [--random] [--page-size 4096] [--index-batch 1000]
 *        [--layouts format2,rowid+index,batched-index,rowid-only,without-rowid,split]
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '4000' },
    streams: { type: 'string', default: '10' },
    sizes: { type: 'string', default: '150,600,1200,2500,6000' },
    group: { type: 'string', default: '1' },
    random: { type: 'boolean', default: false },
    layouts: { type: 'string' },
    'page-size': { type: 'string', default: '4096' },
    'index-batch': { type: 'string', default: '1000' },
  },
});
/** Rows between two index batches of the batched-index layout. */
const INDEX_BATCH = Number(values['index-batch']);
/** Inserts per transaction (a group commit of that many appends). */
const GROUP = Number(values.group);
const EVENTS = Number(values.events);
const STREAMS = Number(values.streams);
const SIZES = values.sizes.split(',').map(Number);
const PAGE = Number(values['page-size']);

const LAYOUTS = {
  // format 2 as it was: the rowid table and its index, plus the streams row rewritten per append.
  format2: [
    `CREATE TABLE events (sid INTEGER NOT NULL, ofs INTEGER NOT NULL, type TEXT NOT NULL, ephemeral INTEGER NOT NULL,
       idem TEXT, created_ms INTEGER NOT NULL, body TEXT NOT NULL)`,
    `CREATE UNIQUE INDEX events_by_offset ON events (sid, ofs)`,
  ],
  'rowid+index': [
    `CREATE TABLE events (sid INTEGER NOT NULL, ofs INTEGER NOT NULL, type TEXT NOT NULL, ephemeral INTEGER NOT NULL,
       idem TEXT, created_ms INTEGER NOT NULL, body TEXT NOT NULL)`,
    `CREATE UNIQUE INDEX events_by_offset ON events (sid, ofs)`,
  ],
  'batched-index': [
    `CREATE TABLE events (sid INTEGER NOT NULL, ofs INTEGER NOT NULL, type TEXT NOT NULL, ephemeral INTEGER NOT NULL,
       idem TEXT, created_ms INTEGER NOT NULL, body TEXT NOT NULL)`,
    `CREATE TABLE event_index (sid INTEGER NOT NULL, ofs INTEGER NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (sid, ofs)) WITHOUT ROWID`,
    `CREATE TABLE index_mark (id INTEGER PRIMARY KEY, rid INTEGER NOT NULL)`,
    `INSERT INTO index_mark VALUES (1, 0)`,
  ],
  // Upper bound of what a lazily written index could save: no (sid, ofs) index at all.
  'rowid-only': [
    `CREATE TABLE events (sid INTEGER NOT NULL, ofs INTEGER NOT NULL, type TEXT NOT NULL, ephemeral INTEGER NOT NULL,
       idem TEXT, created_ms INTEGER NOT NULL, body TEXT NOT NULL)`,
  ],
  'without-rowid': [
    `CREATE TABLE events (sid INTEGER NOT NULL, ofs INTEGER NOT NULL, type TEXT NOT NULL, ephemeral INTEGER NOT NULL,
       idem TEXT, created_ms INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (sid, ofs)) WITHOUT ROWID`,
  ],
  // WITHOUT ROWID for small bodies; a body above SPLIT bytes goes to a rowid side table.
  split: [
    `CREATE TABLE events (sid INTEGER NOT NULL, ofs INTEGER NOT NULL, type TEXT NOT NULL, ephemeral INTEGER NOT NULL,
       idem TEXT, created_ms INTEGER NOT NULL, body TEXT, body_id INTEGER, PRIMARY KEY (sid, ofs)) WITHOUT ROWID`,
    `CREATE TABLE event_bodies (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`,
  ],
};
const SPLIT = 900;
const STREAMS_ROW = new Set(['format2']);
const CHOSEN = values.layouts ? values.layouts.split(',') : Object.keys(LAYOUTS);
const COMMON = [
  `CREATE UNIQUE INDEX events_by_idem ON events (sid, idem) WHERE idem IS NOT NULL`,
  `CREATE INDEX events_ephemeral ON events (sid, created_ms) WHERE ephemeral = 1`,
];

function body(size, i) {
  const head = `{"type":"bench/e","payload":{"i":${i},"pad":"`;
  const tail = '"}}';
  return head + 'x'.repeat(Math.max(0, size - head.length - tail.length)) + tail;
}

/** Frames in the WAL file since the last call (it is truncated after counting). */
function walFrames(db, file) {
  let size = 0;
  try {
    size = statSync(`${file}-wal`).size;
  } catch {
    // no WAL yet
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
  return size <= 32 ? 0 : (size - 32) / (PAGE + 24);
}

function measure(layout, size) {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-events-table-'));
  try {
    const file = join(dir, 'e.db');
    const db = new Database(file);
    db.pragma(`page_size = ${PAGE}`);
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('wal_autocheckpoint = 0');
    for (const ddl of [...LAYOUTS[layout], ...COMMON]) db.exec(ddl);
    db.exec(`CREATE TABLE streams (sid INTEGER PRIMARY KEY, project TEXT NOT NULL, path TEXT NOT NULL, stream_id TEXT NOT NULL,
      created_at TEXT NOT NULL, head INTEGER NOT NULL, event_count INTEGER NOT NULL, max_offset INTEGER NOT NULL, state TEXT NOT NULL)`);
    const addStream = db.prepare(`INSERT INTO streams VALUES (?, '', ?, 'a5c1b2d3-0000-4000-8000-000000000000', '2026-01-01T00:00:00.000Z', 0, 0, 0, ?)`);
    for (let sid = 0; sid < STREAMS; sid++) addStream.run(sid, `/bench/b-${sid}`, '{"subscriptions":{"inbound":{"bySourcePath":{}},"outbound":{"byKey":{}}}}');
    const saveHead = STREAMS_ROW.has(layout) ? db.prepare(`UPDATE streams SET head = ?, event_count = ?, max_offset = ? WHERE sid = ?`) : null;
    let rnd = 1;
    const nextSid = (i) => {
      if (!values.random) return i % STREAMS;
      rnd = (rnd * 1103515245 + 12345) % 2147483648;
      return rnd % STREAMS;
    };
    const plain = db.prepare(`INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (?, ?, 'bench/e', 0, NULL, ?, ?)`);
    const insert =
      layout !== 'split'
        ? plain
        : (() => {
            const side = db.prepare(`INSERT INTO event_bodies (body) VALUES (?)`);
            const ref = db.prepare(`INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body_id) VALUES (?, ?, 'bench/e', 0, NULL, ?, ?)`);
            return {
              run: (sid, ofs, ms, text) =>
                Buffer.byteLength(text) <= SPLIT ? plain.run(sid, ofs, ms, text) : ref.run(sid, ofs, ms, side.run(text).lastInsertRowid),
            };
          })();
    const batched = layout === 'batched-index';
    const indexBatch = batched
      ? (() => {
          const mark = db.prepare(`SELECT rid FROM index_mark WHERE id = 1`).pluck();
          const add = db.prepare(`INSERT INTO event_index SELECT sid, ofs, rowid FROM events WHERE rowid > ? ORDER BY sid, ofs`);
          const move = db.prepare(`UPDATE index_mark SET rid = (SELECT max(rowid) FROM events) WHERE id = 1`);
          return () => {
            add.run(mark.get());
            move.run();
          };
        })()
      : null;
    let unindexed = 0;
    const begin = db.prepare('BEGIN');
    const commit = db.prepare('COMMIT');
    const texts = Array.from({ length: 64 }, (_, i) => body(size, i));
    const heads = new Array(STREAMS).fill(0);
    walFrames(db, file);
    let frames = 0;
    let insertMs = 0;
    for (let i = 0; i < EVENTS; i += GROUP) {
      const t0 = performance.now();
      begin.run();
      for (let j = i; j < i + GROUP; j++) {
        const sid = nextSid(j);
        insert.run(sid, ++heads[sid], Date.now(), texts[j & 63]);
        saveHead?.run(heads[sid], heads[sid], heads[sid], sid);
      }
      unindexed += GROUP;
      if (indexBatch && unindexed >= INDEX_BATCH) {
        indexBatch();
        unindexed = 0;
      }
      commit.run();
      insertMs += performance.now() - t0;
      if ((i / GROUP) % 200 === 199) frames += walFrames(db, file);
    }
    if (indexBatch && unindexed > 0) indexBatch(); // not timed: the reads below want every row indexed
    frames += walFrames(db, file);
    const bytes = statSync(file).size;
    const read = db.prepare(
      batched
        ? `SELECT i.ofs, e.body FROM event_index i JOIN events e ON e.rowid = i.rid
           WHERE i.sid = ? AND i.ofs > ? AND i.ofs < ? AND e.ephemeral = 0 ORDER BY i.ofs LIMIT 500`
        : layout === 'split'
        ? `SELECT ofs, coalesce(body, (SELECT b.body FROM event_bodies b WHERE b.id = body_id)) AS body FROM events
           WHERE sid = ? AND ofs > ? AND ofs < ? AND ephemeral = 0 ORDER BY ofs LIMIT 500`
        : `SELECT ofs, body FROM events WHERE sid = ? AND ofs > ? AND ofs < ? AND ephemeral = 0 ORDER BY ofs LIMIT 500`,
    );
    const t1 = performance.now();
    let rows = 0;
    for (let pass = 0; pass < 3; pass++) {
      for (let sid = 0; sid < STREAMS; sid++) {
        for (let after = 0; after < heads[sid]; after += 500) rows += read.all(sid, after, after + 501).length;
      }
    }
    const readMs = performance.now() - t1;
    db.close();
    return {
      layout,
      size,
      usPerTx: +((insertMs * 1000 * GROUP) / EVENTS).toFixed(1),
      walFramesPerTx: +((frames * GROUP) / EVENTS).toFixed(2),
      dbBytesPerEvent: Math.round(bytes / EVENTS),
      usPerEventRead: +((readMs * 1000) / rows).toFixed(2),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const results = [];
for (const size of SIZES) {
  // Alternate the order per size; keep the better of two runs of each layout (the machine is shared).
  for (const round of [0, 1]) {
    const order = round === 0 ? CHOSEN : [...CHOSEN].reverse();
    for (const layout of order) results.push(measure(layout, size));
  }
}
const best = new Map();
for (const r of results) {
  const key = `${r.size} ${r.layout}`;
  const b = best.get(key);
  if (!b) best.set(key, { ...r });
  else {
    b.usPerTx = Math.min(b.usPerTx, r.usPerTx);
    b.usPerEventRead = Math.min(b.usPerEventRead, r.usPerEventRead);
  }
}
console.log(`${GROUP} insert(s) per transaction, ${STREAMS} stream(s) ${values.random ? 'at random' : 'in turn'}:`);
console.log('body bytes | layout        |        µs/tx |     WAL pages/tx | db bytes/event | µs/event read');
for (const r of best.values()) {
  console.log(
    `${String(r.size).padStart(10)} | ${r.layout.padEnd(13)} | ${String(r.usPerTx).padStart(12)} | ${String(r.walFramesPerTx).padStart(16)} | ${String(r.dbBytesPerEvent).padStart(14)} | ${String(r.usPerEventRead).padStart(13)}`,
  );
}
