/**
 * The runs of event_keys (key-runs.ts, docs/architecture.md "Idempotency keys are indexed in
 * batches"): moves write the open run until a stream has OPEN_RUN_KEYS keys in it, MERGE_WIDTH runs
 * of a level become one of the next,
 * a merge larger than MERGE_ROWS_PER_MOVE goes in steps, one per move, with every key found in
 * between, the newest entry of a key wins, and an interrupted merge resumes from the tables alone;
 * with a timer (as the engine has), a move's merge work is done after it, a slice per turn.
 * Over every test adapter.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { testStorages } from '../../test/helpers/test-storages.js';
import type { SqlStorage } from '../ports/storage.js';
import { EventRows, type EventRowInput } from './event-rows.js';
import type { Timer } from '../ports/timer.js';
import { BASE_RUN, KeyRuns, MERGE_ROWS_PER_MOVE, MERGE_SLICES, MERGE_WIDTH, OPEN_RUN_KEYS, levelOf } from './key-runs.js';
import { openSchema } from './schema.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function keyed(offset: number, key: string): EventRowInput {
  return { offset, type: 't', ephemeral: false, idempotencyKey: key, createdMs: 0, json: JSON.stringify({ offset }) };
}

/** Run → entries of stream `sid`, newest run first. */
function runs(storage: SqlStorage, sid: number): Array<[number, number]> {
  return storage.execRows(`SELECT run, count(*) FROM event_keys WHERE sid = ? GROUP BY run ORDER BY run DESC`, sid).map(([run, n]) => [run as number, n as number]);
}

/** The levels of stream `sid`'s runs, newest first. */
const levels = (storage: SqlStorage, sid: number) => runs(storage, sid).map(([run]) => levelOf(run));

