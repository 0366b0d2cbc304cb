/**
 * While `rivulet serve` runs, its process holds rivulet.db's lock (SQLite's unix-excl VFS;
 * docs/operations.md "Backups and restore"): another program can neither write the database
 * behind the server's back (its caches would go stale) nor read it. Where SQLite URI filenames are
 * off in the server's process, it opens the file with shared locking and says so at warn.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnServe, type CliServer } from '../helpers/cli.js';

const cleanups: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(env: Record<string, string> = {}): Promise<{ server: CliServer; database: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-data-file-lock-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const server = await spawnServe(['--data', dir], 15_000, [], env);
  cleanups.push(() => server.kill('SIGTERM'));
  const appended = await fetch(`${server.url}/v1/streams/locked`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 't', payload: {} }) });
  expect(appended.status).toBe(200);
  return { server, database: join(dir, 'rivulet.db') };
}

/** What this process (another program, for the server) gets from `fn` on the database: 'ok …' or the error. */
function outside(database: string, readonly: boolean, fn: (db: Database.Database) => unknown): string {
  try {
    const db = new Database(database, { readonly, fileMustExist: true, timeout: 100 });
    try {
      return `ok ${JSON.stringify(fn(db))}`;
    } finally {
      db.close();
    }
  } catch (error) {
    return `error ${(error as Error).message}`;
  }
}

describe("the server's lock on its database file", () => {
  it('refuses another program that writes to rivulet.db or reads it while the server runs', async () => {
    const { server, database } = await serve();
    expect(outside(database, false, (db) => db.prepare(`DELETE FROM events`).run().changes)).toBe('error database is locked');
    expect(outside(database, true, (db) => db.prepare('SELECT count(*) AS n FROM events').get())).toBe('error database is locked');
    // The events are still there (the stream's first event and the append), and the server still answers.
    const read = await fetch(`${server.url}/v1/streams/locked`);
    expect(((await read.json()) as { events: Array<{ type: string }> }).events.map((e) => e.type).at(-1)).toBe('t');
    expect(server.output()).not.toContain('shared locking');
    // Stopped, the server lets go of the file.
    await server.kill('SIGTERM');
    expect(outside(database, true, (db) => db.prepare('SELECT count(*) AS n FROM events').get())).toBe('ok {"n":2}');
  });

  it('says at warn that it opened the file with shared locking where SQLite URI filenames are off', async () => {
    const { server, database } = await serve({ SQLITE_USE_URI: '0' });
    expect(server.output()).toContain('storage: the database is opened with shared locking (SQLite could not open it through the unix-excl VFS: URI filenames are off in this process');
    expect(outside(database, true, (db) => db.prepare('SELECT count(*) AS n FROM events').get())).toBe('ok {"n":2}');
  });
});
