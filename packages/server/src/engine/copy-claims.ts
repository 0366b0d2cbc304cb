/**
 * The idempotency keys of copies, claimed as ranges (storage format 7; docs/architecture.md
 * "Copy keys are claimed as ranges").
 *
 * Every copy carries the key `rivulet-internal/copy:[key, generation, project, path, streamId,
 * offset]` (core/copy-builder.ts): the same head for every copy of one delivery run, then the
 * source offset. A copy batch is a run of increasing source offsets written to consecutive
 * offsets of the receiving stream, so one row says what a thousand key rows said: this head, the
 * source offsets `src_first` to `src_first + count - 1`, stored from offset `ofs_first` on. A copy
 * row keeps its key in its JSON only (its `idem` column is NULL), so neither event_keys nor a
 * move ever holds it.
 *
 * Copies written by format 6 claimed their keys in event_keys one by one, and those entries stay:
 * a run that has any of them is looked up key by key (EventKeys), and new copies of it are still
 * claimed here.
 */
import { INTERNAL_IDEMPOTENCY_PREFIX } from '@rivulet/contract';
import type { SqlStorage } from '../ports/storage.js';
import { BASE_RUN } from './key-runs.js';

export const COPY_CLAIMS_TABLE = `CREATE TABLE IF NOT EXISTS copy_claims (
     sid INTEGER NOT NULL,
     head TEXT NOT NULL,
     src_first INTEGER NOT NULL,
     count INTEGER NOT NULL,
     ofs_first INTEGER NOT NULL,
     PRIMARY KEY (sid, head, src_first)
   ) WITHOUT ROWID`;

const COPY_KEY_PREFIX = `${INTERNAL_IDEMPOTENCY_PREFIX}copy:`;

/** Whether a key is a copy's, claimed in copy_claims rather than in event_keys. */
export function isCopyKey(key: string | undefined): boolean {
  return key !== undefined && splitCopyKey(key) !== undefined;
}

/** A copy's key cut in two: what every copy of its run shares, and the source offset. */
export interface CopyKey {
  head: string;
  offset: number;
}

/**
 * The head and source offset of a copy's key; undefined for every other key (and for a key with
 * the copy prefix that does not end in `,<offset>]`, which is then an ordinary key).
 */
export function splitCopyKey(key: string): CopyKey | undefined {
  if (!key.startsWith(COPY_KEY_PREFIX) || key.charCodeAt(key.length - 1) !== 0x5d) return undefined;
  const comma = key.lastIndexOf(',');
  if (comma < 0 || comma + 2 >= key.length) return undefined;
  let offset = 0;
  for (let i = comma + 1; i < key.length - 1; i++) {
    const digit = key.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9 || (digit === 0 && offset === 0)) return undefined;
    offset = offset * 10 + digit;
  }
  return Number.isSafeInteger(offset) ? { head: key.slice(0, comma + 1), offset } : undefined;
}

/** A row of copy_claims. */
export interface CopyClaim {
  head: string;
  srcFirst: number;
  count: number;
  ofsFirst: number;
}

/**
 * The claims of `head` that may hold a source offset in [first, last]: the last one starting at
 * or below `first`, and every one starting up to `last`, in source order.
 */
const CLAIMS_NEAR = `SELECT src_first, count, ofs_first FROM copy_claims
  WHERE sid = ? AND head = ? AND src_first <= ?
    AND src_first >= coalesce((SELECT max(src_first) FROM copy_claims WHERE sid = ? AND head = ? AND src_first <= ?), ?)
  ORDER BY src_first`;

/**
 * Lengthens the run's last claim before a new one's first source offset by the new one's count when
 * the new one goes on from it in both offsets (the next batch of a drain, the next lone copy of a
 * live run): a run delivered batch after batch into a stream nothing else writes to is one row.
 */
const EXTEND = `UPDATE copy_claims SET count = count + ?
  WHERE sid = ? AND head = ? AND src_first = (SELECT max(src_first) FROM copy_claims WHERE sid = ? AND head = ? AND src_first < ?)
    AND src_first + count = ? AND ofs_first + count = ?`;

/**
 * Whether event_keys holds any key of a run (its head): copies written by format 6, whose keys
 * the upgrade to format 10 put in the base run (key-runs.ts).
 */
const LEGACY_KEYS = `SELECT 1 FROM event_keys WHERE sid = ? AND run = ${BASE_RUN} AND idem >= ? AND idem < ? LIMIT 1`;

export class CopyClaims {
  constructor(private readonly storage: SqlStorage) {}

  /** The claims of `head` in stream `sid` around the source offsets [first, last] (see CLAIMS_NEAR). */
  near(sid: number, head: string, first: number, last: number): CopyClaim[] {
    const rows = this.storage.execRows(CLAIMS_NEAR, sid, head, last, sid, head, first, first);
    return rows.map(([srcFirst, count, ofsFirst]) => ({ head, srcFirst: srcFirst as number, count: count as number, ofsFirst: ofsFirst as number }));
  }

