/**
 * The read cache: the stored texts of events read before, kept in memory so that pages read again
 * are cut from memory instead of being read with SQL (docs/architecture.md "Storage", the read cache).
 *
 * Events are held in chunks of READ_CACHE_CHUNK_EVENTS offsets: the texts of a chunk's events
 * joined by commas into one string, with where each begins. A page of a chunk's events is then one
 * substring of it (V8 makes that a slice, not a copy) unless an ephemeral event inside has to be
 * left out; a page across two chunks is two such pieces.
 *
 * What makes it safe:
 * - Only whole chunks below the committed head are held: those rows are durable and never change,
 *   and none can be added to them. A page that reaches into the head's own chunk is read with SQL.
 * - Rows are only ever deleted (ephemeral events past retention, destroyed lifetimes), and
 *   StreamStore forgets a stream's chunks whenever it deletes rows of a readable stream, and a
 *   destroyed lifetime's sid again when its purge frees it for the next stream.
 * - A type filter (`eventTypes`) needs a column the cache does not keep: those pages go to SQL.
 *
 * A page loads the chunks it lacks only when another page started in the same chunk recently
 * (admit): one pass through a stream leaves the cache alone. Memory is bounded by `maxBytes` (the
 * texts plus a few bytes per event), least recently used chunks going first; a chunk that would
 * take more than a quarter of it is not kept.
 */
import type { SqlStorage } from '../ports/storage.js';
import type { JoinedRange, RangeQuery } from './event-rows.js';
import { EVENT_BODY, EVENTS_WITH_RUNS } from './copy-rows.js';
import { EVENTS_BY_OFFSET } from './event-index.js';

/** The size the Node host gives it unless told (`--read-cache-mb`): 128 MiB. */
export const DEFAULT_READ_CACHE_BYTES = 128 * 1024 * 1024;
/** Offsets per chunk: a page of up to 500 events touches one or two. */
export const READ_CACHE_CHUNK_EVENTS = 512;
/** Chunks remembered as where a page started and lacked a chunk (admit). */
const RECENT_STARTS = 4096;
/** Chunks remembered as not to be held (too large, or the separator inside); the oldest is tried again. */
const REFUSED_CHUNKS = 4096;
/** What an event costs besides its text: its place in the chunk's index and the chunk's share. */
const EVENT_OVERHEAD_BYTES = 8;
/** Between the texts of a chunk as SQL joins them; JSON text never holds it unescaped. */
export const CHUNK_SEPARATOR = '\u001e';

/** A chunk as SQL gives it: its events' texts joined by CHUNK_SEPARATOR, and which are ephemeral. */
export interface ChunkRows {
  count: number;
  /** The texts in offset order, joined by CHUNK_SEPARATOR ('' when count is 0). */
  texts: string;
  /** The texts' UTF-8 length, all together (separators not counted). */
  textBytes: number;
  /** `offset:createdMs` of each ephemeral event, joined by commas; null when there is none. */
  ephemerals: string | null;
}

/** Where the cache reads stream `sid`'s rows `from <= offset < to`, in offset order. */
export interface ChunkSource {
  rows(sid: number, from: number, to: number): ChunkRows;
  /** The offsets that exist in the range (asked only when some are missing). */
  offsets(sid: number, from: number, to: number): number[];
}

/**
 * A chunk's rows as SQL gives them: the texts of every row of the range joined by
 * the separator, in offset order (the LIMIT keeps the inner ORDER BY, as in
 * EventRows.rangeJoined), and its ephemeral rows; the offsets only when some are missing.
 */
const chunkRows = (body: string, from: string) => `SELECT count(*), group_concat(body, char(${CHUNK_SEPARATOR.charCodeAt(0)})),
  group_concat(CASE WHEN ephemeral = 1 THEN ofs || ':' || created_ms END), coalesce(sum(length(CAST(body AS BLOB))), 0)
  FROM (SELECT x.ofs AS ofs, ${body} AS body, e.ephemeral AS ephemeral, e.created_ms AS created_ms FROM ${from}
    WHERE x.sid = ? AND x.ofs >= ? AND x.ofs < ? ORDER BY x.ofs LIMIT -1)`;
/** The chunk of a stream without copies stored as parts, and of one with them (copy-rows.ts). */
const CHUNK_ROWS = chunkRows('e.body', EVENTS_BY_OFFSET);
const CHUNK_ROWS_WITH_PARTS = chunkRows(EVENT_BODY, EVENTS_WITH_RUNS);
const CHUNK_OFFSETS = `SELECT ofs FROM event_index WHERE sid = ? AND ofs >= ? AND ofs < ? ORDER BY ofs`;

export function sqlChunkSource(storage: SqlStorage, hasParts: (sid: number) => boolean = () => true): ChunkSource {
  return {
    rows: (sid, from, to) => {
      const row = storage.execRows(hasParts(sid) ? CHUNK_ROWS_WITH_PARTS : CHUNK_ROWS, sid, from, to)[0]!;
      return { count: row[0] as number, texts: (row[1] as string | null) ?? '', ephemerals: row[2] as string | null, textBytes: row[3] as number };
    },
    offsets: (sid, from, to) => storage.execRows(CHUNK_OFFSETS, sid, from, to).map((row) => row[0] as number),
  };
}

