/**
 * Upgrades of the storage format (protocol §16.4): an ordered list of steps, each taking a
 * database from format N to N+1. `openSchema` runs the steps a database needs, each in one
 * transaction that also records the new format, so a crash mid-upgrade leaves the database at the
 * last format it fully reached and the next start goes on from there.
 *
 * A step must be correct on every adapter (the same SQL runs on all of them) and must keep
 * everything a server of the older format acknowledged: events, core state, delivery progress.
 */
import type { SqlStorage } from '../ports/storage.js';
import { DELIVERY_ATTEMPTS_DDL } from './delivery-attempts.js';
import { SUBSCRIPTION_INDEX_TABLE, backfillSubscriptionIndex } from './subscription-index.js';
import { EVENT_KEYS_TABLE, KEYS_MOVED } from './event-keys.js';
import { KEY_MERGES_TABLE, BASE_RUN } from './key-runs.js';
import { COPY_CLAIMS_TABLE } from './copy-claims.js';
import { COPY_RUNS_TABLE } from './copy-rows.js';
import { EVENT_OFFSETS_TABLE } from './event-index.js';

export interface Migration {
  /** The format this step reads; it writes `from + 1`. */
  from: number;
  /** What changes, for the log line and the docs. */
  summary: string;
  apply(storage: SqlStorage): void;
}

/**
 * The oldest format a server of this build can still upgrade; anything older is refused. Format 1
 * (the streams row without its event_count and max_offset columns) lived for a few hours of
 * development before any release, so no step reads it.
 */
export const OLDEST_UPGRADABLE_FORMAT = 2;

/** event_keys as formats 6 to 9 had it (format 10 adds the run to its key: EVENT_KEYS_TABLE). */
const EVENT_KEYS_TABLE_FORMAT_6 = `CREATE TABLE IF NOT EXISTS event_keys (
     sid INTEGER NOT NULL,
     idem TEXT NOT NULL,
     ofs INTEGER NOT NULL,
     PRIMARY KEY (sid, idem)
   ) WITHOUT ROWID`;

/** Whether the database has a table of this name (a step reads or changes only what is there). */
const hasTable = (storage: SqlStorage, name: string): boolean =>
  storage.exec<{ n: number }>(`SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?`, name)[0]!.n > 0;

