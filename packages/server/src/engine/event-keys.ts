/**
 * Idempotency keys of the event rows (storage format 6, docs/architecture.md "Storage"): no index
 * on the events table holds them. The keys written since the last move are in a map in memory;
 * older ones are in `event_keys`, which a move fills in sorted runs, merged as they accumulate
 * (key-runs.ts, storage format 10). An entry of either may be
 * stale (its row undone by a savepoint, pruned, or of a destroyed stream whose sid a later one got),
 * so every lookup checks the row it names. `EventRows` (event-rows.ts) writes the rows and tells
 * this class; the SQL of the keys is here.
 */
import type { SqlStorage } from '../ports/storage.js';
import type { Timer } from '../ports/timer.js';
import { CopyClaims, isCopyKey, offsetIn, splitCopyKey, type CopyKey } from './copy-claims.js';
import { EVENT_BODY, EVENTS_WITH_RUNS, RUNS_JOIN } from './copy-rows.js';
import { EVENTS_BY_OFFSET, type MovedOffsets } from './event-index.js';
import { KeyRuns } from './key-runs.js';
import { MovedKeyFilters } from './moved-key-filter.js';

/**
 * `(sid, run, idem) → ofs` for the keyed rows at or below the watermark and the keys batches
 * claimed: each run sorted by key, the runs of a stream after one another (key-runs.ts).
 */
export const EVENT_KEYS_TABLE = `CREATE TABLE IF NOT EXISTS event_keys (
     sid INTEGER NOT NULL,
     run INTEGER NOT NULL,
     idem TEXT NOT NULL,
     ofs INTEGER NOT NULL,
     PRIMARY KEY (sid, run, idem)
   ) WITHOUT ROWID`;

/** The meta row holding the watermark: every keyed event row with a rowid at or below it is in event_keys. */
export const KEYS_MOVED = 'keys_moved';

/** A move runs once this many keys, or this many rows (moveAfterRows), were written since the last one. */
export const MOVE_AFTER_KEYS = 2048;
export const MOVE_AFTER_ROWS = 16384;
/**
 * The rows after which a move runs where the tail of offsets persists (a Durable Object: no TEMP
 * objects). Such an object starts again after every eviction, and its first keyed lookup, or its
 * first batch, reads every row past the watermark into the map of keys: moving as often as keys
 * do bounds that read to as many rows (docs/architecture.md "Idempotency keys are indexed in
 * batches"). The rows moved in all are the same; each move is one stream's, so its entries share
 * pages at any size.
 */
export const MOVE_AFTER_ROWS_PERSISTENT = MOVE_AFTER_KEYS;

/** The rows written after which a move runs on `storage`. */
export function moveAfterRows(storage: SqlStorage): number {
  return storage.tempObjects === true ? MOVE_AFTER_ROWS : MOVE_AFTER_ROWS_PERSISTENT;
}

/**
 * Brings the watermark down to the highest rowid left. SQLite gives a new row the highest rowid
 * plus one, so once the rows with the highest rowids are deleted a new row could take a rowid at
 * or below the watermark, and no move would take its key. Run after every delete of event rows, in
 * its transaction, and when the schema is opened (a copy of the database might number rows anew).
 */
export const LOWER_WATERMARK = `UPDATE meta SET value = CAST((SELECT coalesce(max(rowid), 0) FROM events) AS TEXT)
  WHERE key = '${KEYS_MOVED}' AND CAST(value AS INTEGER) > (SELECT coalesce(max(rowid), 0) FROM events)`;

/**
 * A move's copy of the keys past the watermark into the open run, sorted. Keys claimed there by rows of a batch are
 * there already and are left as they are; a stale entry takes the new offset. NOT INDEXED: SQLite would otherwise walk
 * the whole (sid, ofs) index for its order and test every row's rowid (a full scan per move, which
 * made moves cost about 10 ms each on a 400,000-row table); the rows past the watermark are a
 * range of rowids, read directly and sorted.
 */
