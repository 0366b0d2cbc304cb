/**
 * The runs of `event_keys` (storage format 10, docs/architecture.md "Idempotency keys are indexed
 * in batches"): a move writes each stream's keys as a run of their own, sorted, so that they fill
 * pages at the end of the stream's entries instead of landing one per page among all the keys it
 * ever had; runs of a level are merged eight at a time into one of the next level, so a stream has
 * a few runs per level and a lookup probes each of them with one seek.
 *
 * A run is named by a number: its generation times 16 plus its level. The generation counts closed
 * runs (meta row `key_gen`, never lowered); the run moves write, the open run, is the current
 * generation at level 0, and a batch's claims go there too. A move closes it once a stream has
 * OPEN_RUN_KEYS keys in it. A merge names its run after the newest
 * of its inputs, one level up, so a run with a higher number holds entries written later. Keys a
 * format-9 database had moved are the base run (generation 0, level 15), the oldest.
 *
 * A stream with too many keys for a filter of moved keys (moved-key-filter.ts) would probe every
 * run for every key, so its runs are not left to pile up by level: they are folded into the base
 * run, which is then what event_keys was up to format 9 for that stream, one seek per lookup. Its
 * filter, kept while the fold goes on, is dropped when it is done.
 *
 * Entries of one key in several runs: the newest is right, or none is (event-keys.ts checks the
 * row any entry names), so a merge keeps the newest. A merge of large runs goes in steps of at most
 * MERGE_ROWS_PER_MOVE entries, one step per move: each step moves the lowest keys of every input
 * up to a bound into the output and deletes them from the inputs, in one transaction, so at any
 * time each entry is in exactly one place; such a merge is recorded in `key_merges`, from where a
 * restart resumes it.
 */
import type { SqlStorage } from '../ports/storage.js';
import type { CancelTimer, Timer } from '../ports/timer.js';

/**
 * The merges under way that took more than one step: the stream, its inputs (a JSON list) and its
 * output. A merge done in one step (one transaction) is never written here.
 */
export const KEY_MERGES_TABLE = `CREATE TABLE IF NOT EXISTS key_merges (
     sid INTEGER PRIMARY KEY,
     inputs TEXT NOT NULL,
     output INTEGER NOT NULL
   )`;

/** The meta row holding the current generation. */
export const KEY_GEN = 'key_gen';
/**
 * The base run (generation 0, level 15): the keys a format-9 database had moved, and those of the
 * streams without a filter of moved keys, whose runs are folded into it as they come.
 */
export const BASE_RUN = 15;
/**
 * The keys one stream may have in the open run before a move closes it: smaller runs are left open
 * across moves, so that a stream's few keys per move share its last pages instead of each making a
 * run that a merge would soon copy (docs/architecture.md "Idempotency keys are indexed in batches").
 */
export const OPEN_RUN_KEYS = 128;
/** Runs of one level merged into one of the next. */
export const MERGE_WIDTH = 8;
/** The entries one move's merge work copies at most (docs/architecture.md "Idempotency keys are indexed in batches"). */
export const MERGE_ROWS_PER_MOVE = 8192;
/**
 * Where the engine has a timer, a move's merge work is done after it, in this many transactions of
 * MERGE_ROWS_PER_MOVE / MERGE_SLICES entries, one per event-loop turn (mergeLater): no turn
 * stalls the requests in it for the whole budget.
 */
export const MERGE_SLICES = 4;
/** Slices of merge work owed at most: moves faster than the turns that do them cannot pile up more. */
const MAX_SLICES_OWED = 4 * MERGE_SLICES;
const LEVELS = 16;
const TOP_LEVEL = 14;

export const levelOf = (run: number): number => run % LEVELS;
const genOf = (run: number): number => Math.floor(run / LEVELS);

/** The runs a stream has, newest first: one seek per run (its SQL checked on every adapter: test/storage-checks-sql.ts). */
export const RUNS_OF = `WITH RECURSIVE r(run) AS (
    SELECT (SELECT max(run) FROM event_keys WHERE sid = ?)
    UNION ALL SELECT (SELECT max(run) FROM event_keys WHERE sid = ? AND run < r.run) FROM r WHERE r.run IS NOT NULL
  ) SELECT run FROM r WHERE run IS NOT NULL`;
