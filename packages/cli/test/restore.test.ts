/**
 * `rivulet restore` refusals and `--force` (protocol §16.10), and `rivulet backup` refusals that
 * need no running server, or a fake one whose download breaks or is not a database: each with
 * its exit code and message, and no FILE or FILE.partial left behind.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '@rivulet/client';
import { FORMAT_VERSION } from '@rivulet/server/node';
import { Capture, startTestServer } from './harness.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(prefix = 'rivulet-restore-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const run = (argv: string[], env: NodeJS.ProcessEnv = {}) => new Capture(env).run(argv);

/** A real backup of a server holding one stream with `n` events. */
async function realBackup(n: number): Promise<string> {
  const t = await startTestServer();
  cleanups.push(() => t.dispose());
  await createClient({ url: t.url }).append('/kept', Array.from({ length: n }, (_, i) => ({ type: 'k', payload: { i } })));
  const file = join(tempDir(), 'backup.db');
  expect((await run(['backup', '--to', file], { RIVULET_URL: t.url })).code).toBe(0);
  return file;
}

function sqliteFile(dir: string, sql: string): string {
  const file = join(dir, 'other.db');
  const db = new Database(file);
  db.exec(sql);
  db.close();
  return file;
}

describe('rivulet restore', () => {
  it('restores into an empty folder; refuses an existing database without --force, replaces it with --force', async () => {
    const file = await realBackup(3);
    const data = tempDir();
    expect((await run(['restore', '--from', file, '--data', data])).stdout).toMatch(
      new RegExp(`^restored ${file} into ${data} \\(0\\.\\d MB, storage format ${FORMAT_VERSION}\\); start it with: rivulet serve --data ${data}$`),
    );
    const again = await run(['restore', '--from', file, '--data', data]);
    expect([again.code, again.stderr]).toEqual([1, `rivulet restore: CONFLICT ${data} already holds a database (rivulet.db); pass --force to replace it`]);
    // A stale WAL of the replaced database must not be replayed onto the restored one.
    writeFileSync(join(data, 'rivulet.db-wal'), 'stale');
    const forced = await run(['restore', '--from', file, '--data', data, '--force', '--json']);
    expect(forced.code).toBe(0);
    expect(readdirSync(data).sort()).toEqual(['rivulet.db', 'rivulet.lock']);
    expect(readFileSync(join(data, 'rivulet.db')).equals(readFileSync(file))).toBe(true);
  });

  it('refuses a folder a server is running on (PRECONDITION_FAILED, exit 1)', async () => {
    const file = await realBackup(1);
    const t = await startTestServer();
    cleanups.push(() => t.dispose());
    const busy = await run(['restore', '--from', file, '--data', t.data, '--force']);
    expect([busy.code, busy.stderr]).toEqual([1, `rivulet restore: PRECONDITION_FAILED cannot restore into ${t.data}: a Rivulet server is running on it; stop that server first`]);
  });

  it('refuses files that are no usable backup, each with its reason (exit 1), and writes nothing', async () => {
    const dir = tempDir();
    const data = join(dir, 'data');
    const text = join(dir, 'notes.txt');
    writeFileSync(text, 'not a database at all');
    const noMeta = sqliteFile(dir, 'CREATE TABLE t (x)');
    const newer = join(dir, 'newer.db');
    const db = new Database(newer);
    db.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('format', '${FORMAT_VERSION + 1}')`);
    db.close();
    // A real backup with a page of its events table overwritten: the header is intact.
    const damaged = await realBackup(400);
    const bytes = readFileSync(damaged);
    bytes.fill(0x5a, 4096 * 3, 4096 * 3 + 512);
    writeFileSync(damaged, bytes);
    const cases: Array<[string, string]> = [
      [join(dir, 'missing.db'), `NOT_FOUND no backup file ${join(dir, 'missing.db')}`],
      [text, `INVALID_INPUT ${text} is not a Rivulet backup: it is not a SQLite database`],
      [noMeta, `INVALID_INPUT ${noMeta} is not a Rivulet backup: it records no storage format`],
      [newer, `INVALID_INPUT ${newer} holds storage format ${FORMAT_VERSION + 1}; this server reads format ${FORMAT_VERSION} and upgrades only formats 2 and later`],
    ];
    for (const [file, message] of cases) {
      const result = await run(['restore', '--from', file, '--data', data]);
      expect([result.code, result.stderr]).toEqual([1, `rivulet restore: ${message}`]);
    }
    const broken = await run(['restore', '--from', damaged, '--data', data]);
    expect([broken.code, broken.stderr]).toEqual([1, `rivulet restore: INVALID_INPUT ${damaged} is damaged: database disk image is malformed`]);
    expect(existsSync(data)).toBe(false);
    // Checking a file leaves nothing beside it.
    expect(readdirSync(dir).sort()).toEqual(['newer.db', 'notes.txt', 'other.db']);
  });

  it('usage errors exit 2', async () => {
    expect((await run(['restore'])).code).toBe(2);
    expect((await run(['restore', '--from', 'x', 'extra'])).code).toBe(2);
    expect((await run(['restore', '--help'])).out[0]).toBe('Usage: rivulet restore --from FILE [--data DIR] [--force] [--json]');
  });
});

/** A server answering every request with `answer` (a fake one, to break downloads). */
async function fakeServer(answer: (res: ServerResponse) => void): Promise<string> {
  const server: Server = createServer((_req, res) => answer(res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  server.on('connection', (socket) => cleanups.push(() => void socket.destroy()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('rivulet backup refusals', () => {
  it('a download cut short, or one that is no database, leaves no file (exit 1)', async () => {
    const dir = tempDir();
    const file = join(dir, 'b.db');
    const cut = await fakeServer((res) => {
      res.writeHead(200, { 'content-type': 'application/vnd.sqlite3', 'content-length': '100000' });
      res.write(Buffer.alloc(1000));
      setTimeout(() => res.destroy(), 20);
    });
    const short = await run(['backup', '--to', file], { RIVULET_URL: cut });
    expect([short.code, short.stderr]).toEqual([1, 'rivulet backup: UNAVAILABLE the download broke off after 1000 bytes: terminated']);
    const junk = await fakeServer((res) => {
      res.writeHead(200, { 'content-type': 'application/vnd.sqlite3', 'content-length': '5' });
      res.end('hello');
    });
    const notDb = await run(['backup', '--to', file], { RIVULET_URL: junk });
    expect([notDb.code, notDb.stderr]).toEqual([1, 'rivulet backup: INVALID_INPUT the downloaded backup is not a Rivulet backup: it is not a SQLite database; no backup was written']);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses to replace FILE without --force (exit 1), and usage errors exit 2', async () => {
    const dir = tempDir();
    const file = join(dir, 'b.db');
    writeFileSync(file, 'keep me');
    const t = await startTestServer();
    cleanups.push(() => t.dispose());
    const refused = await run(['backup', '--to', file], { RIVULET_URL: t.url });
    expect([refused.code, refused.stderr]).toEqual([1, `rivulet backup: CONFLICT ${file} already exists; pass --force to replace it`]);
    expect(readFileSync(file, 'utf8')).toBe('keep me');
    expect((await run(['backup', '--to', file, '--force'], { RIVULET_URL: t.url })).code).toBe(0);
    expect(readFileSync(file).subarray(0, 15).toString()).toBe('SQLite format 3');
    expect((await run(['backup'])).code).toBe(2);
    expect((await run(['backup', '--to', file, 'extra'])).code).toBe(2);
  });
});