for (const adapter of testStorages(cleanups, 'rivulet-key-runs-')) {
  describe(`runs of moved keys (${adapter.name})`, () => {
    async function open(): Promise<{ storage: SqlStorage; rows: EventRows }> {
      const storage = await adapter.open();
      openSchema(storage);
      return { storage, rows: new EventRows(storage, undefined) };
    }

    /** Writes `count` keyed rows to stream `sid` (keys `${prefix}${i}`, from offset `next[sid]`), then a move. */
    function runOf(storage: SqlStorage, rows: EventRows, next: Map<number, number>, sid: number, prefix: string, count: number): void {
      storage.transaction(() => {
        for (let i = 0; i < count; i++) {
          const offset = (next.get(sid) ?? 0) + 1;
          next.set(sid, offset);
          rows.insert(sid, keyed(offset, `${prefix}${i}`));
        }
      });
      rows.keys.move();
    }

    it(`moves share the open run until a stream has ${OPEN_RUN_KEYS} keys in it: ${OPEN_RUN_KEYS - 1} keep it open, one more closes it for every stream`, async () => {
      const { storage, rows } = await open();
      const next = new Map<number, number>();
      runOf(storage, rows, next, 1, 'a-', OPEN_RUN_KEYS - 2);
      runOf(storage, rows, next, 2, 'a-', 3);
      runOf(storage, rows, next, 1, 'b-', 1);
      expect([runs(storage, 1), runs(storage, 2)]).toEqual([[[16, OPEN_RUN_KEYS - 1]], [[16, 3]]]);
      runOf(storage, rows, next, 1, 'c-', 1);
      runOf(storage, rows, next, 2, 'd-', 1);
      expect([runs(storage, 1), runs(storage, 2)]).toEqual([[[16, OPEN_RUN_KEYS]], [[32, 1], [16, 3]]]);
      for (const key of ['a-0', 'b-0', 'c-0']) expect(rows.insertIfNewKeys(1, [keyed(1000, key)])).toBe(false);
    });

    it(`${MERGE_WIDTH - 1} runs of a level stay, the ${MERGE_WIDTH}th makes them one of the next, every key found`, async () => {
      const { storage, rows } = await open();
      const next = new Map<number, number>();
      for (let move = 0; move < MERGE_WIDTH - 1; move++) {
        runOf(storage, rows, next, 1, `m${move}-`, OPEN_RUN_KEYS);
        runOf(storage, rows, next, 2, `m${move}-`, OPEN_RUN_KEYS);
      }
      expect(levels(storage, 1)).toEqual(Array(MERGE_WIDTH - 1).fill(0));
      expect(levels(storage, 2)).toEqual(Array(MERGE_WIDTH - 1).fill(0));
      runOf(storage, rows, next, 1, `m${MERGE_WIDTH - 1}-`, OPEN_RUN_KEYS);
      expect(runs(storage, 1)).toEqual([[(MERGE_WIDTH * 2 - 1) * 16 + 1, MERGE_WIDTH * OPEN_RUN_KEYS]]);
      expect(levels(storage, 2)).toEqual(Array(MERGE_WIDTH - 1).fill(0));
      for (let move = 0; move < MERGE_WIDTH; move++) {
        for (const i of [0, OPEN_RUN_KEYS - 1]) expect(rows.insertIfNewKeys(1, [keyed(1e6, `m${move}-${i}`)])).toBe(false);
      }
      // Eight merges of level 0 make eight runs of level 1, which make one of level 2.
      for (let move = MERGE_WIDTH; move < MERGE_WIDTH * MERGE_WIDTH; move++) runOf(storage, rows, next, 1, `m${move}-`, OPEN_RUN_KEYS);
      // The last merge may take a step more (the level-0 merge before it took part of the move's
      // work): a move of another stream's key finishes it.
      runOf(storage, rows, next, 2, 'last-', 1);
      expect(levels(storage, 1)).toEqual([2]);
      expect(rows.byKeys(1, ['m0-0', 'm63-0', 'none']).size).toBe(2);
    });

    it('a merge keeps the newest entry of a key: a freed key written again is found at its new offset, and its old row stays free', async () => {
      const { storage, rows } = await open();
      const next = new Map<number, number>();
      // An ephemeral event whose key moved (in a run of its own), then pruned: its entry is stale.
      storage.transaction(() => rows.insert(1, { ...keyed(1, 'k'), ephemeral: true }));
      next.set(1, 1);
      runOf(storage, rows, next, 1, 'm0-', OPEN_RUN_KEYS - 1);
      expect(storage.transaction(() => rows.pruneEphemeral(1, 1, 0, 1))).toBe(1);
      expect(rows.byKey(1, 'k')).toBeUndefined();
      // Written again, moved into the next run.
      const offset = next.get(1)! + 1;
      storage.transaction(() => rows.insert(1, keyed(offset, 'k')));
      next.set(1, offset);
      runOf(storage, rows, next, 1, 'm1-', OPEN_RUN_KEYS - 1);
      for (let move = 2; move < MERGE_WIDTH; move++) runOf(storage, rows, next, 1, `m${move}-`, OPEN_RUN_KEYS);
      expect(levels(storage, 1)).toEqual([1]);
      expect(storage.exec(`SELECT ofs FROM event_keys WHERE sid = 1 AND idem = 'k'`)).toEqual([{ ofs: offset }]);
      expect(rows.byKey(1, 'k')).toEqual({ offset });
      expect(rows.insertIfNewKeys(1, [keyed(1e6, 'k')])).toBe(false);
    });

    it(`a merge of more than ${MERGE_ROWS_PER_MOVE} entries goes in steps, one per move, each entry in one run at every step; a restart goes on where the tables stand`, async () => {
      const { storage, rows } = await open();
      const next = new Map<number, number>();
      const per = Math.ceil((MERGE_ROWS_PER_MOVE * 1.5) / MERGE_WIDTH);
      const total = per * MERGE_WIDTH;
      for (let move = 0; move < MERGE_WIDTH; move++) runOf(storage, rows, next, 1, `m${move}-`, per);
      // The eighth move began the merge: one step of at most MERGE_ROWS_PER_MOVE entries.
      const first = runs(storage, 1);
      const merged = first.filter(([run]) => levelOf(run) === 1);
      expect(merged).toHaveLength(1);
      expect(merged[0]![1]).toBeGreaterThan(0);
      expect(merged[0]![1]).toBeLessThanOrEqual(MERGE_ROWS_PER_MOVE);
      expect(first.reduce((sum, [, n]) => sum + n, 0)).toBe(total);
      for (const key of ['m0-0', `m7-${per - 1}`, 'm3-17']) expect(rows.insertIfNewKeys(1, [keyed(1e6, key)])).toBe(false);
      expect(storage.exec(`SELECT sid, output FROM key_merges`)).toEqual([{ sid: 1, output: MERGE_WIDTH * 16 + 1 }]);
      // A restart: a new instance reads the merge under way from key_merges; its next move, of
      // another stream, goes on with it and finishes it.
      const again = new EventRows(storage, undefined);
      expect(again.byKeys(1, ['m0-0', `m7-${per - 1}`, 'fresh']).size).toBe(2);
      runOf(storage, again, next, 2, 'other-', 1);
      expect(runs(storage, 1)).toEqual([[MERGE_WIDTH * 16 + 1, total]]);
      expect(storage.exec(`SELECT count(*) AS n FROM key_merges`)).toEqual([{ n: 0 }]);
      expect(again.insertIfNewKeys(1, [keyed(1e6, `m5-${per - 2}`)])).toBe(false);
    });

    it(`with a timer a move merges nothing itself; its work follows in ${MERGE_SLICES} slices of ${MERGE_ROWS_PER_MOVE / MERGE_SLICES} entries at most, one per timer turn, every key found between`, async () => {
      const storage = await adapter.open();
      openSchema(storage);
      // A timer whose turns the test runs one at a time.
      const due: Array<() => void> = [];
      const timer: Timer = {
        set(delayMs, fn) {
          expect(delayMs).toBe(0);
          due.push(fn);
          return () => due.splice(due.indexOf(fn), 1);
        },
      };
      const turn = (): boolean => {
        const fn = due.shift();
        fn?.();
        return fn !== undefined;
      };
      const rows = new EventRows(storage, undefined, timer);
      const next = new Map<number, number>();
      const per = Math.ceil((MERGE_ROWS_PER_MOVE * 1.5) / MERGE_WIDTH);
      const total = per * MERGE_WIDTH;
      for (let move = 0; move < MERGE_WIDTH; move++) {
        runOf(storage, rows, next, 1, `m${move}-`, per);
        if (move < MERGE_WIDTH - 1) while (turn()); // nothing to merge yet: slices end at once
      }
      // The eighth move made the merge due and copied nothing.
      expect(levels(storage, 1)).toEqual(Array(MERGE_WIDTH).fill(0));
      const merged = () => runs(storage, 1).find(([run]) => levelOf(run) === 1)?.[1] ?? 0;
      const copied: number[] = [];
      while (turn()) {
        copied.push(merged() - copied.reduce((a, b) => a + b, 0));
        expect(runs(storage, 1).reduce((sum, [, n]) => sum + n, 0)).toBe(total);
        for (const key of ['m0-0', `m7-${per - 1}`, 'm3-17']) expect(rows.insertIfNewKeys(1, [keyed(1e6, key)])).toBe(false);
      }
      // The move owed MERGE_SLICES slices; each copied a slice's budget at most.
      expect(copied).toHaveLength(MERGE_SLICES);
      for (const n of copied) expect(n).toBeLessThanOrEqual(MERGE_ROWS_PER_MOVE / MERGE_SLICES);
      expect(copied.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      expect(merged()).toBeLessThan(total);
      // The next move owes more slices, which finish the merge; then they stop.
      runOf(storage, rows, next, 2, 'other-', 1);
      let turns = 0;
      while (turn()) turns++;
      expect(turns).toBeLessThanOrEqual(MERGE_SLICES);
      expect(runs(storage, 1)).toEqual([[MERGE_WIDTH * 16 + 1, total]]);
      expect(storage.exec(`SELECT count(*) AS n FROM key_merges`)).toEqual([{ n: 0 }]);
      expect(rows.insertIfNewKeys(1, [keyed(1e6, `m5-${per - 2}`)])).toBe(false);
    });

    it('a move undone after it closed the run and merged leaves nothing of that in memory: the next move closes and merges from what is stored', async () => {
      const storage = await adapter.open();
      openSchema(storage);
      let failing = false;
      const view = new Proxy(storage, {
        get: (target, name) =>
          name === 'run'
            ? (sql: string, ...params: unknown[]) => {
                if (failing && sql.startsWith('INSERT OR REPLACE INTO meta') && params[0] === 'keys_moved') throw new Error('disk full');
                return target.run(sql, ...(params as never[]));
              }
            : Reflect.get(target, name, target),
      });
      const rows = new EventRows(view, undefined);
      const next = new Map<number, number>();
      for (let move = 0; move < MERGE_WIDTH - 1; move++) runOf(storage, rows, next, 1, `m${move}-`, OPEN_RUN_KEYS);
      const before = runs(storage, 1);
      const gen = storage.exec(`SELECT value FROM meta WHERE key = 'key_gen'`);
      failing = true;
      expect(() => runOf(storage, rows, next, 1, 'undone-', OPEN_RUN_KEYS)).toThrow('disk full');
      failing = false;
      expect(runs(storage, 1)).toEqual(before);
      expect(storage.exec(`SELECT value FROM meta WHERE key = 'key_gen'`)).toEqual(gen);
      rows.keys.move();
      expect(runs(storage, 1)).toEqual([[MERGE_WIDTH * 16 + 1, MERGE_WIDTH * OPEN_RUN_KEYS]]);
      for (const key of ['m0-0', 'undone-0', `undone-${OPEN_RUN_KEYS - 1}`]) expect(rows.insertIfNewKeys(1, [keyed(1e6, key)])).toBe(false);
    });

    it(`a merge of exactly ${MERGE_ROWS_PER_MOVE} entries is done in the move that begins it`, async () => {
      const { storage, rows } = await open();
      const next = new Map<number, number>();
      for (let move = 0; move < MERGE_WIDTH; move++) runOf(storage, rows, next, 1, `m${move}-`, MERGE_ROWS_PER_MOVE / MERGE_WIDTH);
      expect(runs(storage, 1)).toEqual([[MERGE_WIDTH * 16 + 1, MERGE_ROWS_PER_MOVE]]);
    });

    it('a destroyed stream takes its runs along mid-merge; a stream given the same sid starts with none and merges its own', async () => {
      const { storage, rows } = await open();
      const next = new Map<number, number>();
      const per = Math.ceil((MERGE_ROWS_PER_MOVE * 1.5) / MERGE_WIDTH);
      for (let move = 0; move < MERGE_WIDTH; move++) runOf(storage, rows, next, 1, `m${move}-`, per);
      expect(levels(storage, 1)).toContain(1);
      storage.transaction(() => rows.deleteAll(1));
      expect(runs(storage, 1)).toEqual([]);
      next.clear();
      for (let move = 0; move < MERGE_WIDTH; move++) runOf(storage, rows, next, 1, `n${move}-`, OPEN_RUN_KEYS);
      expect(runs(storage, 1)).toEqual([[MERGE_WIDTH * 2 * 16 + 1, MERGE_WIDTH * OPEN_RUN_KEYS]]);
      expect(rows.insertIfNewKeys(1, [keyed(1e6, 'm0-0')])).toBe(true);
      expect(rows.insertIfNewKeys(1, [keyed(1e6 + 1, 'n0-0')])).toBe(false);
    });

    it('a stream with too many keys for a filter has each run folded into the base run as it comes, the newest entry of a key kept, and is told when folded; a filtered one keeps its runs', async () => {
      const storage = await adapter.open();
      openSchema(storage);
      const folded: number[] = [];
      const keyRuns = new KeyRuns(
        storage,
        (sid) => sid === 1,
        (sid) => folded.push(sid),
      );
      storage.run(`INSERT INTO event_keys (sid, run, idem, ofs) VALUES (1, ${BASE_RUN}, 'old', 1), (1, ${BASE_RUN}, 'again', 2)`);
      for (let gen = 1; gen <= 3; gen++) {
        storage.transaction(() => {
          const open = keyRuns.openRun();
          for (const sid of [1, 2]) storage.run(`INSERT INTO event_keys (sid, run, idem, ofs) VALUES (?, ?, ?, ?)`, sid, open, `k${gen}`, 10 + gen);
          if (gen === 2) storage.run(`INSERT INTO event_keys (sid, run, idem, ofs) VALUES (1, ?, 'again', 20)`, open);
          keyRuns.moved([
            [1, 1],
            [2, OPEN_RUN_KEYS],
          ]);
        });
        expect(runs(storage, 1)).toEqual([[BASE_RUN, 2 + gen]]);
        // Told once the stream has no run left but the base (its filter is then dropped).
        expect(folded).toEqual(Array(gen).fill(1));
      }
      expect(storage.exec(`SELECT idem, ofs FROM event_keys WHERE sid = 1 ORDER BY idem`)).toEqual([
        { idem: 'again', ofs: 20 },
        { idem: 'k1', ofs: 11 },
        { idem: 'k2', ofs: 12 },
        { idem: 'k3', ofs: 13 },
        { idem: 'old', ofs: 1 },
      ]);
      expect(levels(storage, 2)).toEqual([0, 0, 0]);
      expect(keyRuns.json(1)).toBe(`[${BASE_RUN}]`);
    });

    it('the base run (keys an upgraded database had moved) is found and never merged', async () => {
      const { storage, rows } = await open();
      storage.transaction(() => {
        storage.run(`INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (1, 1, 't', 0, 'old', 0, '{}')`);
        storage.run(`INSERT INTO event_keys (sid, run, idem, ofs) VALUES (1, ${BASE_RUN}, 'old', 1)`);
        storage.run(`UPDATE meta SET value = '1' WHERE key = 'keys_moved'`);
      });
      const fresh = new EventRows(storage, undefined);
      const next = new Map([[1, 1]]);
      for (let move = 0; move < MERGE_WIDTH * 2; move++) runOf(storage, fresh, next, 1, `m${move}-`, OPEN_RUN_KEYS);
      expect(levels(storage, 1)).toEqual([1, 1, BASE_RUN]);
      expect(fresh.insertIfNewKeys(1, [keyed(100, 'old')])).toBe(false);
      void rows;
    });
  });
}