export const MOVE_KEYS = `INSERT INTO event_keys (sid, run, idem, ofs)
  SELECT sid, ?, idem, ofs FROM events NOT INDEXED WHERE rowid > ? AND idem IS NOT NULL ORDER BY sid, idem
  ON CONFLICT (sid, run, idem) DO UPDATE SET ofs = excluded.ofs WHERE ofs <> excluded.ofs`;

/** A batch's claim of its keys in the open run; an entry there already (stale: checked before) makes the count short. */
const CLAIM_WRITTEN = `INSERT INTO event_keys (sid, run, idem, ofs)
  SELECT x.sid, ?, e.idem, x.ofs FROM ${EVENTS_BY_OFFSET} WHERE x.sid = ? AND x.ofs BETWEEN ? AND ? AND e.idem IS NOT NULL ORDER BY e.idem
  ON CONFLICT (sid, run, idem) DO NOTHING`;
/** One key's claim in the open run, taking over a stale entry there. */
const CLAIM_ONE = `INSERT INTO event_keys (sid, run, idem, ofs) VALUES (?, ?, ?, ?) ON CONFLICT (sid, run, idem) DO UPDATE SET ofs = excluded.ofs`;

/** The offset of a moved key whose row still carries it, in any of the stream's runs (a JSON list). */
const MOVED_KEY = `SELECT k.ofs FROM event_keys k JOIN event_index x ON x.sid = k.sid AND x.ofs = k.ofs JOIN events e ON e.rowid = x.rid AND e.idem = k.idem
  WHERE k.sid = ? AND k.run IN (SELECT value FROM json_each(?)) AND k.idem = ?`;
/** Whether the row at (sid, ofs) carries the key: the check of an entry of the map. */
const KEY_AT = `SELECT 1 FROM ${EVENTS_BY_OFFSET} WHERE x.sid = ? AND x.ofs = ? AND e.idem = ?`;
const TOP_ROWID = `SELECT coalesce(max(rowid), 0) FROM events`;

export class EventKeys {
  /**
   * The keys written since the last move, per stream `key` → offset (no string is made per
   * lookup: a copy drain spent much of its time collecting such strings), their count, and the watermark, as loaded at
   * storage epoch `epoch` (loaded again from the rows past the watermark when the epoch changed:
   * a failed group commit undid rows this map saw).
   */
  private readonly recent = new Map<number, Map<string, number>>();
  private recentCount = 0;
  /** How many of the map's keys are copies' (only rows storage format 6 wrote keep one in `idem`). */
  private recentCopyKeys = 0;
  private epoch = -1;
  private watermark = 0;
  private rowsSinceMove = 0;
  private moveQueued = false;
  private readonly moveAfterRows: number;

  /** The keys of copies, claimed as ranges (copy-claims.ts). */
  readonly copies: CopyClaims;
  /**
   * Which keys event_keys may hold (moved-key-filter.ts): told of every key written there below,
   * so a lookup probes event_keys only for a key it may hold.
   */
  private readonly moved: MovedKeyFilters;
  /** The runs of event_keys (key-runs.ts). */
  private readonly runs: KeyRuns;

  constructor(
    private readonly storage: SqlStorage,
    /** Where the rows are by offset (event-index.ts): a move moves their entries too. */
    private readonly offsets: MovedOffsets,
    /** With one, a move's merge work is done in later turns, a slice per turn (key-runs.ts); without, in the move. */
    timer?: Timer,
  ) {
    this.copies = new CopyClaims(storage);
    this.moved = new MovedKeyFilters(storage);
    this.runs = new KeyRuns(
      storage,
      (sid) => this.moved.unfiltered(sid),
      (sid) => this.moved.drop(sid),
      timer,
    );
    this.moveAfterRows = moveAfterRows(storage);
  }