  /** The offset in stream `sid` of the copy with this key, by its claim (unchecked); undefined when unclaimed. */
  offsetOf(sid: number, key: CopyKey): number | undefined {
    return offsetIn(this.near(sid, key.head, key.offset, key.offset), key.offset);
  }

  /** Whether event_keys holds a key of this run, written by format 6 (they are then looked up one by one). */
  hasLegacyKeys(sid: number, head: string): boolean {
    // Every key of the run starts with its head, which ends in ','; ',' + 1 is '-'.
    return this.storage.execRows(LEGACY_KEYS, sid, head, `${head.slice(0, -1)}-`).length > 0;
  }

  /**
   * Claims the copies of a batch if none of their source offsets is claimed and their runs have no
   * key in event_keys; answers false, having written nothing, otherwise (the caller then decides
   * again with the keys looked up one by one). `rows` in the order they are written.
   */
  claimIfFree(sid: number, claims: readonly CopyClaim[]): boolean {
    for (const claim of claims) {
      const last = claim.srcFirst + claim.count - 1;
      if (this.near(sid, claim.head, claim.srcFirst, last).some((c) => overlaps(c, claim.srcFirst, last))) return false;
    }
    const heads = new Set(claims.map((c) => c.head));
    for (const head of heads) if (this.hasLegacyKeys(sid, head)) return false;
    this.insert(sid, claims);
    return true;
  }

  /** Claims the copies of a batch that were looked up one by one and found unclaimed. */
  claim(sid: number, claims: readonly CopyClaim[]): void {
    this.insert(sid, claims);
  }

  /** Deletes the claims of stream `sid`, at most `maxRows` of them when given; answers how many. */
  deleteStream(sid: number, maxRows?: number): number {
    if (maxRows === undefined) return this.storage.run(`DELETE FROM copy_claims WHERE sid = ?`, sid);
    return this.storage.run(
      `DELETE FROM copy_claims WHERE sid = ? AND (head, src_first) IN (SELECT head, src_first FROM copy_claims WHERE sid = ? LIMIT ?)`,
      sid,
      sid,
      maxRows,
    );
  }

  /** Writes the claims, each lengthening the claim before it when it goes on from it (see EXTEND). */
  private insert(sid: number, claims: readonly CopyClaim[]): void {
    for (const c of claims) {
      if (this.storage.run(EXTEND, c.count, sid, c.head, sid, c.head, c.srcFirst, c.srcFirst, c.ofsFirst) === 0) {
        this.storage.run(`INSERT INTO copy_claims (sid, head, src_first, count, ofs_first) VALUES (?, ?, ?, ?, ?)`, sid, c.head, c.srcFirst, c.count, c.ofsFirst);
      }
    }
  }
}

/** The offset a claim among `claims` gives source offset `offset`; undefined when none holds it. */
export function offsetIn(claims: readonly CopyClaim[], offset: number): number | undefined {
  for (const c of claims) if (overlaps(c, offset, offset)) return c.ofsFirst + (offset - c.srcFirst);
  return undefined;
}

function overlaps(c: CopyClaim, first: number, last: number): boolean {
  return c.srcFirst <= last && c.srcFirst + c.count > first;
}

/**
 * The claims of copy rows, added in write order (ClaimsBuilder.add): a new claim wherever the head
 * changes or either offset does not go on by one. Source offsets of one head must increase (a batch
 * repeating one would claim it twice): otherwise `add` throws before anything is written. The
 * copies of a drain's batch share one head (the same string, when they are stored as parts), so a
 * copy costs a comparison or two and no object.
 */
export class ClaimsBuilder {
  readonly claims: CopyClaim[] = [];
  private open: CopyClaim | undefined;
  /** The last source offset of each head left behind, made when a batch has a second head. */
  private lastOf: Map<string, number> | undefined;

  add(head: string, srcOffset: number, offset: number): void {
    const open = this.open;
    if (open !== undefined && open.head === head) {
      const last = open.srcFirst + open.count - 1;
      if (srcOffset <= last) throw outOfOrder(srcOffset, last);
      if (srcOffset === last + 1 && open.ofsFirst + open.count === offset) {
        open.count++;
        return;
      }
    } else {
      if (open !== undefined) (this.lastOf ??= new Map()).set(open.head, open.srcFirst + open.count - 1);
      const before = this.lastOf?.get(head);
      if (before !== undefined && srcOffset <= before) throw outOfOrder(srcOffset, before);
    }
    this.open = { head, srcFirst: srcOffset, count: 1, ofsFirst: offset };
    this.claims.push(this.open);
  }
}

const outOfOrder = (offset: number, before: number) => new Error(`storage: copy key of source offset ${offset} follows ${before} in one batch`);
