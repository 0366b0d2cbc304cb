/**
 * `rivulet serve` on a data folder of a storage format newer than this server's (protocol §16.4):
 * refused in one line naming both formats, exit 1, and the folder left as it was.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { FORMAT_VERSION } from '@rivulet/server/node';
import { Capture } from './harness.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('rivulet serve and storage formats', () => {
  it('refuses a folder of a newer format naming both versions, exit 1, and changes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rivulet-cli-format-'));
    dirs.push(dir);
    const newer = FORMAT_VERSION + 1;
    const db = new Database(join(dir, 'rivulet.db'));
    db.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('format', '${newer}')`);
    db.close();
    // What the database holds (opening it switches its journal to WAL, a header byte, not data).
    const contents = () => {
      const d = new Database(join(dir, 'rivulet.db'), { readonly: true });
      try {
        return [d.prepare('SELECT type, name, sql FROM sqlite_master ORDER BY name').all(), d.prepare('SELECT * FROM meta').all()];
      } finally {
        d.close();
      }
    };
    const before = contents();
    const run = await new Capture({}).run(['serve', '--data', dir, '--port', '0']);
    expect([run.code, run.stdout, run.stderr]).toEqual([
      1,
      '',
      `rivulet serve: UNAVAILABLE this data was written by storage format ${newer}, newer than format ${FORMAT_VERSION} that this server reads: ` +
        `run a Rivulet release that reads format ${newer} (the one that wrote it, or later) on it. Nothing was changed.`,
    ]);
    expect(contents()).toEqual(before);
  });
});
