/**
 * The SQL schema of the engine, shared by every adapter (one database holds many streams in the
 * Node host; a Durable Object holds one). Format versioning follows protocol §16.4: a database of
 * an older format is upgraded in place by the steps of migrations.ts, one of a newer format is
 * refused, naming both.
 */
import { RivuletError } from '@rivulet/contract';
import type { SqlStorage } from '../ports/storage.js';
import { MIGRATIONS, OLDEST_UPGRADABLE_FORMAT, runMigrations } from './migrations.js';
import { DELIVERY_ATTEMPTS_DDL } from './delivery-attempts.js';
import { SUBSCRIPTION_INDEX_DDL } from './subscription-index.js';
import { EVENT_KEYS_TABLE, KEYS_MOVED, LOWER_WATERMARK } from './event-keys.js';
import { COPY_CLAIMS_TABLE } from './copy-claims.js';
import { KEY_GEN, KEY_MERGES_TABLE } from './key-runs.js';
import { COPY_RUNS_TABLE } from './copy-rows.js';
import { EVENT_OFFSETS_TABLE, openEventIndex } from './event-index.js';

/**
 * 3: the streams row's head and counters became a checkpoint (see below). A server of format 2
 * would take that stale head for the current one and give offsets twice; hence a new format.
 * 4: the subscription index and the delivery attempt history (protocol §21, §22). A server of
 * format 3 would not keep the index up to date, and a later one would then trust a stale index.
 * 5: the idempotency index's columns in the other order, (idem, sid) (see the events table below).
 * 6: no idempotency index on the events table; keys move into event_keys in batches (event-keys.ts).
 * A server of format 5 would neither see the moved keys nor check the recent ones.
 * 7: copies' keys claimed as ranges in copy_claims, not in event_keys (copy-claims.ts). A server of
 * format 6 would not see those claims and would append a redelivered copy again.
 * 8: copies stored as parts (copy-rows.ts): the events table's copy_run and src_ofs columns and the
 * copy_runs table. A server of format 7 would read such a row's parts as its text.
 * 9: no (sid, ofs) index on the events table; offsets are indexed in batches in event_offsets
 * (event-index.ts). A server of format 8 would not find the rows written since.
 * 10: event_keys keyed by (sid, run, idem): a move writes each stream's keys as a run, runs are
 * merged as they accumulate (key-runs.ts). A server of format 9 would not read that table.
 */
export const FORMAT_VERSION = 10;

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
  // A rowid table plus a unique (sid, ofs) index, not a WITHOUT ROWID table keyed by (sid, ofs),
  // although that writes one b-tree per append instead of two. Measured with
  // bench/append/events-table.mjs (150-byte bodies, best of two): with one stream and one insert
  // per transaction WITHOUT ROWID wrote 1.7 WAL pages per insert against 2.2 and saved 2-3 µs; with
  // 25 inserts per transaction over 100 streams at random (a group commit under concurrent load) it
  // wrote 40 pages per transaction against 21 and took 200-250 µs against 130-140, because whole
  // rows of many streams dirty a leaf page each, where the rowid table appends to one page and the
  // small index entries share few. Rows above ~1000 bytes would also each spill to an overflow
  // page of their own (1200-byte bodies: 3.4x the file space). Concurrent load matters more.
  `CREATE TABLE IF NOT EXISTS events (
     sid INTEGER NOT NULL,
     ofs INTEGER NOT NULL,
     type TEXT NOT NULL,
     ephemeral INTEGER NOT NULL,
     idem TEXT,
     created_ms INTEGER NOT NULL,
     body TEXT NOT NULL,
     copy_run INTEGER,
     src_ofs INTEGER
   )`,
  // No (sid, ofs) index either (format 9; formats up to 8 had a unique one): it cost an append one
  // WAL frame, the leaf its stream's newest entries lie on. Rows are found through event_index:
  // the entries a move indexed in event_offsets, and the tail since, which the Node host keeps
  // off the WAL (event-index.ts; docs/architecture.md "Offsets are indexed in batches").
  EVENT_OFFSETS_TABLE,
  // No index on the idempotency key (format 6; formats 4 and 5 had a unique one): it cost an append
  // about one WAL frame, the leaf its caller's keys lie on, since no two appends in flight share
  // one. Keys since the last move are found in memory, older ones in event_keys, which a move fills
  // in sorted runs (event-keys.ts, key-runs.ts; docs/architecture.md "Idempotency keys are indexed in batches").
  EVENT_KEYS_TABLE,
  KEY_MERGES_TABLE,
  COPY_CLAIMS_TABLE,
  COPY_RUNS_TABLE,
  `CREATE INDEX IF NOT EXISTS events_ephemeral ON events (sid, created_ms) WHERE ephemeral = 1`,
  // Delivery progress per subscription: runtime state, repaired from core state (protocol §11).
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

