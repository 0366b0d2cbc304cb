/**
 * SQLite-only comparison of layouts of the `events` table (the storage-format-3 decision of
 * packages/server/src/engine/schema.ts): one append = one transaction inserting one event row,
 * with the Node host's pragmas (WAL, synchronous=NORMAL, exclusive locking, autocheckpoint 4000).
 *
 *   rowid+index  format 2: a rowid table plus a unique (sid, ofs) index
 *   without-rowid  format 3: PRIMARY KEY (sid, ofs) WITHOUT ROWID
 *
 * For each event body size it reports µs per insert transaction, WAL frames (pages) written per
 * insert, database bytes per event after a checkpoint, and µs per event to read 500-event ranges.
 * Streams are interleaved (sid = i % streams) as under concurrent load.
 *
 *   node bench/append/events-table.mjs [--events 4000] [--streams 10] [--sizes 150,600,1200,2500,6000]
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
  },
});
const EVENTS = Number(values.events);
const STREAMS = Number(values.streams);
const SIZES = values.sizes.split(',').map(Number);

const LAYOUTS = {
  'rowid+index': [
    `CREATE TABLE events (sid INTEGER NOT NULL, ofs INTEGER NOT NULL, type TEXT NOT NULL, ephemeral INTEGER NOT NULL,
       idem TEXT, created_ms INTEGER NOT NULL, body TEXT NOT NULL)`,
    `CREATE UNIQUE INDEX events_by_offset ON events (sid, ofs)`,
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
  return size <= 32 ? 0 : (size - 32) / (4096 + 24);
}

function measure(layout, size) {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-events-table-'));
  try {
    const file = join(dir, 'e.db');
    const db = new Database(file);
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('wal_autocheckpoint = 0');
    for (const ddl of [...LAYOUTS[layout], ...COMMON]) db.exec(ddl);
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
    const begin = db.prepare('BEGIN');
    const commit = db.prepare('COMMIT');
    const texts = Array.from({ length: 64 }, (_, i) => body(size, i));
    const heads = new Array(STREAMS).fill(0);
    walFrames(db, file);
    let frames = 0;
    let insertMs = 0;
    for (let i = 0; i < EVENTS; i++) {
      const sid = i % STREAMS;
      const t0 = performance.now();
      begin.run();
      insert.run(sid, ++heads[sid], Date.now(), texts[i & 63]);
      commit.run();
      insertMs += performance.now() - t0;
      if (i % 1000 === 999) frames += walFrames(db, file);
    }
    frames += walFrames(db, file);
    const bytes = statSync(file).size;
    const read = db.prepare(
      layout === 'split'
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
      usPerInsert: +((insertMs * 1000) / EVENTS).toFixed(1),
      walFramesPerInsert: +(frames / EVENTS).toFixed(2),
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
    const order = round === 0 ? Object.keys(LAYOUTS) : Object.keys(LAYOUTS).reverse();
    for (const layout of order) results.push(measure(layout, size));
  }
}
const best = new Map();
for (const r of results) {
  const key = `${r.size} ${r.layout}`;
  const b = best.get(key);
  if (!b) best.set(key, { ...r });
  else {
    b.usPerInsert = Math.min(b.usPerInsert, r.usPerInsert);
    b.usPerEventRead = Math.min(b.usPerEventRead, r.usPerEventRead);
  }
}
console.log('body bytes | layout        | µs/insert tx | WAL pages/insert | db bytes/event | µs/event read');
for (const r of best.values()) {
  console.log(
    `${String(r.size).padStart(10)} | ${r.layout.padEnd(13)} | ${String(r.usPerInsert).padStart(12)} | ${String(r.walFramesPerInsert).padStart(16)} | ${String(r.dbBytesPerEvent).padStart(14)} | ${String(r.usPerEventRead).padStart(13)}`,
  );
}
