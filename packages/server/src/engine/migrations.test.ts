/**
 * The storage format check and upgrades (schema.ts, migrations.ts, protocol §16.4): a new database
 * records the current format; an older upgradable one is told to `beforeUpgrade` and upgraded
 * step by step, each step with the format it reached; a newer one, or one older than any step, is
 * refused naming both formats and left as it was; a failing step leaves the format it had.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RivuletError } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStorage } from '../adapters/sqlite/sqlite-storage.js';
import { MIGRATIONS, OLDEST_UPGRADABLE_FORMAT, runMigrations, type Migration } from './migrations.js';
import { FORMAT_VERSION, openSchema, storedFormat } from './schema.js';
import { EventRows } from './event-rows.js';
import { restoreKeyTable } from '../../test/storage-checks-upgrade.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function open(): SqliteStorage {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-migrations-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const storage = new SqliteStorage(join(dir, 'data.sqlite'), { durability: 'relaxed', groupCommit: false });
  cleanups.push(() => storage.close());
  return storage;
}

/** A database that records `format` and nothing else. */
function recording(format: string): SqliteStorage {
  const storage = open();
  storage.transaction(() => {
    storage.run(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
    storage.run(`INSERT INTO meta (key, value) VALUES ('format', ?)`, format);
  });
  return storage;
}

function thrown(fn: () => void): RivuletError {
  try {
    fn();
  } catch (error) {
    if (error instanceof RivuletError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

/**
 * Takes what format 9 changed away again: the connection's tail, its triggers and view, and
 * event_offsets go; the events table gets its (sid, ofs) index back (format 8's layout).
 */
function restoreOffsetIndex(storage: SqliteStorage): void {
  storage.run(`DROP TRIGGER temp.events_offset_insert`);
  storage.run(`DROP TRIGGER temp.events_offset_delete`);
  storage.run(`DROP VIEW temp.event_index`);
  storage.run(`DROP TABLE temp.tail_offsets`);
  storage.run(`DROP TABLE event_offsets`);
  storage.run(`CREATE UNIQUE INDEX events_by_offset ON events (sid, ofs)`);
}

/** Takes what formats 8 to 10 added away again: a database of the current schema made into format 7's layout. */
function dropCopyRuns(storage: SqliteStorage): void {
  restoreKeyTable(storage);
  restoreOffsetIndex(storage);
  storage.run(`DROP TABLE copy_runs`);
  storage.run(`ALTER TABLE events DROP COLUMN copy_run`);
  storage.run(`ALTER TABLE events DROP COLUMN src_ofs`);
}

const tables = (storage: SqliteStorage) => storage.exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).map((r) => r.name);

describe('storage format check and upgrades (protocol §16.4)', () => {
  it('a new database records the current format, and opens again without an upgrade', () => {
    expect(FORMAT_VERSION).toBe(10);
    const storage = open();
    expect(storedFormat(storage)).toBeNull();
    const upgrades: number[] = [];
    openSchema(storage, { beforeUpgrade: (from) => upgrades.push(from) });
    openSchema(storage, { beforeUpgrade: (from) => upgrades.push(from) });
    expect(storedFormat(storage)).toBe(10);
    expect(upgrades).toEqual([]);
  });

  it('every format from the oldest upgradable one up to the current has exactly one step', () => {
    expect(MIGRATIONS.map((m) => m.from)).toEqual(Array.from({ length: FORMAT_VERSION - OLDEST_UPGRADABLE_FORMAT }, (_, i) => OLDEST_UPGRADABLE_FORMAT + i));
  });

  it('format 2 is upgraded: beforeUpgrade hears (2, 10) before anything changes, then rows and meta say 10', () => {
    const storage = recording('2');
    storage.transaction(() => {
      storage.run(`CREATE TABLE streams (sid INTEGER PRIMARY KEY, project TEXT NOT NULL, path TEXT NOT NULL, stream_id TEXT NOT NULL,
        created_at TEXT NOT NULL, head INTEGER NOT NULL, event_count INTEGER NOT NULL, max_offset INTEGER NOT NULL, state TEXT NOT NULL,
        format INTEGER NOT NULL, UNIQUE (project, path))`);
      storage.run(`INSERT INTO streams VALUES (1, '', '/a', 'id', 't', 7, 6, 7, '{}', 2)`);
    });
    const seen: Array<[number, number, number | null]> = [];
    openSchema(storage, { beforeUpgrade: (from, to) => seen.push([from, to, storedFormat(storage)]) });
    expect(seen).toEqual([[2, 10, 2]]);
    expect(storedFormat(storage)).toBe(10);
    expect(storage.exec(`SELECT head, event_count, max_offset, format FROM streams`)).toEqual([{ head: 7, event_count: 6, max_offset: 7, format: 10 }]);
  });

  /** A database of the current schema made into the layout of format 4 (idem index on (sid, idem), no key table) with keyed rows. */
  function format4(): SqliteStorage {
    const storage = open();
    openSchema(storage);
    storage.transaction(() => {
      dropCopyRuns(storage);
      storage.run(`DROP TABLE event_keys`);
      storage.run(`DROP TABLE copy_claims`);
      storage.run(`DELETE FROM meta WHERE key = 'keys_moved'`);
      storage.run(`CREATE UNIQUE INDEX events_by_idem ON events (sid, idem) WHERE idem IS NOT NULL`);
      storage.run(`INSERT INTO streams VALUES (1, '', '/a', 'id-a', 't', 0, 0, 0, '{}', 4), (2, '', '/b', 'id-b', 't', 0, 0, 0, '{}', 4)`);
      const insert = `INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (?, ?, 'x', 0, ?, 0, ?)`;
      storage.run(insert, 1, 1, 'k1', '{"offset":1}');
      storage.run(insert, 1, 2, null, '{"offset":2}');
      storage.run(insert, 2, 1, 'k1', '{"offset":1,"b":true}');
      storage.run(`UPDATE meta SET value = '4' WHERE key = 'format'`);
    });
    return storage;
  }

  it('format 4 is upgraded through 5 to 9 and 10: the keys leave the index for event_keys, every row and key stays, a repeat is still found', () => {
    const storage = format4();
    const seen: number[][] = [];
    openSchema(storage, { beforeUpgrade: (from, to) => seen.push([from, to]) });
    expect(seen).toEqual([[4, 10]]);
    expect(storedFormat(storage)).toBe(10);
    expect(storage.exec(`SELECT format FROM streams ORDER BY sid`)).toEqual([{ format: 10 }, { format: 10 }]);
    expect(storage.exec(`SELECT name FROM sqlite_master WHERE name = 'events_by_idem'`)).toEqual([]);
    expect(storage.exec(`SELECT sid, ofs, idem FROM events ORDER BY sid, ofs`)).toEqual([
      { sid: 1, ofs: 1, idem: 'k1' },
      { sid: 1, ofs: 2, idem: null },
      { sid: 2, ofs: 1, idem: 'k1' },
    ]);
    // Every key moved (the watermark at the highest rowid): nothing is left for memory to load.
    // Format 10 put them in the base run.
    expect(storage.exec(`SELECT sid, run, idem, ofs FROM event_keys ORDER BY sid`)).toEqual([
      { sid: 1, run: 15, idem: 'k1', ofs: 1 },
      { sid: 2, run: 15, idem: 'k1', ofs: 1 },
    ]);
    expect(storage.exec(`SELECT value FROM meta WHERE key = 'keys_moved'`)).toEqual([{ value: '3' }]);
    // The engine finds the old keys, each in its own stream only.
    const rows = new EventRows(storage, undefined);
    expect(rows.byKey(1, 'k1')).toEqual({ offset: 1 });
    expect(rows.byKeys(2, ['k1', 'k2'])).toEqual(new Map([['k1', { offset: 1, b: true }]]));
    const row = { type: 'x', ephemeral: false, idempotencyKey: 'k1', createdMs: 0, json: '{}' };
    expect(rows.insertIfNewKeys(1, [{ ...row, offset: 3 }])).toBe(false);
    expect(rows.insertIfNewKeys(3, [{ ...row, offset: 1 }])).toBe(true);
    expect(rows.insertIfNewKeys(3, [{ ...row, offset: 2 }])).toBe(false);
  });

  it('format 6 is upgraded through 7, 8 and 9 to 10: an empty claim table; copies written before keep their keys in event_keys, where a redelivery still meets them', () => {
    const storage = open();
    openSchema(storage);
    const key = (source: number) => `rivulet-internal/copy:["sub",2,null,"/src","id-src",${source}]`;
    storage.transaction(() => {
      storage.run(`DROP TABLE copy_claims`);
      dropCopyRuns(storage);
      storage.run(`INSERT INTO streams VALUES (1, '', '/dst', 'id-dst', 't', 0, 0, 0, '{}', 6)`);
      storage.run(`INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (1, 1, 'x', 0, ?, 0, ?)`, key(5), JSON.stringify({ offset: 1, idempotencyKey: key(5) }));
      storage.run(`INSERT INTO event_keys (sid, idem, ofs) VALUES (1, ?, 1)`, key(5));
      storage.run(`UPDATE meta SET value = '6' WHERE key = 'format'`);
    });
    const seen: number[][] = [];
    openSchema(storage, { beforeUpgrade: (from, to) => seen.push([from, to]) });
    expect(seen).toEqual([[6, 10]]);
    expect(storage.exec(`SELECT format FROM streams`)).toEqual([{ format: 10 }]);
    expect(storage.exec(`SELECT count(*) AS n FROM copy_claims`)).toEqual([{ n: 0 }]);
    const rows = new EventRows(storage, undefined);
    expect(rows.byKey(1, key(5))).toEqual({ offset: 1, idempotencyKey: key(5) });
    const copy = (offset: number, source: number) => ({ offset, type: 'x', ephemeral: false, idempotencyKey: key(source), createdMs: 0, json: JSON.stringify({ offset, idempotencyKey: key(source) }) });
    expect(() => rows.insertAll(1, [copy(2, 5)])).toThrow('is stored in stream 1 already');
    rows.insertAll(1, [copy(2, 6)]);
    expect(storage.exec(`SELECT src_first, count, ofs_first FROM copy_claims`)).toEqual([{ src_first: 6, count: 1, ofs_first: 2 }]);
  });

  it('format 7 is upgraded through 8 and 9 to 10: two empty columns and a run table; copies written before read back as they were stored', () => {
    const storage = open();
    openSchema(storage);
    const body = JSON.stringify({ path: '/dst', offset: 1, type: 'x', idempotencyKey: 'rivulet-internal/copy:["s",2,null,"/src","id",5]' });
    storage.transaction(() => {
      dropCopyRuns(storage);
      storage.run(`INSERT INTO streams VALUES (1, '', '/dst', 'id-dst', 't', 0, 0, 0, '{}', 7)`);
      storage.run(`INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (1, 1, 'x', 0, NULL, 0, ?)`, body);
      storage.run(`UPDATE meta SET value = '7' WHERE key = 'format'`);
    });
    const seen: number[][] = [];
    openSchema(storage, { beforeUpgrade: (from, to) => seen.push([from, to]) });
    expect(seen).toEqual([[7, 10]]);
    expect(storage.exec(`SELECT format FROM streams`)).toEqual([{ format: 10 }]);
    expect(storage.exec(`SELECT copy_run, src_ofs FROM events`)).toEqual([{ copy_run: null, src_ofs: null }]);
    expect(storage.exec(`SELECT count(*) AS n FROM copy_runs`)).toEqual([{ n: 0 }]);
    const rows = new EventRows(storage, undefined);
    expect(rows.range(1, { afterOffset: 0, beforeOffset: 10, limit: 10, includeEphemeral: false })).toEqual([{ offset: 1, json: body }]);
  });

  it('format 8 is upgraded through 9 to 10: the (sid, ofs) index gives way to event_offsets up to the watermark and the tail past it; every row reads back, by offset and by key', () => {
    const storage = open();
    openSchema(storage);
    const insert = `INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (?, ?, 'x', 0, ?, 0, ?)`;
    storage.transaction(() => {
      restoreKeyTable(storage);
      restoreOffsetIndex(storage);
      storage.run(`INSERT INTO streams VALUES (1, '', '/a', 'id-a', 't', 0, 0, 0, '{}', 8), (2, '', '/b', 'id-b', 't', 0, 0, 0, '{}', 8)`);
      // Rows 1-3 at or below the watermark (their keys moved), rows 4-5 past it.
      storage.run(insert, 1, 1, 'k1', '{"offset":1}');
      storage.run(insert, 2, 1, null, '{"offset":1,"b":true}');
      storage.run(insert, 1, 2, null, '{"offset":2}');
      storage.run(`INSERT INTO event_keys (sid, idem, ofs) VALUES (1, 'k1', 1)`);
      storage.run(`UPDATE meta SET value = '3' WHERE key = 'keys_moved'`);
      storage.run(insert, 1, 3, 'k3', '{"offset":3}');
      storage.run(insert, 2, 2, null, '{"offset":2,"b":true}');
      storage.run(`UPDATE meta SET value = '8' WHERE key = 'format'`);
    });
    const seen: number[][] = [];
    openSchema(storage, { beforeUpgrade: (from, to) => seen.push([from, to]) });
    expect(seen).toEqual([[8, 10]]);
    expect(storedFormat(storage)).toBe(10);
    expect(storage.exec(`SELECT format FROM streams ORDER BY sid`)).toEqual([{ format: 10 }, { format: 10 }]);
    expect(storage.exec(`SELECT name FROM sqlite_master WHERE name = 'events_by_offset'`)).toEqual([]);
    expect(storage.exec(`SELECT sid, ofs, rid FROM event_offsets ORDER BY sid, ofs`)).toEqual([
      { sid: 1, ofs: 1, rid: 1 },
      { sid: 1, ofs: 2, rid: 3 },
      { sid: 2, ofs: 1, rid: 2 },
    ]);
    expect(storage.exec(`SELECT sid, ofs, rid FROM tail_offsets ORDER BY sid, ofs`)).toEqual([
      { sid: 1, ofs: 3, rid: 4 },
      { sid: 2, ofs: 2, rid: 5 },
    ]);
    const rows = new EventRows(storage, undefined);
    const all = { afterOffset: 0, beforeOffset: 10, limit: 10, includeEphemeral: false };
    expect(rows.range(1, all).map((e) => e.offset)).toEqual([1, 2, 3]);
    expect(rows.range(2, all).map((e) => e.json)).toEqual(['{"offset":1,"b":true}', '{"offset":2,"b":true}']);
    expect(rows.byKey(1, 'k1')).toEqual({ offset: 1 });
    expect(rows.byKey(1, 'k3')).toEqual({ offset: 3 });
    // An offset stored on either side of the watermark is refused again.
    const row = { type: 'x', ephemeral: false, idempotencyKey: undefined, createdMs: 0, json: '{}' };
    expect(() => rows.insert(1, { ...row, offset: 2 })).toThrow('UNIQUE constraint failed');
    expect(() => rows.insert(1, { ...row, offset: 3 })).toThrow('UNIQUE constraint failed');
    rows.insert(1, { ...row, offset: 4 });
    expect(rows.range(1, all).map((e) => e.offset)).toEqual([1, 2, 3, 4]);
  });

  it('format 9 is upgraded to 10: event_keys gets runs, its entries and the keys past the watermark the base run; every key is found, a copy of format 6 met again', () => {
    const storage = open();
    openSchema(storage);
    const insert = `INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (?, ?, 'x', 0, ?, 0, ?)`;
    const copyKey = (source: number) => `rivulet-internal/copy:["sub",2,null,"/src","id-src",${source}]`;
    storage.transaction(() => {
      restoreKeyTable(storage);
      storage.run(`INSERT INTO streams VALUES (1, '', '/a', 'id-a', 't', 0, 0, 0, '{}', 9), (2, '', '/b', 'id-b', 't', 0, 0, 0, '{}', 9)`);
      // Rows 1-2 at or below the watermark (their keys moved), rows 3-4 past it, one of them a copy as format 6 wrote it.
      storage.run(insert, 1, 1, 'k1', '{"offset":1}');
      storage.run(insert, 2, 1, 'k1', '{"offset":1,"b":true}');
      storage.run(`INSERT INTO event_keys (sid, idem, ofs) VALUES (1, 'k1', 1), (2, 'k1', 1)`);
      storage.run(`UPDATE meta SET value = '2' WHERE key = 'keys_moved'`);
      storage.run(insert, 1, 2, 'k2', '{"offset":2}');
      storage.run(insert, 1, 3, copyKey(5), JSON.stringify({ offset: 3, idempotencyKey: copyKey(5) }));
      storage.run(`UPDATE meta SET value = '9' WHERE key = 'format'`);
    });
    const seen: number[][] = [];
    openSchema(storage, { beforeUpgrade: (from, to) => seen.push([from, to]) });
    expect(seen).toEqual([[9, 10]]);
    expect(storage.exec(`SELECT format FROM streams ORDER BY sid`)).toEqual([{ format: 10 }, { format: 10 }]);
    expect(storage.exec(`SELECT sid, run, idem, ofs FROM event_keys ORDER BY sid, idem`)).toEqual([
      { sid: 1, run: 15, idem: 'k1', ofs: 1 },
      { sid: 1, run: 15, idem: 'k2', ofs: 2 },
      { sid: 1, run: 15, idem: copyKey(5), ofs: 3 },
      { sid: 2, run: 15, idem: 'k1', ofs: 1 },
    ]);
    expect(storage.exec(`SELECT value FROM meta WHERE key IN ('keys_moved', 'key_gen') ORDER BY key`)).toEqual([{ value: '1' }, { value: '2' }]);
    const rows = new EventRows(storage, undefined);
    const row = { type: 'x', ephemeral: false, createdMs: 0, json: '{}' };
    const copy = (offset: number, source: number) => ({ ...row, offset, idempotencyKey: copyKey(source), json: JSON.stringify({ offset, idempotencyKey: copyKey(source) }) });
    for (const when of ['before a move', 'after a move']) {
      expect([when, rows.byKey(1, 'k1'), rows.byKey(1, 'k2'), rows.byKey(2, 'k1')]).toEqual([when, { offset: 1 }, { offset: 2 }, { offset: 1, b: true }]);
      expect([when, rows.insertIfNewKeys(1, [{ ...row, offset: 4, idempotencyKey: 'k2' }])]).toEqual([when, false]);
      // A batch repeating the copy takes the quick path only if nothing marks the run as one with old keys.
      let quick: boolean | undefined;
      try {
        storage.transaction(() => {
          quick = rows.insertIfNewKeys(1, [copy(4, 5), copy(5, 6)]);
          throw new Error('undone');
        });
      } catch {
        // undone either way
      }
      expect([when, quick]).toEqual([when, false]);
      rows.keys.move();
    }
  });

  it('a beforeUpgrade that throws stops the upgrade with nothing changed', () => {
    const storage = recording('2');
    expect(() =>
      openSchema(storage, {
        beforeUpgrade: () => {
          throw new Error('disk full');
        },
      }),
    ).toThrow('disk full');
    expect(storedFormat(storage)).toBe(2);
    expect(tables(storage)).toEqual(['meta']);
  });

  it('a newer format is refused naming both formats, and left as it was', () => {
    const storage = recording('11');
    const error = thrown(() => openSchema(storage, { beforeUpgrade: () => expect.unreachable() }));
    expect([error.code, error.message]).toEqual([
      'UNAVAILABLE',
      'this data was written by storage format 11, newer than format 10 that this server reads: run a Rivulet release that reads format 11 (the one that wrote it, or later) on it. Nothing was changed.',
    ]);
    expect(tables(storage)).toEqual(['meta']);
    expect(storedFormat(storage)).toBe(11);
  });

  for (const found of ['1', 'x']) {
    it(`format "${found}", older than any step, is refused naming both formats, and left as it was`, () => {
      const storage = recording(found);
      const error = thrown(() => openSchema(storage));
      expect([error.code, error.message]).toEqual([
        'UNAVAILABLE',
        `this data was written by storage format ${Number(found)}; this server reads format 10 and upgrades only formats 2 and later. ` +
          'Nothing was changed: export what you need, erase the data folder (or point --data at a new one), and recreate the streams through the API.',
      ]);
      expect(tables(storage)).toEqual(['meta']);
    });
  }

  it('steps run in order, each committing the format it reached; a failing step leaves the last one reached', () => {
    const storage = recording('5');
    const ran: number[] = [];
    const step = (from: number, fail = false): Migration => ({
      from,
      summary: `step ${from}`,
      apply: (s) => {
        ran.push(from);
        s.run(`CREATE TABLE t${from} (x)`);
        if (fail) throw new Error(`step ${from} failed`);
      },
    });
    expect(() => runMigrations(storage, 5, 8, [step(7, true), step(5), step(6)])).toThrow('step 7 failed');
    expect(ran).toEqual([5, 6, 7]);
    expect(storedFormat(storage)).toBe(7);
    expect(tables(storage)).toEqual(['meta', 't5', 't6']);
    expect(() => runMigrations(storage, 7, 9, [step(7)])).toThrow('storage: no upgrade step from format 8');
    expect(storedFormat(storage)).toBe(8);
  });
});
