/**
 * The read cache (read-cache.ts): pages cut from memory are the pages SQL gives, whatever the
 * stream holds (gaps, ephemeral events in and out of retention) and whatever the query asks; only
 * whole chunks below the head are held; memory stays within its bound; deletions forget.
 * First against a source over an array, then through StreamStore over both test adapters.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStorage } from '../adapters/memory/memory-storage.js';
import { SqliteStorage } from '../adapters/sqlite/sqlite-storage.js';
import type { SqlStorage } from '../ports/storage.js';
import { CHUNK_SEPARATOR, ReadCache, type ChunkSource } from './read-cache.js';
import { openSchema } from './schema.js';
import { StreamStore, type JoinedRange, type RangeQuery } from './stream-store.js';

interface Row {
  offset: number;
  ephemeral: boolean;
  createdMs: number;
  text: string;
}

/** A deterministic pseudo-random source (tests must not depend on Math.random). */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** What SQL answers for a page (stream-store.ts rangeSelect), over an array. */
function reference(rows: readonly Row[], q: RangeQuery): JoinedRange {
  const page = rows
    .filter((r) => r.offset > q.afterOffset && r.offset < q.beforeOffset)
    .filter((r) => !r.ephemeral || (q.includeEphemeral && (q.ephemeralSinceMs === undefined || r.createdMs >= q.ephemeralSinceMs)))
    .slice(0, q.limit);
  if (page.length === 0) return { count: 0, first: 0, last: 0, json: '' };
  return { count: page.length, first: page[0]!.offset, last: page.at(-1)!.offset, json: page.map((r) => r.text).join(',') };
}

/** A ChunkSource over an array, counting its loads. */
function arraySource(rows: readonly Row[]): ChunkSource & { loads: number } {
  const source = {
    loads: 0,
    rows(_sid: number, from: number, to: number) {
      source.loads++;
      const inRange = rows.filter((r) => r.offset >= from && r.offset < to);
      const ephemerals = inRange.filter((r) => r.ephemeral).map((r) => `${r.offset}:${r.createdMs}`);
      const textBytes = inRange.reduce((n, r) => n + Buffer.byteLength(r.text), 0);
      return { count: inRange.length, texts: inRange.map((r) => r.text).join(CHUNK_SEPARATOR), ephemerals: ephemerals.length ? ephemerals.join(',') : null, textBytes };
    },
    offsets: (_sid: number, from: number, to: number) => rows.filter((r) => r.offset >= from && r.offset < to).map((r) => r.offset),
  };
  return source;
}

/** Rows 1…count, texts of varied length and content, some ephemeral, some offsets missing. */
function makeRows(count: number, random: () => number, { gaps = true, ephemeral = true } = {}): Row[] {
  const rows: Row[] = [];
  for (let offset = 1; offset <= count; offset++) {
    const isEphemeral = ephemeral && random() < 0.15;
    // Deleted ephemeral events leave gaps.
    if (gaps && isEphemeral && random() < 0.3) continue;
    const note = ['a', 'é', '😀', ',', '"', '\\u001e'][Math.floor(random() * 6)]!.repeat(1 + Math.floor(random() * 20));
    rows.push({ offset, ephemeral: isEphemeral, createdMs: 1000 + offset, text: JSON.stringify({ offset, note }) });
  }
  return rows;
}

const query = (q: Partial<RangeQuery> & { afterOffset: number; beforeOffset: number }): RangeQuery => ({ limit: 500, includeEphemeral: false, ...q });

/**
 * A page as SQL would give it: its UTF-8 length, when the cache gives one, checked and left out
 * (SQL never knows it).
 */
function checked(page: JoinedRange | undefined): JoinedRange | undefined {
  if (page?.jsonBytes === undefined) return page;
  expect(page.jsonBytes).toBe(Buffer.byteLength(page.json));
  const { jsonBytes: _, ...rest } = page;
  return rest;
}

