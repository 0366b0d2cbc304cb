/**
 * The SQL schema of the engine, shared by every adapter (one database holds many streams in the
 * Node host; a Durable Object holds one). Format versioning follows SEMANTICS §1.8: a database
 * written by another format is refused with instructions, never migrated in place.
 */
import { RivuletError } from '@rivulet/contract';
import type { SqlStorage } from '../ports/storage.js';

export const FORMAT_VERSION = 3;

/**
 * Event bodies whose row would pass this many bytes are kept in `event_bodies` (see `events`).
 * The events b-tree is an index b-tree (WITHOUT ROWID): with 4 KiB pages a row above ≈1000 bytes
 * would keep only ≈490 bytes in its leaf and spill the rest to an overflow page of its own.
 */
export const INLINE_ROW_BYTES = 960;

const DDL = [
  `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  // head, event_count and max_offset are a checkpoint, not the current values: an append that
  // changes only the counters writes no streams row, and loading a stream adds the event rows
  // after the checkpoint's head (StreamStore.find). Whatever deletes events of a live stream must
  // first bring the checkpoint up to the current head (offsets are never reused).
  `CREATE TABLE IF NOT EXISTS streams (
     sid INTEGER PRIMARY KEY,
     project TEXT NOT NULL,
     path TEXT NOT NULL,
     stream_id TEXT NOT NULL,
     created_at TEXT NOT NULL,
     head INTEGER NOT NULL,
     event_count INTEGER NOT NULL,
     max_offset INTEGER NOT NULL,
     state TEXT NOT NULL,
     format INTEGER NOT NULL,
     UNIQUE (project, path)
   )`,
  // One b-tree keyed by (sid, ofs): an append writes one page of it, where a rowid table plus a
  // (sid, ofs) index wrote two (bench/append/events-table.mjs, one insert per transaction, 150-byte
  // bodies, one stream: 1.7 WAL pages per insert against 2.15). The price of WITHOUT ROWID is the
  // overflow rule of index b-trees (INLINE_ROW_BYTES): 1200-byte bodies inline took 3.4x the file
  // space of the rowid table (4.7 KB per event) and 1.7-2.1x its insert time. So a body that would
  // not fit goes to `event_bodies` (body NULL, body_id set): a large event writes two b-trees, as
  // every event did in format 2, and wastes no page. Readers take coalesce(body, event_bodies row).
  `CREATE TABLE IF NOT EXISTS events (
     sid INTEGER NOT NULL,
     ofs INTEGER NOT NULL,
     type TEXT NOT NULL,
     ephemeral INTEGER NOT NULL,
     idem TEXT,
     created_ms INTEGER NOT NULL,
     body TEXT,
     body_id INTEGER,
     PRIMARY KEY (sid, ofs)
   ) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS event_bodies (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`,
  `CREATE UNIQUE INDEX IF NOT EXISTS events_by_idem ON events (sid, idem) WHERE idem IS NOT NULL`,
  `CREATE INDEX IF NOT EXISTS events_ephemeral ON events (sid, created_ms) WHERE ephemeral = 1`,
  // Delivery progress per subscription: runtime state, repaired from core state (SEMANTICS §5.1).
  `CREATE TABLE IF NOT EXISTS subscription_runtime (
     sid INTEGER NOT NULL,
     key TEXT NOT NULL,
     run_configured_at INTEGER NOT NULL,
     run_cursor_set_at INTEGER NOT NULL,
     cursor INTEGER NOT NULL,
     attempt INTEGER NOT NULL,
     next_attempt_at INTEGER,
     inflight_deadline_at INTEGER,
     last_error TEXT,
     isolate INTEGER NOT NULL,
     confirmations INTEGER NOT NULL,
     confirm_offset INTEGER,
     skips_without_success INTEGER NOT NULL,
     halted INTEGER NOT NULL,
     bytes_sent INTEGER NOT NULL,
     stats TEXT,
     PRIMARY KEY (sid, key)
   )`,
];

/** Creates the schema in an empty database, or checks the format of an existing one. */
export function openSchema(storage: SqlStorage): void {
  storage.transaction(() => {
    const hasMeta = storage.exec<{ n: number }>(
      `SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'meta'`,
    )[0]!.n;
    if (hasMeta) {
      const row = storage.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'format'`)[0];
      if (row && Number(row.value) !== FORMAT_VERSION) {
        throw new RivuletError(
          'UNAVAILABLE',
          `this data was written by storage format ${row.value}; this server reads format ${FORMAT_VERSION}. ` +
            'Nothing is migrated in place: export what you need, erase the data folder (or point --data at a new one), and recreate the streams through the API.',
        );
      }
    }
    for (const ddl of DDL) storage.run(ddl);
    storage.run(`INSERT OR IGNORE INTO meta (key, value) VALUES ('format', ?)`, String(FORMAT_VERSION));
  });
}
