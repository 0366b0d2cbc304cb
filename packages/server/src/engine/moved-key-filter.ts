/**
 * Which idempotency keys `event_keys` may hold, per stream: Bloom filters over the moved keys, so
 * that a fresh key, the usual case, is known to be absent without a probe of event_keys
 * (docs/performance.md "Fresh keys known absent without a probe"; why these filters are written
 * here and not taken from a package: decision 013).
 *
 * A filter never forgets a key it was given, and it is given every key that goes into event_keys
 * after it was built: event-keys.ts, which holds every statement that writes that table, tells it
 * (`added`). So "not held" is certain; "may be held" sends the caller to event_keys, which decides.
 * A key whose entry is deleted or undone stays in its filter: a needless probe, never a missed key.
 * Filters are built from event_keys on a stream's first lookup, forgotten when its moved keys are
 * deleted (its sid may go to a new stream), and all dropped when the storage epoch changes (a failed
 * group commit undid writes they may have seen).
 *
 * Bounds: a stream with more than MAX_SCANNED_KEYS moved keys at its first lookup gets no filter,
 * and one that grows past MAX_FILTERED_KEYS is *over*: event-keys.ts then folds its runs of
 * event_keys into one (key-runs.ts) and drops its filter when that is done; till then the filter
 * answers and takes keys as before. A stream without a filter probes event_keys for every key, as
 * without filters. A filter starts sized for FIRST_CAPACITY keys (512 bytes) and adds a part
 * twice the size of the last whenever that one is full, each part at a lower false-positive rate,
 * so that their sum stays under about 1.6 %.
 */
import type { SqlStorage } from '../ports/storage.js';

export const FIRST_CAPACITY = 256;
export const MAX_SCANNED_KEYS = 262_144;
export const MAX_FILTERED_KEYS = 262_144;
/** The first part's false-positive rate; each further part's is this much of the one before. */
const FIRST_ERROR = 0.004;
const TIGHTENING = 0.75;

/**
 * A key's two 32-bit hashes over its UTF-16 code units (FNV-1a, and a multiply-xorshift mix of the
 * same units with another seed), each finished so that every bit depends on every unit.
 * Computed once per lookup and shared by every part of a filter (decision 013).
 */
function hashPair(key: string, out: Int32Array): void {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < key.length; i++) {
    const unit = key.charCodeAt(i);
    a = Math.imul(a ^ unit, 0x01000193);
    b = Math.imul(b ^ unit, 0x5bd1e995);
    b ^= b >>> 15;
  }
  a ^= a >>> 16;
  a = Math.imul(a, 0x85ebca6b);
  a ^= a >>> 13;
  b ^= b >>> 16;
  b = Math.imul(b, 0xc2b2ae35);
  b ^= b >>> 16;
  out[0] = a;
  out[1] = b;
}

/**
 * One part: a power-of-two count of 512-bit blocks (a cache line each). A key's first hash picks
 * its block, and its `k` bits are all in that block, at `h2 + i·step` (an odd step visits distinct
 * bits): a lookup touches one block of memory instead of `k` scattered words, which under load
 * was most of its cost (decision 013).
 */
class Part {
  private readonly words: Uint32Array;
  private readonly blockMask: number;

  constructor(
    capacity: number,
    error: number,
    private readonly k = Math.max(1, Math.ceil(Math.log2(1 / error))),
  ) {
    const wanted = Math.ceil((capacity * Math.log2(1 / error)) / Math.LN2);
    let blocks = 1;
    while (blocks * BLOCK_BITS < wanted) blocks *= 2;
    this.words = new Uint32Array(blocks * BLOCK_WORDS);
    this.blockMask = blocks - 1;
  }

  add(hash: Int32Array): void {
    this.probe(hash, true);
  }

  test(hash: Int32Array): boolean {
    return this.probe(hash, false);
  }