const read = (cache: ReadCache, sid: number, q: RangeQuery, source: ChunkSource) => checked(cache.page(sid, q, source));

/** A page read a second time: the first read of a page that lacks chunks only admits them (ReadCache.admit). */
function twice(cache: ReadCache, sid: number, q: RangeQuery, source: ChunkSource) {
  read(cache, sid, q, source);
  return read(cache, sid, q, source);
}

describe('ReadCache over an array', () => {
  it('cuts the pages SQL gives, for random streams and queries (gaps, ephemeral events, limits, heads)', () => {
    const random = seeded(7);
    for (let stream = 0; stream < 12; stream++) {
      const rows = makeRows(200 + Math.floor(random() * 2000), random, { gaps: stream % 3 !== 0, ephemeral: stream % 4 !== 0 });
      const cache = new ReadCache(64 * 1024 * 1024, 64);
      const source = arraySource(rows);
      const head = rows.at(-1)!.offset;
      let served = 0;
      for (let i = 0; i < 400; i++) {
        const afterOffset = Math.floor(random() * (head + 10)) - 5;
        // Half the pages end at the head, half below it (those a cache can serve more often).
        const below = afterOffset + 1 + Math.floor(random() * Math.max(1, head - afterOffset));
        const q = query({
          afterOffset,
          beforeOffset: random() < 0.5 ? head + 1 : Math.min(head + 1, below),
          limit: 1 + Math.floor(random() * 300),
          includeEphemeral: random() < 0.6,
          ephemeralSinceMs: random() < 0.5 ? 1000 + Math.floor(random() * head) : undefined,
        });
        for (const page of [read(cache, stream, q, source), read(cache, stream, q, source)]) {
          if (page === undefined) continue;
          served++;
          expect(page, JSON.stringify(q)).toEqual(reference(rows, q));
        }
      }
      // Many of these pages lie in whole chunks below the head: the cache served them.
      expect(served).toBeGreaterThan(100);
    }
  });

  it('serves a page only from whole chunks below the head: one that reaches the head chunk goes to SQL', () => {
    const rows = makeRows(1000, seeded(1), { gaps: false, ephemeral: false });
    const cache = new ReadCache(1024 * 1024, 100);
    const source = arraySource(rows);
    // Offsets 900…999 are one whole chunk when the head is 999 or more.
    expect(twice(cache, 1, query({ afterOffset: 899, beforeOffset: 1000 }), source)).toEqual(reference(rows, query({ afterOffset: 899, beforeOffset: 1000 })));
    // With the head at 998, that chunk is not whole: SQL, however often.
    expect(twice(cache, 1, query({ afterOffset: 899, beforeOffset: 999 }), source)).toBeUndefined();
    // A page whose last chunk is the head's goes to SQL too, even if it starts in a whole one.
    expect(twice(cache, 1, query({ afterOffset: 850, beforeOffset: 950 }), source)).toBeUndefined();
    expect(twice(cache, 1, query({ afterOffset: 850, beforeOffset: 900 }), source)).toEqual(reference(rows, query({ afterOffset: 850, beforeOffset: 900 })));
    expect(cache.stats()).toMatchObject({ hits: 3, misses: 5 });
  });

  it('loads a chunk when a second page starts in it, once, and cuts later pages from memory', () => {
    const rows = makeRows(2000, seeded(2), { gaps: false, ephemeral: false });
    const cache = new ReadCache(1024 * 1024, 512);
    const source = arraySource(rows);
    const pages = [10, 11, 12, 13, 14].map((afterOffset) => read(cache, 1, query({ afterOffset, beforeOffset: 2001 }), source));
    // The first page (11…510) went to SQL; the second loaded chunk 0, the third (13…512) chunk 1.
    expect(pages[0]).toBeUndefined();
    pages.slice(1).forEach((page, i) => expect(page).toEqual(reference(rows, query({ afterOffset: 11 + i, beforeOffset: 2001 }))));
    expect(source.loads).toBe(2);
  });

  it('leaves the cache alone on one pass in pages of 500, and fills it on the second', () => {
    const rows = makeRows(51_200, seeded(9), { gaps: false, ephemeral: false });
    const cache = new ReadCache(64 * 1024 * 1024, 512);
    const source = arraySource(rows);
    const pass = () => {
      let served = 0;
      for (let after = 0; after + 500 < 51_200; after += 500) if (read(cache, 1, query({ afterOffset: after, beforeOffset: 51_201 }), source)) served++;
      return served;
    };
    // 100 chunks; a second page starts in the same chunk only where a page starts in its first 12
    // offsets (2 of the 101 pages here): few loads, nearly every page read with SQL.
    expect(pass()).toBeLessThan(5);
    expect(source.loads).toBeLessThan(10);
    // Read again, every page's start is known: the pass loads what it reads and the third is all memory.
    pass();
    const loads = source.loads;
    expect(pass()).toBe(102);
    expect(source.loads).toBe(loads);
  });

  it('hides ephemeral events as SQL does: left out without includeEphemeral, and past retention', () => {
    const rows: Row[] = Array.from({ length: 64 }, (_, i) => ({ offset: i, ephemeral: i % 4 === 1, createdMs: i * 10, text: `{"o":${i}}` }));
    const cache = new ReadCache(1024 * 1024, 16);
    const source = arraySource(rows);
    for (const q of [
      query({ afterOffset: -1, beforeOffset: 64 }),
      query({ afterOffset: -1, beforeOffset: 64, includeEphemeral: true }),
      query({ afterOffset: 3, beforeOffset: 64, includeEphemeral: true, ephemeralSinceMs: 300 }),
      query({ afterOffset: 3, beforeOffset: 48, includeEphemeral: true, ephemeralSinceMs: 300, limit: 7 }),
    ]) {
      expect(twice(cache, 1, q, source)).toEqual(reference(rows, q));
    }
  });

  it('knows the UTF-8 length of a page whose chunks are ASCII only, and only then', () => {
    const rows: Row[] = Array.from({ length: 64 }, (_, i) => ({ offset: i, ephemeral: false, createdMs: 0, text: i === 40 ? '{"note":"é"}' : `{"o":${i}}` }));
    const cache = new ReadCache(1024 * 1024, 16);
    const source = arraySource(rows);
    // Offsets 0…31: chunks 0 and 1, ASCII.
    twice(cache, 1, query({ afterOffset: -1, beforeOffset: 64, limit: 32 }), source);
    const ascii = cache.page(1, query({ afterOffset: -1, beforeOffset: 64, limit: 32 }), source)!;
    expect(ascii.jsonBytes).toBe(ascii.json.length);
    // Offsets 32…47: chunk 2 holds "é" (two bytes in UTF-8): the length is left to count.
    twice(cache, 1, query({ afterOffset: 31, beforeOffset: 64, limit: 16 }), source);
    const other = cache.page(1, query({ afterOffset: 31, beforeOffset: 64, limit: 16 }), source)!;
    expect(other.count).toBe(16);
    expect(other.jsonBytes).toBeUndefined();
  });

  it('leaves pages with a type filter to SQL', () => {
    const rows = makeRows(100, seeded(4), { gaps: false, ephemeral: false });
    const cache = new ReadCache(1024 * 1024, 16);
    expect(twice(cache, 1, { ...query({ afterOffset: 0, beforeOffset: 96 }), eventTypes: ['a'] }, arraySource(rows))).toBeUndefined();
    expect(twice(cache, 1, { ...query({ afterOffset: 0, beforeOffset: 96 }), eventTypes: [] }, arraySource(rows))).toBeDefined();
  });

  it('never holds a chunk whose text contains the separator, and asks SQL for it only once', () => {
    const rows: Row[] = Array.from({ length: 32 }, (_, i) => ({ offset: i, ephemeral: false, createdMs: 0, text: i === 5 ? `{"bad":"${CHUNK_SEPARATOR}"}` : `{"o":${i}}` }));
    const cache = new ReadCache(1024 * 1024, 16);
    const source = arraySource(rows);
    expect(twice(cache, 1, query({ afterOffset: -1, beforeOffset: 16 }), source)).toBeUndefined();
    expect(twice(cache, 1, query({ afterOffset: 2, beforeOffset: 16 }), source)).toBeUndefined();
    expect(source.loads).toBe(1);
    // The next chunk is fine.
    expect(twice(cache, 1, query({ afterOffset: 15, beforeOffset: 32 }), source)).toEqual(reference(rows, query({ afterOffset: 15, beforeOffset: 32 })));
  });

  it('stays within its bound, dropping the least recently used chunk first', () => {
    const rows: Row[] = Array.from({ length: 4096 }, (_, i) => ({ offset: i, ephemeral: false, createdMs: 0, text: `{"offset":${i},"pad":"${'x'.repeat(80)}"}` }));
    const source = arraySource(rows);
    // About 100 bytes per event: a chunk of 64 is about 7 KB; room for about four.
    const cache = new ReadCache(30_000, 64);
    const pageOf = (chunk: number) => twice(cache, 1, query({ afterOffset: chunk * 64 - 1, beforeOffset: 4096, limit: 64 }), source);
    for (const chunk of [0, 1, 2, 3]) expect(pageOf(chunk)).toBeDefined();
    expect(cache.stats().chunks).toBe(4);
    pageOf(0); // chunk 0 is now the most recently used
    pageOf(4); // makes room: chunk 1 goes, 0 stays
    expect(cache.stats().bytes).toBeLessThanOrEqual(30_000);
    const loads = source.loads;
    pageOf(0);
    expect(source.loads).toBe(loads);
    pageOf(1);
    expect(source.loads).toBe(loads + 1);
    for (let chunk = 0; chunk < 64; chunk++) {
      expect(pageOf(chunk)).toEqual(reference(rows, query({ afterOffset: chunk * 64 - 1, beforeOffset: 4096, limit: 64 })));
      expect(cache.stats().bytes).toBeLessThanOrEqual(30_000);
    }
  });

  it('does not hold a chunk that alone would take more than a quarter of it', () => {
    const rows: Row[] = Array.from({ length: 32 }, (_, i) => ({ offset: i, ephemeral: false, createdMs: 0, text: `{"o":${i},"pad":"${'x'.repeat(i < 16 ? 10 : 1000)}"}` }));
    const cache = new ReadCache(16 * 1024 * 4, 16);
    const source = arraySource(rows);
    // A quarter is 16 KB. Chunk 0: 16 texts of about 30 characters, held. Chunk 1: 16 of about
    // 1 KB plus the per-event overhead, just over 16 KB: read with SQL, not held.
    expect(twice(cache, 1, query({ afterOffset: -1, beforeOffset: 32, limit: 16 }), source)).toBeDefined();
    expect(twice(cache, 1, query({ afterOffset: 15, beforeOffset: 32, limit: 16 }), source)).toBeUndefined();
    expect(cache.stats().chunks).toBe(1);
  });

  it('remembers the last 4096 chunks it could not hold, and tries the oldest again', () => {
    // Every chunk of 16 events of ~110 bytes is over a quarter of 4 KB: loaded, refused, remembered.
    const text = JSON.stringify({ pad: 'y'.repeat(100) });
    const source = {
      loads: 0,
      rows(_sid: number, from: number, to: number) {
        source.loads++;
        const n = to - from;
        return { count: n, texts: Array.from({ length: n }, () => text).join(CHUNK_SEPARATOR), ephemerals: null, textBytes: n * text.length };
      },
      offsets: (_sid: number, from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i),
    };
    const cache = new ReadCache(4096, 16);
    const chunkPage = (index: number) => query({ afterOffset: index * 16 - 1, beforeOffset: 1_000_000, limit: 16 });
    for (let index = 0; index <= 4096; index++) expect(twice(cache, 1, chunkPage(index), source)).toBeUndefined();
    expect(source.loads).toBe(4097);
    // The newest refusal is still remembered: read again, nothing is loaded.
    expect(twice(cache, 1, chunkPage(4096), source)).toBeUndefined();
    expect(source.loads).toBe(4097);
    // The oldest was dropped to keep the bound: it is loaded (and refused) once more.
    expect(twice(cache, 1, chunkPage(0), source)).toBeUndefined();
    expect(source.loads).toBe(4098);
    expect(cache.stats().chunks).toBe(0);
  });

  it('forgets one stream and only that one', () => {
    const rows = makeRows(200, seeded(5), { gaps: false, ephemeral: false });
    const cache = new ReadCache(1024 * 1024, 64);
    const a = arraySource(rows);
    const b = arraySource(rows);
    const q = query({ afterOffset: 0, beforeOffset: 192 });
    twice(cache, 1, q, a);
    twice(cache, 2, q, b);
    cache.forget(1);
    // Forgotten, stream 1 is as new: its page's start is not remembered either.
    expect(read(cache, 1, q, a)).toBeUndefined();
    twice(cache, 1, q, a);
    expect(read(cache, 2, q, b)).toBeDefined();
    expect([a.loads, b.loads]).toEqual([6, 3]);
    expect(cache.stats().chunks).toBe(6);
  });

  it('refuses a size that is not positive', () => {
    expect(() => new ReadCache(0)).toThrow('the read cache needs a positive size');
  });
});

