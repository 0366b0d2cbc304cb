/**
 * Copies stored as parts (storage format 8; docs/architecture.md "Copies are stored as parts").
 *
 * A first-hop copy without a transform is about three quarters text that every copy of its batch
 * shares: its stream's path, its idempotency key up to the source offset, and its provenance hop
 * but for the source offset, type and time. Its row stores the rest: `body` holds the copy's time,
 * the source event's time (24 characters each) and the source's payload and metadata members;
 * `src_ofs` the source offset; `copy_run` a row of `copy_runs` with the shared texts (one per
 * stream and run texts). Every statement that reads bodies reads EVENT_BODY, which gives such a
 * row's whole text back from its parts in SQL (reads stay joined in SQL, read-cache.ts,
 * EventRows.rangeJoined); any other row's body is its text, as before. core/decide-append.ts
 * `StoredCopy` says which copies qualify and what the parts are.
 */
import type { CopyRunTexts } from '../core/copy-builder.js';
import type { SqlStorage } from '../ports/storage.js';
import { EVENTS_BY_OFFSET } from './event-index.js';
import type { EventRowInput } from './event-rows.js';

export const COPY_RUNS_TABLE = `CREATE TABLE IF NOT EXISTS copy_runs (
     id INTEGER PRIMARY KEY,
     sid INTEGER NOT NULL,
     head TEXT NOT NULL,
     key_text TEXT NOT NULL,
     hop_head TEXT NOT NULL,
     hop_tail TEXT NOT NULL,
     UNIQUE (sid, key_text, hop_head, hop_tail, head)
   )`;

/** The run `r` of the events row `e` (EVENT_BODY), joined to a statement that reads `e`. */
export const RUNS_JOIN = `LEFT JOIN copy_runs r ON r.id = e.copy_run`;
/**
 * The events table with the runs its copies name: `e` and `r` in EVENT_BODY, found by stream and
 * offset through `x` (event-index.ts EVENTS_BY_OFFSET: conditions name x.sid and x.ofs).
 */
export const EVENTS_WITH_RUNS = `${EVENTS_BY_OFFSET} ${RUNS_JOIN}`;

/**
 * The stored text of the row `e` (with its run `r`, EVENTS_WITH_RUNS): the body, or a copy's text
 * made again from its parts, as core/decide-append.ts `StoredCopy` spells it.
 */
export const EVENT_BODY = `(CASE WHEN e.copy_run IS NULL THEN e.body ELSE
  r.head || e.ofs || ',"createdAt":"' || substr(e.body, 1, 24) || '","type":"' || e.type || '"' || substr(e.body, 49) ||
  r.key_text || e.src_ofs || r.hop_head || e.src_ofs || ',"type":"' || e.type || '","createdAt":"' || substr(e.body, 25, 24) || '"' || r.hop_tail
END)`;

/** A copy's whole text from its row and run, in JavaScript: what EVENT_BODY gives (copy-rows.test.ts compares the two). */
export function copyText(run: Omit<CopyRunTexts, 'keyHead'>, row: { ofs: number; type: string; body: string; src_ofs: number }): string {
  const { ofs, type, body, src_ofs: source } = row;
  return (
    `${run.head}${ofs},"createdAt":"${body.slice(0, 24)}","type":"${type}"${body.slice(48)}` +
    `${run.key}${source}${run.hopHead}${source},"type":"${type}","createdAt":"${body.slice(24, 48)}"${run.hopTail}`
  );
}

/**
 * Copies stored as parts per INSERT: 11 rows of 9 values, under the 100 parameters a Durable Object
 * statement binds. The body is joined by SQLite from the copy's time, the source's time and the
 * fields, texts that exist already: no string is made per copy for it.
 */
export const COPY_ROWS_PER_INSERT = 11;
const inserts: string[] = [];
/** The INSERT of `n` copies stored as parts (1 ≤ n ≤ COPY_ROWS_PER_INSERT), made once per n. */
function insertOf(n: number): string {
  return (inserts[n] ??=
    `INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body, copy_run, src_ofs) VALUES ${Array.from({ length: n }, () => '(?, ?, ?, 0, NULL, ?, ? || ? || ?, ?, ?)').join(', ')}`);
}

/** The rows of copies stored as parts, and their runs (found or made per batch). */
export class CopyRuns {
  /**
   * The streams seen with runs: from then on their reads join (a run undone with its transaction
   * leaves its stream here, which costs its reads the join and nothing else) until their runs are
   * deleted. A stream not here is looked up at each read, one probe of an index: another writer
   * of the same database may have made its first run meanwhile.
   */
  private readonly withRuns = new Set<number>();

  constructor(private readonly storage: SqlStorage) {}

  /** Whether stream `sid` may hold copies stored as parts: its reads must then read EVENT_BODY. */
  hasParts(sid: number): boolean {
    if (this.withRuns.has(sid)) return true;
    if (this.storage.execRows(`SELECT 1 FROM copy_runs WHERE sid = ? LIMIT 1`, sid).length === 0) return false;
    this.withRuns.add(sid);
    return true;
  }

  /**
   * Writes rows[from, to), each a copy with `stored` whose key is claimed (copy-claims.ts): never
   * ephemeral, no `idem`. A run's id is looked up once per change of run.
   */
  write(sid: number, rows: readonly EventRowInput[], from: number, to: number): void {
    let run: CopyRunTexts | undefined;
    let runId = 0;
    for (let start = from; start < to; start += COPY_ROWS_PER_INSERT) {
      const n = Math.min(COPY_ROWS_PER_INSERT, to - start);
      const params: (string | number)[] = new Array<string | number>(n * 9);
      for (let i = 0; i < n; i++) {
        const row = rows[start + i]!;
        const { event, parts } = row.stored!;
        if (parts.copyRun !== run) {
          run = parts.copyRun;
          runId = this.idOf(sid, run);
        }
        const hop = parts.source.copiedFrom[0];
        const at = i * 9;
        params[at] = sid;
        params[at + 1] = row.offset;
        params[at + 2] = row.type;
        params[at + 3] = row.createdMs;
        params[at + 4] = event.createdAt;
        params[at + 5] = hop.createdAt;
        params[at + 6] = parts.copyFields;
        params[at + 7] = runId;
        params[at + 8] = hop.offset;
      }
      this.storage.run(insertOf(n), ...params);
    }
  }

  /** The id of the run texts `run` in stream `sid`, made if new. */
  idOf(sid: number, run: CopyRunTexts): number {
    const find = () =>
      this.storage.execRows(`SELECT id FROM copy_runs WHERE sid = ? AND key_text = ? AND hop_head = ? AND hop_tail = ? AND head = ?`, sid, run.key, run.hopHead, run.hopTail, run.head)[0];
    let found = find();
    if (found === undefined) {
      this.storage.run(`INSERT INTO copy_runs (sid, head, key_text, hop_head, hop_tail) VALUES (?, ?, ?, ?, ?)`, sid, run.head, run.key, run.hopHead, run.hopTail);
      this.withRuns.add(sid);
      found = find()!;
    }
    return found[0] as number;
  }

  /** Deletes the runs of stream `sid` (once its rows are gone). */
  deleteStream(sid: number): void {
    this.storage.run(`DELETE FROM copy_runs WHERE sid = ?`, sid);
    this.withRuns.delete(sid);
  }
}