interface Chunk {
  /** The texts joined by commas. */
  text: string;
  /** Event i's text is text[starts[i], starts[i + 1] - 1); count + 1 entries. */
  starts: Uint32Array;
  /** Event i's offset: the chunk's first offset + i when dense, else offsets[i]. */
  offsets: Float64Array | null;
  /** Creation times of the ephemeral events, by index; null when there is none. */
  ephemeral: Map<number, number> | null;
  /** Whether the text is ASCII only (its UTF-8 length is then its length). */
  ascii: boolean;
  bytes: number;
}

export interface ReadCacheStats {
  bytes: number;
  chunks: number;
  /** Pages answered from memory, and pages that went to SQL. */
  hits: number;
  misses: number;
}

export class ReadCache {
  private readonly chunks = new Map<string, Chunk>();
  /** Chunks SQL gave that cannot be held (too large, or a text held the separator), the last REFUSED_CHUNKS. */
  private readonly refused = new Set<string>();
  /** Chunks a page started in and lacked a chunk, recently (admit). */
  private readonly recentStarts = new Set<string>();
  /**
   * How many entries of the three above each stream has: forget, which retention calls from an
   * append whenever it deleted rows, returns at once for a stream the cache knows nothing of.
   */
  private readonly entries = new Map<number, number>();
  private bytes = 0;
  private hits = 0;
  private misses = 0;

  constructor(
    readonly maxBytes: number,
    private readonly chunkEvents = READ_CACHE_CHUNK_EVENTS,
  ) {
    if (!(maxBytes > 0)) throw new Error('the read cache needs a positive size');
  }

  /** The page `q` of stream `sid` from memory (loading chunks from `source`), or undefined: read SQL. */
  page(sid: number, q: RangeQuery, source: ChunkSource): JoinedRange | undefined {
    const page = this.cut(sid, q, source);
    if (page === undefined) this.misses++;
    else this.hits++;
    return page;
  }

  /** Drops what is held of stream `sid` (some of its rows were deleted). */
  forget(sid: number): void {
    if (!this.entries.delete(sid)) return;
    const prefix = `${sid}:`;
    for (const [key, chunk] of this.chunks) {
      if (!key.startsWith(prefix)) continue;
      this.bytes -= chunk.bytes;
      this.chunks.delete(key);
    }
    for (const key of this.refused) if (key.startsWith(prefix)) this.refused.delete(key);
    for (const key of this.recentStarts) if (key.startsWith(prefix)) this.recentStarts.delete(key);
  }

  stats(): ReadCacheStats {
    return { bytes: this.bytes, chunks: this.chunks.size, hits: this.hits, misses: this.misses };
  }

  private cut(sid: number, q: RangeQuery, source: ChunkSource): JoinedRange | undefined {
    if ((q.eventTypes !== undefined && q.eventTypes.length > 0) || q.limit <= 0) return undefined;
    let json: string | undefined;
    let ascii = true;
    // Pieces are concatenated, not joined: V8 links them and the answer's write copies them once.
    const piece = (text: string) => (json = json === undefined ? text : `${json},${text}`);
    let count = 0;
    let first = 0;
    let last = 0;
    const hidden = hiddenTest(q);
    const firstIndex = Math.floor((q.afterOffset + 1) / this.chunkEvents);
    // Whether this page may load the chunks it lacks: asked once, at its first missing chunk.
    let admitted: boolean | undefined;
    const mayLoad = () => (admitted ??= this.admit(`${sid}:${firstIndex}`));
    for (let index = firstIndex; count < q.limit; index++) {
      const start = index * this.chunkEvents;
      if (start >= q.beforeOffset) break;
      // Only whole chunks below the head: this one must end below beforeOffset.
      if (start + this.chunkEvents > q.beforeOffset) return undefined;
      const chunk = this.chunk(sid, index, start, source, mayLoad);
      if (chunk === undefined) return undefined;
      const n = chunk.starts.length - 1;
      let i = chunk.offsets === null ? Math.max(0, q.afterOffset + 1 - start) : firstAbove(chunk.offsets, q.afterOffset);
      // A run of events taken whole is one substring; an ephemeral event left out ends a run.
      let runFrom = -1;
      for (; i < n && count < q.limit; i++) {
        const createdMs = chunk.ephemeral?.get(i);
        if (createdMs !== undefined && hidden(createdMs)) {
          if (runFrom >= 0) piece(chunk.text.substring(chunk.starts[runFrom]!, chunk.starts[i]! - 1));
          runFrom = -1;
          continue;
        }
        const offset = chunk.offsets === null ? start + i : chunk.offsets[i]!;
        if (count === 0) first = offset;
        last = offset;
        count++;
        if (runFrom < 0) runFrom = i;
      }
      if (runFrom >= 0) piece(chunk.text.substring(chunk.starts[runFrom]!, chunk.starts[i]! - 1));
      ascii &&= chunk.ascii;
    }
    if (json === undefined) return { count: 0, first: 0, last: 0, json: '' };
    return ascii ? { count, first, last, json, jsonBytes: json.length } : { count, first, last, json };
  }