export interface OpenSchemaOptions {
  /**
   * Called once before an older database is upgraded, outside any transaction (the Node host
   * copies the database aside there and logs it). Throwing stops the upgrade; nothing is changed.
   */
  beforeUpgrade?(from: number, to: number): void;
}

/** The format a database records, or null when it has none yet (an empty database). */
export function storedFormat(storage: SqlStorage): number | null {
  const hasMeta = storage.exec<{ n: number }>(`SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'meta'`)[0]!.n;
  if (!hasMeta) return null;
  const row = storage.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'format'`)[0];
  return row ? Number(row.value) : null;
}

/** Refuses a format this build can neither read nor upgrade (protocol §16.4). */
function checkReadable(found: number): void {
  if (found > FORMAT_VERSION) {
    throw new RivuletError(
      'UNAVAILABLE',
      `this data was written by storage format ${found}, newer than format ${FORMAT_VERSION} that this server reads: ` +
        `run a Rivulet release that reads format ${found} (the one that wrote it, or later) on it. Nothing was changed.`,
    );
  }
  if (!Number.isInteger(found) || found < OLDEST_UPGRADABLE_FORMAT) {
    throw new RivuletError(
      'UNAVAILABLE',
      `this data was written by storage format ${found}; this server reads format ${FORMAT_VERSION} and upgrades only formats ${OLDEST_UPGRADABLE_FORMAT} and later. ` +
        'Nothing was changed: export what you need, erase the data folder (or point --data at a new one), and recreate the streams through the API.',
    );
  }
}

/**
 * Creates the schema in an empty database, upgrades one of an older format (each step in its own
 * transaction, migrations.ts), or checks the format of a current one.
 */
export function openSchema(storage: SqlStorage, options: OpenSchemaOptions = {}): void {
  const found = storedFormat(storage);
  if (found !== null && found !== FORMAT_VERSION) {
    checkReadable(found);
    options.beforeUpgrade?.(found, FORMAT_VERSION);
    runMigrations(storage, found, FORMAT_VERSION, MIGRATIONS);
  }
  storage.transaction(() => {
    for (const ddl of [...DDL, ...SUBSCRIPTION_INDEX_DDL, ...DELIVERY_ATTEMPTS_DDL]) storage.run(ddl);
    storage.run(`INSERT OR IGNORE INTO meta (key, value) VALUES ('format', ?)`, String(FORMAT_VERSION));
    // An empty database has moved nothing; the watermark never stands above the highest rowid.
    storage.run(`INSERT OR IGNORE INTO meta (key, value) VALUES (?, '0')`, KEYS_MOVED);
    storage.run(`INSERT OR IGNORE INTO meta (key, value) VALUES (?, '1')`, KEY_GEN);
    storage.run(LOWER_WATERMARK);
    openEventIndex(storage, Number(storage.execRows(`SELECT value FROM meta WHERE key = ?`, KEYS_MOVED)[0]![0]));
  });
}