  /** The offset of the event stored with `key` in stream `sid`, if there is one. */
  offsetOf(sid: number, key: string, copy: CopyKey | undefined = splitCopyKey(key)): number | undefined {
    const recent = this.recentOffset(sid, key);
    if (recent !== undefined) return recent;
    const moved = this.movedOffset(sid, key);
    if (moved !== undefined) return moved;
    return copy === undefined ? undefined : this.copies.offsetOf(sid, copy);
  }

  /** The offset of the event stored with `key` in stream `sid` among the moved and claimed keys (event_keys), if there is one. */
  private movedOffset(sid: number, key: string): number | undefined {
    if (!this.moved.mayHold(sid, key)) return undefined;
    return this.storage.execRows(MOVED_KEY, sid, this.runs.json(sid), key)[0]?.[0] as number | undefined;
  }

  /** The offset of the event stored with `key` in stream `sid` among the keys since the last move (the map), if there is one. */
  recentOffset(sid: number, key: string): number | undefined {
    this.load();
    const recent = this.recent.get(sid)?.get(key);
    return recent !== undefined && this.storage.execRows(KEY_AT, sid, recent, key).length > 0 ? recent : undefined;
  }

  /**
   * Claims the keys of the rows just written at offsets `first` to `last` of stream `sid`, `keys`
   * (every key among those rows), in one statement (sorted, so they share pages): answers whether
   * every one was claimed. When not (a key stored, given twice, or met by a stale entry in the open
   * run), some may be, and the caller must undo its transaction (a savepoint). The keys since the
   * last move are the caller's to check (recentOffset); those moved are checked here first.
   */
  claimWritten(sid: number, first: number, last: number, keys: readonly string[]): boolean {
    for (const key of keys) if (this.movedOffset(sid, key) !== undefined) return false;
    for (const key of keys) this.moved.added(sid, key);
    const claimed = this.storage.run(CLAIM_WRITTEN, this.runs.openRun(), sid, first, last);
    this.runs.claimedIn(sid, claimed);
    return claimed === keys.length;
  }

  /**
   * Claims `key` for a row of a batch about to be written at `offset`: straight into the open run
   * of event_keys (the keys of one batch share its pages; a move would read them back), not into
   * the map. Answers false, having written nothing, when the key is stored. A stale entry is
   * taken over (in the open run) or outdone (in an older one). For a batch's checked writes
   * (insertAll); unchecked ones use claimWritten.
   */
  claim(sid: number, key: string, offset: number): boolean {
    if (this.recentOffset(sid, key) !== undefined || this.movedOffset(sid, key) !== undefined) return false;
    this.moved.added(sid, key);
    this.storage.run(CLAIM_ONE, sid, this.runs.openRun(), key, offset);
    this.runs.claimedIn(sid, 1);
    return true;
  }

  /**
   * A row was written: its key, unless claimed, goes into the map (offsetOf checked it just
   * before); queues a move when one is due.
   */
  written(sid: number, key: string | undefined, offset: number): void {
    if (key !== undefined) this.remember(sid, key, offset);
    this.writtenClaimed(1);
  }