/** The key that bounds a merge step in one input: its (offset + 1)-th lowest, if it has that many. */
const NTH_KEY = `SELECT idem FROM event_keys WHERE sid = ? AND run = ? ORDER BY idem LIMIT 1 OFFSET ?`;
/**
 * A merge step, one input at a time, oldest first, so that the newest entry of a key is written
 * last and stays: the input's entries up to the bound (every one, in the form without it), in
 * their order (no sort); then the same entries deleted from the inputs.
 */
const copyStep = (bounded: boolean) => `INSERT INTO event_keys (sid, run, idem, ofs)
  SELECT sid, ?, idem, ofs FROM event_keys WHERE sid = ? AND run = ?${bounded ? ' AND idem <= ?' : ''} ORDER BY idem
  ON CONFLICT (sid, run, idem) DO UPDATE SET ofs = excluded.ofs`;
const deleteStep = (bounded: boolean) => `DELETE FROM event_keys WHERE sid = ? AND run IN (SELECT value FROM json_each(?))${bounded ? ' AND idem <= ?' : ''}`;
const [COPY_ALL, COPY_UP_TO, DELETE_ALL, DELETE_UP_TO] = [copyStep(false), copyStep(true), deleteStep(false), deleteStep(true)];
/** How many entries the inputs hold, counted up to a limit. */
const HELD = `SELECT count(*) FROM (SELECT 1 FROM event_keys WHERE sid = ? AND run IN (SELECT value FROM json_each(?)) LIMIT ?)`;

interface Merge {
  sid: number;
  inputs: number[];
  output: number;
  /** Whether it is recorded in key_merges (it took a step that did not finish it). */
  recorded: boolean;
}

interface Runs {
  /** Newest first. */
  list: number[];
  /** The list as JSON, for statements that take it (made on demand). */
  json: string | undefined;
}

export class KeyRuns {
  private readonly streams = new Map<number, Runs>();
  /** Merges begun or due, oldest first; at most one per stream. */
  private readonly merges = new Map<number, Merge>();
  /** Per stream, the keys written into the open run (by moves and claims) since it was opened. */
  private readonly inOpen = new Map<number, number>();
  private gen = 0;
  private epoch = -1;
  /** Slices of merge work the moves owe, and the timer of the next (mergeLater). */
  private slicesOwed = 0;
  private sliceTimer: CancelTimer | undefined;

  constructor(
    private readonly storage: SqlStorage,
    /** Whether stream `sid` is known to have too many keys for a filter of moved keys (it probes, or will, every run for every key). */
    private readonly unfiltered: (sid: number) => boolean,
    /** Stream `sid`, unfiltered, has its runs folded into the base run (but for the open one). */
    private readonly folded: (sid: number) => void,
    /** With one, a move's merge work follows it in slices, one per turn (mergeLater); without, the move does it. */
    private readonly timer?: Timer,
  ) {}

  /** The run the next move writes, where claims go too. */
  openRun(): number {
    this.sync();
    return this.gen * LEVELS;
  }

  /** The runs of stream `sid` as a JSON list, newest first (for `run IN (SELECT value FROM json_each(?))`). */
  json(sid: number): string {
    const runs = this.runsOf(sid);
    return (runs.json ??= JSON.stringify(runs.list));
  }

  /** Stream `sid` claimed `count` keys in the open run (call after writing them). */
  claimedIn(sid: number, count: number): void {
    this.sync();
    this.wrote(sid, count);
  }