describe.each(['SqliteStorage', 'MemoryStorage'])('ReadCache through StreamStore on %s', (name) => {
  const cleanups: Array<() => void> = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0).reverse()) cleanup();
  });

  async function storage(): Promise<SqlStorage> {
    let s: SqlStorage;
    if (name === 'SqliteStorage') {
      const dir = mkdtempSync(join(tmpdir(), 'rivulet-read-cache-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      s = new SqliteStorage(join(dir, 'data.sqlite'), { durability: 'relaxed' });
    } else s = await MemoryStorage.create();
    cleanups.push(() => s.close());
    openSchema(s);
    return s;
  }

  it(`reads the same pages with and without the cache, across appends, retention and a destroy (${name})`, async () => {
    const sql = await storage();
    const cache = new ReadCache(8 * 1024 * 1024);
    const cached = new StreamStore(sql, { readCache: cache });
    const plain = new StreamStore(sql);
    const random = seeded(11);
    const sid = sql.transaction(() => cached.create(null, '/a', 'stream-a', '2025-01-01T00:00:00.000Z'));
    const other = sql.transaction(() => cached.create(null, '/b', 'stream-b', '2025-01-01T00:00:00.000Z'));
    let head = 0;
    const append = (count: number) =>
      sql.transaction(() => {
        for (let i = 0; i < count; i++) {
          head++;
          const ephemeral = random() < 0.1;
          const json = JSON.stringify({ offset: head, type: 't', payload: { n: head, s: 'é😀,"'.repeat(1 + (head % 3)) } });
          const row = { offset: head, type: 't', ephemeral, idempotencyKey: undefined, createdMs: 1000 + head, json };
          cached.events.insert(sid, row);
          cached.events.insert(other, row);
        }
      });
    const compare = (rounds: number) => {
      for (let i = 0; i < rounds; i++) {
        const afterOffset = Math.floor(random() * head);
        const q: RangeQuery = {
          afterOffset,
          beforeOffset: head + 1,
          limit: [1, 100, 500][Math.floor(random() * 3)]!,
          includeEphemeral: random() < 0.5,
          ephemeralSinceMs: random() < 0.5 ? 1000 + Math.floor(random() * head) : undefined,
        };
        expect(checked(cached.events.rangeJoined(sid, q)), JSON.stringify(q)).toEqual(plain.events.rangeJoined(sid, q));
      }
    };
    append(1500);
    compare(150);
    append(700);
    compare(150);
    expect(cache.stats().hits).toBeGreaterThan(100);
    // Retention deletes ephemeral rows: the stream's chunks are forgotten, pages stay the same.
    const removed = sql.transaction(() => cached.events.pruneEphemeral(sid, 1000 + 1200, 0, head));
    expect(removed).toBeGreaterThan(0);
    expect(cache.stats().chunks).toBe(0);
    compare(150);
    // Stream b read through, page by page: every whole chunk below its head is held, and a
    // destroy forgets them (and only them).
    const held = cache.stats().chunks;
    const q = (afterOffset: number) => ({ afterOffset, beforeOffset: head + 1, limit: 500, includeEphemeral: true });
    for (let after = 0, page = plain.events.rangeJoined(other, q(0)); page.count > 0; after = page.last, page = plain.events.rangeJoined(other, q(after))) {
      // Read twice: one pass alone leaves the cache as it was (ReadCache.admit).
      expect(checked(cached.events.rangeJoined(other, q(after)))).toEqual(page);
      expect(checked(cached.events.rangeJoined(other, q(after)))).toEqual(page);
    }
    const ofOther = Math.floor((head + 1) / 512);
    expect(cache.stats().chunks).toBe(held + ofOther);
    sql.transaction(() => cached.erase(other));
    expect(cache.stats().chunks).toBe(held);
    expect(cached.events.rangeJoined(other, q(0))).toEqual({ count: 0, first: 0, last: 0, json: '' });
  });

  it(`a purged lifetime's sid, taken again by a new stream, reads only the new stream's events, even after a stray read of the old one (${name})`, async () => {
    const sql = await storage();
    const cache = new ReadCache(8 * 1024 * 1024);
    const cached = new StreamStore(sql, { readCache: cache, onDeferredErase: () => undefined });
    const plain = new StreamStore(sql);
    const fill = (sid: number, tag: string, count: number) =>
      sql.transaction(() => {
        for (let offset = 1; offset <= count; offset++) {
          const json = JSON.stringify({ offset, type: 't', payload: { tag } });
          cached.events.insert(sid, { offset, type: 't', ephemeral: false, idempotencyKey: undefined, createdMs: 1000 + offset, json });
        }
      });
    const q = (afterOffset: number) => ({ afterOffset, beforeOffset: 1501, limit: 500, includeEphemeral: false });
    /** Every page of the stream, each read twice (the second fills the cache). */
    const pages = (sid: number) => {
      const texts: string[] = [];
      for (let after = 0, page = cached.events.rangeJoined(sid, q(0)); page.count > 0; after = page.last, page = cached.events.rangeJoined(sid, q(after))) {
        expect(checked(cached.events.rangeJoined(sid, q(after)))).toEqual(plain.events.rangeJoined(sid, q(after)));
        texts.push(page.json);
      }
      return texts.join(',');
    };
    const old = sql.transaction(() => cached.create('tenant-a', '/secret', 'stream-old', '2025-01-01T00:00:00.000Z'));
    fill(old, 'old', 1500);
    pages(old);
    expect(cache.stats().chunks).toBeGreaterThan(0);
    // Destroyed, erased later: its rows stay until the purge, under its sid.
    sql.transaction(() => cached.erase(old));
    expect(cache.stats().chunks).toBe(0);
    // A reader that still holds the old sid reads it once more before the purge (none of the
    // engine's should: the actor forgets the sid at the destroy; the store must not rely on it).
    expect(pages(old)).toContain('"tag":"old"');
    while (cached.purgeErased(400));
    // SQLite hands the freed sid to the next stream (the old one had the highest).
    const fresh = sql.transaction(() => cached.create('tenant-b', '/public', 'stream-new', '2025-01-02T00:00:00.000Z'));
    expect(fresh).toBe(old);
    fill(fresh, 'new', 1500);
    const read = pages(fresh);
    expect(read).not.toContain('"tag":"old"');
    expect(read.split('"tag":"new"').length - 1).toBe(1500);
  });
});