  /** Walks the key's `k` bits in its block: sets them all (`set`), or answers whether all are set. */
  private probe(hash: Int32Array, set: boolean): boolean {
    const base = (hash[0]! & this.blockMask) * BLOCK_WORDS;
    const step = (hash[0]! >>> 16) | 1;
    let at = hash[1]!;
    for (let i = 0; i < this.k; i++, at = (at + step) | 0) {
      const bit = at & (BLOCK_BITS - 1);
      const word = base + (bit >>> 5);
      const mask = 1 << (bit & 31);
      if (set) this.words[word]! |= mask;
      else if ((this.words[word]! & mask) === 0) return false;
    }
    return true;
  }
}

const BLOCK_BITS = 512;
const BLOCK_WORDS = BLOCK_BITS / 32;

/** The hashes of the key being looked at (one lookup or add at a time: the engine is synchronous here). */
const hash = new Int32Array(2);

/** One stream's filter: parts of doubling capacity, the last one filling. */
class KeyFilter {
  private readonly parts: Part[] = [];
  /** The last part's capacity, and the keys it holds. */
  private capacity = 0;
  private inLast = 0;
  private size = 0;

  constructor(private readonly firstCapacity: number) {}

  /** Adds `key`; answers false once it held MAX_FILTERED_KEYS before (a key added twice counts twice). */
  add(key: string): boolean {
    const over = this.size >= MAX_FILTERED_KEYS;
    if (this.inLast >= this.capacity) {
      this.capacity = this.parts.length === 0 ? this.firstCapacity : this.capacity * 2;
      this.parts.push(new Part(this.capacity, FIRST_ERROR * TIGHTENING ** this.parts.length));
      this.inLast = 0;
    }
    hashPair(key, hash);
    this.parts[this.parts.length - 1]!.add(hash);
    this.inLast++;
    this.size++;
    return !over;
  }

  mayHold(key: string): boolean {
    hashPair(key, hash);
    for (const part of this.parts) if (part.test(hash)) return true;
    return false;
  }
}

const SCAN = `SELECT idem FROM event_keys WHERE sid = ? LIMIT ?`;

export class MovedKeyFilters {
  /** Per stream: its filter, or null when it has none (too many keys). Absent: not built yet. */
  private readonly streams = new Map<number, KeyFilter | null>();
  /** Streams whose filter holds more than MAX_FILTERED_KEYS: to be dropped once their runs are folded. */
  private readonly over = new Set<number>();
  private epoch: number;

  constructor(private readonly storage: SqlStorage) {
    this.epoch = storage.epoch;
  }

  /** False when event_keys certainly holds no entry for `key` in stream `sid`; true when it may. */
  mayHold(sid: number, key: string): boolean {
    if (this.storage.epoch !== this.epoch) {
      this.streams.clear();
      this.over.clear();
      this.epoch = this.storage.epoch;
    }
    let filter = this.streams.get(sid);
    if (filter === undefined) this.streams.set(sid, (filter = this.build(sid)));
    return filter === null || filter.mayHold(key);
  }

  /** Whether stream `sid` is known to have too many keys for a filter: none, or one over MAX_FILTERED_KEYS. */
  unfiltered(sid: number): boolean {
    return this.epoch === this.storage.epoch && (this.streams.get(sid) === null || this.over.has(sid));
  }

  /** Drops the filter of a stream that is over MAX_FILTERED_KEYS (its runs were folded into one): it probes every key from now on. */
  drop(sid: number): void {
    if (this.epoch !== this.storage.epoch || !this.over.delete(sid)) return;
    this.streams.set(sid, null);
  }

  /** `key` was just written into event_keys for stream `sid` (or is about to be, in this synchronous step). */
  added(sid: number, key: string): void {
    const filter = this.streams.get(sid);
    if (filter && !filter.add(key)) this.over.add(sid);
  }

  /** The moved keys of stream `sid` were deleted (some or all): its filter is built again when next needed. */
  forget(sid: number): void {
    this.streams.delete(sid);
    this.over.delete(sid);
  }

  private build(sid: number): KeyFilter | null {
    const rows = this.storage.execRows(SCAN, sid, MAX_SCANNED_KEYS + 1);
    if (rows.length > MAX_SCANNED_KEYS) return null;
    let capacity = FIRST_CAPACITY;
    while (capacity < rows.length * 2) capacity *= 2;
    const filter = new KeyFilter(capacity);
    for (const [key] of rows) filter.add(key as string);
    return filter;
  }
}