export const MIGRATIONS: readonly Migration[] = [
  {
    from: 2,
    // The tables are the same in both formats. In format 2 the streams row's head, event_count and
    // max_offset are always the current values; format 3 reads them as a checkpoint and adds the
    // event rows after it. A current value is a checkpoint with nothing after it, so the rows stay
    // as they are and only the recorded format changes (the table-wide one and each row's).
    summary: "the streams row's head and counters become a checkpoint (no data is rewritten)",
    apply(storage) {
      storage.run(`UPDATE streams SET format = 3 WHERE format = 2`);
    },
  },
  {
    from: 3,
    // New tables only (their indexes come with the schema, schema.ts): the index is filled from
    // each stream's stored subscription state, the attempt history starts empty.
    summary: 'a subscription index (filled from stored state) and a delivery attempt history',
    apply(storage) {
      for (const ddl of [SUBSCRIPTION_INDEX_TABLE, ...DELIVERY_ATTEMPTS_DDL]) storage.run(ddl);
      backfillSubscriptionIndex(storage);
      storage.run(`UPDATE streams SET format = 4 WHERE format = 3`);
    },
  },
  {
    from: 4,
    // The idempotency index is dropped and created again with its columns in the other order
    // (schema.ts says why), under the same name: the schema's CREATE INDEX IF NOT EXISTS would keep
    // the old one. It holds the same pairs, so the rebuild cannot find a duplicate; it reads every
    // event row once. A database without an events table gets the new index from the schema.
    summary: 'the idempotency index rebuilt as (key, stream) (no event is rewritten)',
    apply(storage) {
      if (hasTable(storage, 'events')) {
        storage.run(`DROP INDEX IF EXISTS events_by_idem`);
        storage.run(`CREATE UNIQUE INDEX events_by_idem ON events (idem, sid) WHERE idem IS NOT NULL`);
      }
      storage.run(`UPDATE streams SET format = 5 WHERE format = 4`);
    },
  },
  {
    from: 5,
    // Every stored key moves into event_keys at once, sorted, and the watermark stands at the
    // highest rowid, so the engine starts with no recent key to load; then the index goes. It reads
    // every keyed row once and rewrites no event. A database without an events table gets the
    // table and its watermark from the schema.
    summary: 'idempotency keys moved from an index on the events into a table of their own (no event is rewritten)',
    apply(storage) {
      if (hasTable(storage, 'events')) {
        storage.run(EVENT_KEYS_TABLE_FORMAT_6);
        storage.run(`INSERT INTO event_keys (sid, idem, ofs) SELECT sid, idem, ofs FROM events WHERE idem IS NOT NULL ORDER BY sid, idem`);
        storage.run(`INSERT OR REPLACE INTO meta (key, value) VALUES (?, CAST((SELECT coalesce(max(rowid), 0) FROM events) AS TEXT))`, KEYS_MOVED);
        storage.run(`DROP INDEX IF EXISTS events_by_idem`);
      }
      storage.run(`UPDATE streams SET format = 6 WHERE format = 5`);
    },
  },
  {
    from: 6,
    // A new table only, which starts empty: the keys of the copies written so far stay in
    // event_keys, where lookups still find them (copy-claims.ts); copies written from now on are
    // claimed as ranges.
    summary: "copies' idempotency keys claimed as ranges in a table of their own (no event is rewritten)",
    apply(storage) {
      storage.run(COPY_CLAIMS_TABLE);
      storage.run(`UPDATE streams SET format = 7 WHERE format = 6`);
    },
  },
  {
    from: 7,
    // Two columns added to the events table (NULL in every row there is: an instant change, no row
    // is rewritten) and a new table: the copies written so far keep their whole text in their body;
    // copies written from now on may be stored as parts. A database without an events table gets
    // all of it from the schema.
    summary: 'copies stored as parts: the text every copy of a run shares is kept once (no event is rewritten)',
    apply(storage) {
      // An events table without the columns (its CREATE statement, which ADD COLUMN extends, names
      // neither): a table that has them already is left as it is, as the other steps' CREATE ... IF
      // NOT EXISTS leave theirs.
      const lacking = storage.exec<{ n: number }>(
        `SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'events' AND sql NOT LIKE '%copy_run%'`,
      )[0]!.n;
      if (lacking > 0) {
        storage.run(`ALTER TABLE events ADD COLUMN copy_run INTEGER`);
        storage.run(`ALTER TABLE events ADD COLUMN src_ofs INTEGER`);
      }
      storage.run(COPY_RUNS_TABLE);
      storage.run(`UPDATE streams SET format = 8 WHERE format = 7`);
    },
  },
  {
    from: 8,
    // The (sid, ofs) index gives way to event_offsets (event-index.ts): the rows at or below the
    // keys' watermark, and copies stored as parts wherever they are, are entered there, read in the
    // old index's order so that each stream's entries go in together; the other rows past it are
    // the tail, which opening the schema enters. No event row is rewritten.
    summary: 'offsets indexed in batches: the events table loses its (sid, ofs) index (no event is rewritten)',
    apply(storage) {
      storage.run(EVENT_OFFSETS_TABLE);
      storage.run(`UPDATE streams SET format = 9 WHERE format = 8`);
      // A database without an events table gets it, and the rest, from the schema.
      if (!hasTable(storage, 'events')) return;
      const watermark = storage.execRows(`SELECT value FROM meta WHERE key = ?`, KEYS_MOVED)[0];
      storage.run(
        `INSERT OR IGNORE INTO event_offsets (sid, ofs, rid) SELECT sid, ofs, rowid FROM events WHERE rowid <= ? OR copy_run IS NOT NULL ORDER BY sid, ofs`,
        watermark === undefined ? 0 : Number(watermark[0]),
      );
      storage.run(`DROP INDEX IF EXISTS events_by_offset`);
    },
  },
  {
    from: 9,
    // event_keys is made again with the run in its key (key-runs.ts): every entry goes into the
    // base run, read in the old key's order, which is the new one's within that run; so do the
    // keys of the rows past the watermark (they stay in those rows too, for the next move), so
    // that every key of a copy written by format 6 is in the base run, where copy-claims.ts
    // looks for such keys. It reads every entry and keyed row past the watermark once and
    // rewrites no event. A database without event_keys gets the table from the schema.
    summary: 'idempotency keys indexed in sorted runs, merged as they accumulate (no event is rewritten)',
    apply(storage) {
      storage.run(`UPDATE streams SET format = 10 WHERE format = 9`);
      storage.run(KEY_MERGES_TABLE);
      if (!hasTable(storage, 'event_keys')) return;
      storage.run(`ALTER TABLE event_keys RENAME TO event_keys_format_9`);
      storage.run(EVENT_KEYS_TABLE);
      storage.run(`INSERT INTO event_keys (sid, run, idem, ofs) SELECT sid, ${BASE_RUN}, idem, ofs FROM event_keys_format_9 ORDER BY sid, idem`);
      storage.run(`DROP TABLE event_keys_format_9`);
      if (!hasTable(storage, 'events')) return;
      const watermark = storage.execRows(`SELECT value FROM meta WHERE key = ?`, KEYS_MOVED)[0];
      storage.run(
        `INSERT INTO event_keys (sid, run, idem, ofs) SELECT sid, ${BASE_RUN}, idem, ofs FROM events WHERE rowid > ? AND idem IS NOT NULL ORDER BY sid, idem
         ON CONFLICT (sid, run, idem) DO UPDATE SET ofs = excluded.ofs`,
        watermark === undefined ? 0 : Number(watermark[0]),
      );
    },
  },
];

/** Runs the steps from `from` up to `to`, each in its own transaction with the format it reached. */
export function runMigrations(storage: SqlStorage, from: number, to: number, steps: readonly Migration[] = MIGRATIONS): void {
  for (let format = from; format < to; format++) {
    const step = steps.find((s) => s.from === format);
    if (!step) throw new Error(`storage: no upgrade step from format ${format}`);
    storage.transaction(() => {
      step.apply(storage);
      storage.run(`UPDATE meta SET value = ? WHERE key = 'format'`, String(format + 1));
    });
  }
}