  /**
   * The stored bodies of many keys of stream `sid`: the keys since the last move by their offsets,
   * the rest in one statement over event_keys. Keys not stored are absent from the answer.
   */
  bodiesOf(sid: number, keys: readonly string[]): Map<string, string> {
    const found = new Map<string, string>();
    if (keys.length === 0) return found;
    this.load();
    // The keys asked that the map holds, by the offset each entry names: a row counts only when
    // it carries the key its entry is for.
    const recent = new Map<number, string>();
    const mine = this.recent.get(sid);
    if (mine !== undefined) {
      for (const key of keys) {
        const offset = mine.get(key);
        if (offset !== undefined) recent.set(offset, key);
      }
    }
    // One parameter per list (the Durable Object SQL API binds at most 100 per statement).
    if (recent.size > 0) {
      const rows = this.storage.execRows(
        `SELECT x.ofs, e.idem, ${EVENT_BODY} FROM ${EVENTS_WITH_RUNS} WHERE x.sid = ? AND x.ofs IN (SELECT value FROM json_each(?))`,
        sid,
        JSON.stringify([...recent.keys()]),
      );
      for (const [offset, key, body] of rows) if (recent.get(offset as number) === key) found.set(key as string, body as string);
    }
    const rest = keys.filter((key) => !found.has(key) && this.moved.mayHold(sid, key));
    if (rest.length > 0) {
      const rows = this.storage.execRows(
        `SELECT k.idem, ${EVENT_BODY} FROM event_keys k JOIN event_index x ON x.sid = k.sid AND x.ofs = k.ofs JOIN events e ON e.rowid = x.rid AND e.idem = k.idem
         ${RUNS_JOIN} WHERE k.sid = ? AND k.run IN (SELECT value FROM json_each(?)) AND k.idem IN (SELECT value FROM json_each(?))`,
        sid,
        this.runs.json(sid),
        JSON.stringify(rest),
      );
      for (const [key, body] of rows) found.set(key as string, body as string);
    }
    this.copyBodies(sid, found.size === 0 ? keys : keys.filter((key) => !found.has(key)), found);
    return found;
  }

  /**
   * The stored bodies of the copies among `keys` that their claims hold (copy-claims.ts), added to
   * `found`: the claims of each run around its keys' source offsets, then the rows they name. A
   * body counts only when it carries the key.
   */
  private copyBodies(sid: number, keys: readonly string[], found: Map<string, string>): void {
    const runs = new Map<string, Array<{ key: string; offset: number }>>();
    for (const key of keys) {
      const copy = splitCopyKey(key);
      if (copy === undefined) continue;
      let run = runs.get(copy.head);
      if (run === undefined) runs.set(copy.head, (run = []));
      run.push({ key, offset: copy.offset });
    }
    const byOffset = new Map<number, string>();
    for (const [head, run] of runs) {
      let [first, last] = [Infinity, 0];
      for (const { offset } of run) [first, last] = [Math.min(first, offset), Math.max(last, offset)];
      const claims = this.copies.near(sid, head, first, last);
      for (const { key, offset } of run) {
        const at = offsetIn(claims, offset);
        if (at !== undefined) byOffset.set(at, key);
      }
    }
    if (byOffset.size === 0) return;
    const rows = this.storage.execRows(`SELECT x.ofs, ${EVENT_BODY} FROM ${EVENTS_WITH_RUNS} WHERE x.sid = ? AND x.ofs IN (SELECT value FROM json_each(?))`, sid, JSON.stringify([...byOffset.keys()]));
    for (const [offset, body] of rows) {
      const key = byOffset.get(offset as number)!;
      if ((body as string).includes(JSON.stringify(key))) found.set(key, body as string);
    }
  }