  /**
   * Whether a page that starts in chunk `key` and lacks a chunk may load it: when another page
   * started there recently. One pass through a stream in pages of 500 starts a second page in the
   * same chunk of 512 only now and then, so it reads with SQL and leaves the cache as it was
   * (filling it would cost that pass about as much again in loads and garbage collection:
   * docs/architecture.md "Pages read again come from memory"); pages read again, or many pages of
   * one chunk, load it.
   */
  private admit(key: string): boolean {
    const again = this.recentStarts.delete(key);
    this.recentStarts.add(key);
    if (!again) this.counted(key, 1);
    this.keepBound(this.recentStarts, RECENT_STARTS);
    return again;
  }

  /** Drops the oldest entries of `keys` beyond `max`. */
  private keepBound(keys: Set<string>, max: number): void {
    while (keys.size > max) {
      const oldest = keys.values().next().value as string;
      keys.delete(oldest);
      this.counted(oldest, -1);
    }
  }

  /** Counts an entry of the stream that `key` (`sid:index`) names in or out of `entries`. */
  private counted(key: string, change: 1 | -1): void {
    const sid = Number(key.slice(0, key.indexOf(':')));
    const n = (this.entries.get(sid) ?? 0) + change;
    if (n > 0) this.entries.set(sid, n);
    else this.entries.delete(sid);
  }

  /** Chunk `index` (offsets start … start + chunkEvents - 1), held or loaded; undefined if it is not to be loaded now or cannot be held. */
  private chunk(sid: number, index: number, start: number, source: ChunkSource, mayLoad: () => boolean): Chunk | undefined {
    const key = `${sid}:${index}`;
    const held = this.chunks.get(key);
    if (held !== undefined) {
      // Most recently used goes last.
      this.chunks.delete(key);
      this.chunks.set(key, held);
      return held;
    }
    if (this.refused.has(key) || !mayLoad()) return undefined;
    const end = start + this.chunkEvents;
    const chunk = loadChunk(source.rows(sid, start, end), start, end, () => source.offsets(sid, start, end));
    if (chunk === undefined || chunk.bytes > this.maxBytes / 4) {
      this.refused.add(key);
      this.counted(key, 1);
      this.keepBound(this.refused, REFUSED_CHUNKS);
      return undefined;
    }
    this.bytes += chunk.bytes;
    for (const [oldKey, old] of this.chunks) {
      if (this.bytes <= this.maxBytes) break;
      this.bytes -= old.bytes;
      this.chunks.delete(oldKey);
      this.counted(oldKey, -1);
    }
    this.chunks.set(key, chunk);
    this.counted(key, 1);
    return chunk;
  }
}

/** Whether an ephemeral event created at `createdMs` is left out of the page `q`. */
function hiddenTest(q: RangeQuery): (createdMs: number) => boolean {
  if (!q.includeEphemeral) return () => true;
  const since = q.ephemeralSinceMs;
  return since === undefined ? () => false : (createdMs) => createdMs < since;
}

/** A chunk from its rows; undefined if a text holds the separator (then it is never cut from memory). */
function loadChunk(rows: ChunkRows, start: number, end: number, offsetsOf: () => number[]): Chunk | undefined {
  const starts = new Uint32Array(rows.count + 1);
  let at = 0;
  for (let i = 0; i < rows.count; i++) {
    starts[i] = at;
    const next = rows.texts.indexOf(CHUNK_SEPARATOR, at);
    at = next < 0 ? rows.texts.length + 1 : next + 1;
    if ((next < 0) !== (i === rows.count - 1)) return undefined;
  }
  starts[rows.count] = rows.count === 0 ? 1 : at;
  const dense = rows.count === end - start;
  const offsets = dense ? null : Float64Array.from(offsetsOf());
  if (offsets !== null && offsets.length !== rows.count) return undefined;
  let ephemeral: Map<number, number> | null = null;
  if (rows.ephemerals !== null) {
    ephemeral = new Map();
    for (const pair of rows.ephemerals.split(',')) {
      const [offset, createdMs] = pair.split(':').map(Number) as [number, number];
      ephemeral.set(offsets === null ? offset - start : firstAbove(offsets, offset - 1), createdMs);
    }
  }
  const text = rows.count === 0 ? '' : rows.texts.replaceAll(CHUNK_SEPARATOR, ',');
  // ASCII only exactly when its UTF-8 length is its length in UTF-16 units (any other character
  // takes more bytes than units), separators counted on both sides.
  const ascii = rows.textBytes + Math.max(0, rows.count - 1) === text.length;
  return { text, starts, offsets, ephemeral, ascii, bytes: text.length + (rows.count + 1) * EVENT_OVERHEAD_BYTES + 64 };
}

/** The index of the first offset above `after` (offsets ascending). */
function firstAbove(offsets: Float64Array, after: number): number {
  let low = 0;
  let high = offsets.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (offsets[mid]! <= after) low = mid + 1;
    else high = mid;
  }
  return low;
}
