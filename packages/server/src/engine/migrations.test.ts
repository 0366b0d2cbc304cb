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

const tables = (storage: SqliteStorage) => storage.exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).map((r) => r.name);

describe('storage format check and upgrades (protocol §16.4)', () => {
  it('a new database records the current format, and opens again without an upgrade', () => {
    expect(FORMAT_VERSION).toBe(5);
    const storage = open();
    expect(storedFormat(storage)).toBeNull();
    const upgrades: number[] = [];
    openSchema(storage, { beforeUpgrade: (from) => upgrades.push(from) });
    openSchema(storage, { beforeUpgrade: (from) => upgrades.push(from) });
    expect(storedFormat(storage)).toBe(5);
    expect(upgrades).toEqual([]);
  });

  it('every format from the oldest upgradable one up to the current has exactly one step', () => {
    expect(MIGRATIONS.map((m) => m.from)).toEqual(Array.from({ length: FORMAT_VERSION - OLDEST_UPGRADABLE_FORMAT }, (_, i) => OLDEST_UPGRADABLE_FORMAT + i));
  });

  it('format 2 is upgraded: beforeUpgrade hears (2, 5) before anything changes, then rows and meta say 5', () => {
    const storage = recording('2');
    storage.transaction(() => {
      storage.run(`CREATE TABLE streams (sid INTEGER PRIMARY KEY, project TEXT NOT NULL, path TEXT NOT NULL, stream_id TEXT NOT NULL,
        created_at TEXT NOT NULL, head INTEGER NOT NULL, event_count INTEGER NOT NULL, max_offset INTEGER NOT NULL, state TEXT NOT NULL,
        format INTEGER NOT NULL, UNIQUE (project, path))`);
      storage.run(`INSERT INTO streams VALUES (1, '', '/a', 'id', 't', 7, 6, 7, '{}', 2)`);
    });
    const seen: Array<[number, number, number | null]> = [];
    openSchema(storage, { beforeUpgrade: (from, to) => seen.push([from, to, storedFormat(storage)]) });
    expect(seen).toEqual([[2, 5, 2]]);
    expect(storedFormat(storage)).toBe(5);
    expect(storage.exec(`SELECT head, event_count, max_offset, format FROM streams`)).toEqual([{ head: 7, event_count: 6, max_offset: 7, format: 5 }]);
  });

  it('format 4 is upgraded: the idempotency index becomes (idem, sid), every row and key stays, uniqueness holds', () => {
    const storage = open();
    openSchema(storage);
    // Make it the format-4 layout: the old index and the old format numbers.
    storage.transaction(() => {
      storage.run(`DROP INDEX events_by_idem`);
      storage.run(`CREATE UNIQUE INDEX events_by_idem ON events (sid, idem) WHERE idem IS NOT NULL`);
      storage.run(`INSERT INTO streams VALUES (1, '', '/a', 'id-a', 't', 0, 0, 0, '{}', 4), (2, '', '/b', 'id-b', 't', 0, 0, 0, '{}', 4)`);
      const insert = `INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (?, ?, 'x', 0, ?, 0, '{}')`;
      storage.run(insert, 1, 1, 'k1');
      storage.run(insert, 1, 2, null);
      storage.run(insert, 2, 1, 'k1');
      storage.run(`UPDATE meta SET value = '4' WHERE key = 'format'`);
    });
    const seen: number[][] = [];
    openSchema(storage, { beforeUpgrade: (from, to) => seen.push([from, to]) });
    expect(seen).toEqual([[4, 5]]);
    expect(storedFormat(storage)).toBe(5);
    expect(storage.exec(`SELECT format FROM streams ORDER BY sid`)).toEqual([{ format: 5 }, { format: 5 }]);
    expect(storage.exec(`SELECT sql FROM sqlite_master WHERE name = 'events_by_idem'`)).toEqual([
      { sql: 'CREATE UNIQUE INDEX events_by_idem ON events (idem, sid) WHERE idem IS NOT NULL' },
    ]);
    expect(storage.exec(`SELECT sid, ofs, idem FROM events ORDER BY sid, ofs`)).toEqual([
      { sid: 1, ofs: 1, idem: 'k1' },
      { sid: 1, ofs: 2, idem: null },
      { sid: 2, ofs: 1, idem: 'k1' },
    ]);
    // The lookup the engine makes uses the new index, and a key is still unique per stream only.
    const plan = storage.exec<{ detail: string }>(`EXPLAIN QUERY PLAN SELECT body FROM events WHERE sid = ? AND idem = ?`, 1, 'k1');
    expect(plan.map((p) => p.detail).join(' ')).toContain('events_by_idem');
    expect(() => storage.run(`INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (1, 3, 'x', 0, 'k1', 0, '{}')`)).toThrow(/UNIQUE/);
    storage.run(`INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (3, 1, 'x', 0, 'k1', 0, '{}')`);
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
    const storage = recording('6');
    const error = thrown(() => openSchema(storage, { beforeUpgrade: () => expect.unreachable() }));
    expect([error.code, error.message]).toEqual([
      'UNAVAILABLE',
      'this data was written by storage format 6, newer than format 5 that this server reads: run a Rivulet release that reads format 6 (the one that wrote it, or later) on it. Nothing was changed.',
    ]);
    expect(tables(storage)).toEqual(['meta']);
    expect(storedFormat(storage)).toBe(6);
  });

  for (const found of ['1', 'x']) {
    it(`format "${found}", older than any step, is refused naming both formats, and left as it was`, () => {
      const storage = recording(found);
      const error = thrown(() => openSchema(storage));
      expect([error.code, error.message]).toEqual([
        'UNAVAILABLE',
        `this data was written by storage format ${Number(found)}; this server reads format 5 and upgrades only formats 2 and later. ` +
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