  /**
   * Moves the keys of the rows past the watermark into event_keys, a sorted run per stream (a
   * batch of keys written close in time shares pages; the run stays open across moves until a
   * stream has OPEN_RUN_KEYS keys in it), does some merge work (key-runs.ts), and raises the
   * watermark to the highest rowid: one transaction, so a crash leaves all as it was or all done.
   */
  move(): void {
    let top = 0;
    try {
      this.storage.transaction(() => {
        this.load();
        top = this.storage.execRows(TOP_ROWID)[0]![0] as number;
        // Every keyed row past the watermark has its key in the map (loaded at this epoch, then
        // kept by written) or claimed in event_keys, so with none in the map there is nothing to
        // read: only the watermark moves.
        if (this.recentCount > 0) {
          this.storage.run(MOVE_KEYS, this.runs.openRun(), this.watermark);
          for (const [sid, keys] of this.recent) for (const key of keys.keys()) this.moved.added(sid, key);
        }
        this.runs.moved([...this.recent].map(([sid, keys]): [number, number] => [sid, keys.size]));
        // The offsets of the same rows go from the tail into event_offsets (event-index.ts).
        this.offsets.move();
        this.storage.run(`INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, KEYS_MOVED, String(top));
      });
    } catch (error) {
      // Undone: the runs' state in memory (a generation opened, a merge advanced) is read again.
      this.runs.undone();
      throw error;
    }
    // Should the group commit fail after all, the epoch changes and load starts over from what is stored.
    this.watermark = top;
    this.recent.clear();
    this.recentCount = 0;
    this.recentCopyKeys = 0;
    this.rowsSinceMove = 0;
  }

  /** Deletes the moved keys and the copy claims of stream `sid`, at most `maxRows` of them when given; answers how many. */
  deleteStream(sid: number, maxRows?: number): number {
    this.moved.forget(sid);
    this.runs.forget(sid);
    if (maxRows === undefined) return this.storage.run(`DELETE FROM event_keys WHERE sid = ?`, sid) + this.copies.deleteStream(sid);
    const removed = this.storage.run(
      `DELETE FROM event_keys WHERE sid = ? AND (run, idem) IN (SELECT run, idem FROM event_keys WHERE sid = ? LIMIT ?)`,
      sid,
      sid,
      maxRows,
    );
    return removed < maxRows ? removed + this.copies.deleteStream(sid, maxRows - removed) : removed;
  }

  /** After event rows were deleted, in the same transaction (see LOWER_WATERMARK). */
  rowsDeleted(): void {
    this.load();
    this.storage.run(LOWER_WATERMARK);
    const top = this.storage.execRows(TOP_ROWID)[0]![0] as number;
    if (top < this.watermark) this.watermark = top;
  }

  /** `count` rows were written whose keys, if any, are claimed: queues a move when one is due. */
  writtenClaimed(count: number): void {
    this.rowsSinceMove += count;
    if (this.recentCount >= MOVE_AFTER_KEYS || this.rowsSinceMove >= this.moveAfterRows) this.queueMove();
  }

  private remember(sid: number, key: string, offset: number): void {
    let mine = this.recent.get(sid);
    if (mine === undefined) this.recent.set(sid, (mine = new Map()));
    if (!mine.has(key)) {
      this.recentCount++;
      if (isCopyKey(key)) this.recentCopyKeys++;
    }
    mine.set(key, offset);
  }

  /** Whether the map may hold a copy's key (loaded from rows storage format 6 wrote): only then is a copy's key looked up in it. */
  recentHoldsCopyKeys(): boolean {
    this.load();
    return this.recentCopyKeys > 0;
  }

  /** Loads the watermark and the keys past it, unless they are loaded at the storage's epoch. */
  private load(): void {
    const epoch = this.storage.epoch;
    if (this.epoch === epoch) return;
    const stored = this.storage.execRows(`SELECT value FROM meta WHERE key = ?`, KEYS_MOVED)[0];
    this.watermark = stored === undefined ? 0 : Number(stored[0]);
    this.recent.clear();
    this.recentCount = 0;
    this.recentCopyKeys = 0;
    for (const [sid, key, offset] of this.storage.execRows(`SELECT sid, idem, ofs FROM events WHERE rowid > ? AND idem IS NOT NULL`, this.watermark)) {
      this.remember(sid as number, key as string, offset as number);
    }
    this.rowsSinceMove = Math.max(0, (this.storage.execRows(TOP_ROWID)[0]![0] as number) - this.watermark);
    this.epoch = epoch;
  }

  /**
   * Runs a move in a transaction of its own, after the current one: an append's transaction may
   * allow one write only (TransactionOptions.singleWrite). On the Node host it joins the same
   * group commit.
   */
  private queueMove(): void {
    if (this.moveQueued) return;
    this.moveQueued = true;
    queueMicrotask(() => {
      this.moveQueued = false;
      try {
        this.move();
      } catch {
        // The storage failed or was closed: the keys stay in the rows past the watermark, where
        // load finds them, and the next row written queues the move again.
      }
    });
  }
}