  /**
   * After a move wrote the open run for the streams of the map (`moved`: stream → keys), in the
   * move's transaction: once a stream has OPEN_RUN_KEYS keys or more there, the run is closed (the
   * next generation opens) and each stream that wrote it may have a merge due; then merge work of
   * at most MERGE_ROWS_PER_MOVE entries is done, or owed to the slices that follow (mergeLater).
   */
  moved(moved: Iterable<[number, number]>): void {
    this.sync();
    for (const [sid, count] of moved) this.wrote(sid, count);
    let full = false;
    for (const count of this.inOpen.values()) if (count >= OPEN_RUN_KEYS) full = true;
    if (full) {
      this.gen++;
      this.storage.run(`INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, KEY_GEN, String(this.gen));
      const wrote = [...this.inOpen.keys()];
      this.inOpen.clear();
      for (const sid of wrote) this.plan(sid);
    }
    if (this.timer === undefined) this.mergeSome(MERGE_ROWS_PER_MOVE);
    else this.mergeLater(this.timer);
  }

  /**
   * A move owes its merge work: MERGE_SLICES slices, one per turn, from the next turn on (after
   * the move's transaction; should it be undone, the slices find the state read again).
   */
  private mergeLater(timer: Timer): void {
    this.slicesOwed = Math.min(this.slicesOwed + MERGE_SLICES, MAX_SLICES_OWED);
    this.sliceTimer ??= timer.set(0, () => this.mergeSlice(timer));
  }

  /**
   * One slice of the merge work moves owe, in a transaction of its own (a failure undoes only it:
   * each step of a merge is whole); the next slice in the next turn while merges
   * remain. Bounded by MERGE_SLICES per move, as the work was when each move did it at once.
   */
  private mergeSlice(timer: Timer): void {
    this.sliceTimer = undefined;
    if (this.slicesOwed === 0) return;
    this.slicesOwed--;
    try {
      if (!this.merging) {
        this.slicesOwed = 0;
        return;
      }
      // Not durable by itself: a step lost with a power loss leaves the runs as they were before
      // it, which is as right; the next durable commit makes it durable anyway.
      this.storage.transaction(() => this.mergeSome(MERGE_ROWS_PER_MOVE / MERGE_SLICES), { durable: false });
    } catch {
      // The storage failed or was closed: what is stored is read again, and the next move owes
      // slices again.
      this.undone();
      this.slicesOwed = 0;
      return;
    }
    if (this.slicesOwed > 0) this.sliceTimer = timer.set(0, () => this.mergeSlice(timer));
  }

  /** Whether merges are begun or due. */
  private get merging(): boolean {
    this.sync();
    return this.merges.size > 0;
  }

  /** Stream `sid` wrote `count` keys into the open run: it is listed among the stream's runs. */
  private wrote(sid: number, count: number): void {
    this.inOpen.set(sid, (this.inOpen.get(sid) ?? 0) + count);
    this.include(sid, this.gen * LEVELS);
  }

  /**
   * A transaction that called `moved` was undone: the generation, the runs and the merges are read
   * again from what is stored when next needed (the undone move may have advanced or finished them
   * in memory only).
   */
  undone(): void {
    this.epoch = -1;
  }

  /** The entries of stream `sid` were deleted (some or all): its runs are read again when next needed, its merge forgotten. */
  forget(sid: number): void {
    this.sync();
    if (this.merges.get(sid)?.recorded === true) this.storage.run(`DELETE FROM key_merges WHERE sid = ?`, sid);
    this.streams.delete(sid);
    this.merges.delete(sid);
    this.inOpen.delete(sid);
  }

  /**
   * Merge work of at most `budget` entries, merges in the order they became due: a merge whose
   * inputs hold no more than what is left is finished; a larger one takes steps while at least a
   * quarter of the budget is left (each step copies at least an input's share of what is left).
   */
  mergeSome(budget: number): void {
    this.sync();
    let left = budget;
    for (const merge of this.merges.values()) {
      while (left >= budget / 4 && this.merges.get(merge.sid) === merge) left -= this.step(merge, left);
      if (left < budget / 4) break;
    }
  }

  /**
   * One step of `merge`, copying at most `budget` entries: answers how many it copied. When the
   * inputs hold no more, the step copies them all and finishes the merge. Otherwise each input
   * gives at most its share: the lowest of the inputs' share-th keys bounds the step, so no input
   * holds a key at or below the bound once the step is done.
   */
  private step(merge: Merge, budget: number): number {
    const { sid, inputs, output } = merge;
    const json = JSON.stringify(inputs);
    const held = this.storage.execRows(HELD, sid, json, budget + 1)[0]![0] as number;
    const oldestFirst = [...inputs].sort((a, b) => a - b);
    if (held <= budget) {
      for (const run of oldestFirst) this.storage.run(COPY_ALL, output, sid, run);
      this.storage.run(DELETE_ALL, sid, json);
      if (merge.recorded) this.storage.run(`DELETE FROM key_merges WHERE sid = ?`, sid);
      this.merges.delete(sid);
      const runs = this.runsOf(sid);
      runs.list = runs.list.filter((run) => !inputs.includes(run));
      runs.json = undefined;
      this.plan(sid);
      return Math.max(1, held);
    }
    const share = Math.max(1, Math.floor(budget / inputs.length));
    let bound: string | undefined;
    for (const run of inputs) {
      const nth = this.storage.execRows(NTH_KEY, sid, run, share - 1)[0];
      if (nth !== undefined && (bound === undefined || (nth[0] as string) < bound)) bound = nth[0] as string;
    }
    // Some input holds more than its share (they hold more than the budget in all), so there is a bound.
    let copied = 0;
    for (const run of oldestFirst) copied += this.storage.run(COPY_UP_TO, output, sid, run, bound!);
    this.storage.run(DELETE_UP_TO, sid, json, bound!);
    if (!merge.recorded) {
      this.storage.run(`INSERT OR REPLACE INTO key_merges (sid, inputs, output) VALUES (?, ?, ?)`, sid, json, output);
      merge.recorded = true;
    }
    return Math.max(1, copied);
  }

  /**
   * Makes a merge due for stream `sid`, unless one is begun: for a stream without a filter, of
   * every run but the base and the open one into the base; for others, when a level has
   * MERGE_WIDTH runs or more, of the lowest such level's oldest runs into one of the next level.
   * The output run is listed at once: a lookup probes it along with the inputs while the merge goes on.
   */
  private plan(sid: number): void {
    if (this.merges.has(sid)) return;
    const runs = this.runsOf(sid);
    const open = this.gen * LEVELS;
    if (this.unfiltered(sid)) {
      const inputs = runs.list.filter((run) => run !== BASE_RUN && run !== open);
      if (inputs.length === 0) return this.folded(sid);
      this.merges.set(sid, { sid, inputs, output: BASE_RUN, recorded: false });
      this.include(sid, BASE_RUN);
      return;
    }
    for (let level = 0; level < TOP_LEVEL; level++) {
      const inputs = runs.list.filter((run) => levelOf(run) === level && run !== open);
      if (inputs.length < MERGE_WIDTH) continue;
      const oldest = inputs.slice(-MERGE_WIDTH);
      const output = genOf(oldest[0]!) * LEVELS + level + 1;
      this.merges.set(sid, { sid, inputs: oldest, output, recorded: false });
      this.include(sid, output);
      return;
    }
  }

  /** Lists `run` among the runs of stream `sid` when they are loaded (a load finds it in the table). */
  private include(sid: number, run: number): void {
    const runs = this.streams.get(sid);
    if (runs === undefined || runs.list.includes(run)) return;
    runs.list.push(run);
    runs.list.sort((a, b) => b - a);
    runs.json = undefined;
  }

  private runsOf(sid: number): Runs {
    this.sync();
    let runs = this.streams.get(sid);
    if (runs === undefined) {
      runs = { list: this.storage.execRows(RUNS_OF, sid, sid).map(([run]) => run as number), json: undefined };
      this.streams.set(sid, runs);
    }
    return runs;
  }

  /**
   * Reads the generation and the recorded merges again, and forgets runs, when the storage epoch
   * changed (a failed group commit undid writes they saw) or on first use (a start).
   */
  private sync(): void {
    const epoch = this.storage.epoch;
    if (this.epoch === epoch) return;
    const stored = this.storage.execRows(`SELECT value FROM meta WHERE key = ?`, KEY_GEN)[0];
    this.gen = stored === undefined ? 1 : Number(stored[0]);
    this.streams.clear();
    this.merges.clear();
    for (const [sid, inputs, output] of this.storage.execRows(`SELECT sid, inputs, output FROM key_merges ORDER BY sid`)) {
      this.merges.set(sid as number, { sid: sid as number, inputs: JSON.parse(inputs as string) as number[], output: output as number, recorded: true });
    }
    this.inOpen.clear();
    this.epoch = epoch;
  }
}
