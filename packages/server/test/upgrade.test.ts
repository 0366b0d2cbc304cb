/**
 * Upgrading a data folder written by a real server of storage format 2 (test/fixtures/format-2,
 * made by scripts/make-fixture-format2.mjs; protocol §16.4): the start copies the database aside
 * first and logs it, then upgrades; every event that server acknowledged reads back, every
 * stream's state equals the fold of its log, and the copy subscription resumes from its cursor
 * without copying anything twice. A second start upgrades nothing. The same for a folder of
 * format 4 (test/fixtures/format-4, scripts/make-fixture-format4.mjs), whose steps rebuild the
 * idempotency index (to format 5), move its keys into a table of their own (to format 6), add
 * the table that claims copies' keys as ranges (to format 7) and the columns and table of copies
 * stored as parts (format 8), offsets indexed in batches (to format 9) and the keys in sorted runs (to
 * format 10): every key it held still answers its stored event.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { RivuletError, type CommittedEvent, type CoreState } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { reduce } from '../src/core/reduce.js';
import { compactDataFolder, startNodeServer, type RunningServer } from '../src/hosts/node/serve.js';

const FIXTURE = new URL('./fixtures/format-2/', import.meta.url);
const FIXTURE4 = new URL('./fixtures/format-4/', import.meta.url);
interface Manifest {
  appended: Record<string, number[]>;
  ephemeral: Record<string, number[]>;
  subscriptions: Array<{ source: string; receiver: string; key: string }>;
}
const manifest = JSON.parse(readFileSync(new URL('manifest.json', FIXTURE), 'utf8')) as Manifest;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function fixtureFolder(fixture = FIXTURE): string {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-upgrade-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  copyFileSync(new URL('rivulet.db', fixture), join(dir, 'rivulet.db'));
  return dir;
}

async function start(data: string, warnings: string[]): Promise<RunningServer> {
  const server = await startNodeServer({ port: 0, data, logger: { error: (m, e) => warnings.push(`ERROR ${m} ${String(e)}`), warn: (m) => warnings.push(m) } });
  cleanups.push(() => server.close());
  return server;
}

async function get<T>(server: RunningServer, path: string, project?: string): Promise<T> {
  const res = await fetch(`${server.url}${path}`, { headers: project ? { 'x-project-id': project } : {} });
  expect(res.status).toBe(200);
  return (await res.json()) as T;
}

/** Every event of a stream, ephemeral ones included, in pages. */
async function allEvents(server: RunningServer, path: string, project?: string): Promise<CommittedEvent[]> {
  const events: CommittedEvent[] = [];
  for (;;) {
    const after = events.at(-1)?.offset ?? 0;
    const page = await get<{ events: CommittedEvent[] }>(server, `/v1/streams${path}?afterOffset=${after}&includeEphemeral=true`, project);
    if (page.events.length === 0) return events;
    events.push(...page.events);
  }
}

const split = (key: string): { project?: string; path: string } => {
  const slash = key.indexOf('/');
  return slash === 0 ? { path: key } : { project: key.slice(0, slash), path: key.slice(slash) };
};

describe('upgrading a format-2 data folder (protocol §16.4)', () => {
  it('copies the database aside, logs it, upgrades, and keeps every event, state and cursor', async () => {
    const data = fixtureFolder();
    const warnings: string[] = [];
    const server = await start(data, warnings);
    const copy = join(data, 'rivulet.db.before-upgrade-v2');
    expect(warnings).toEqual([`rivulet: upgrading the data folder ${data} from storage format 2 to 10; the database as it was is kept in ${copy}`]);
    // The copy is the old database, still format 2, with the same rows as the fixture.
    const rows = (file: string) => {
      const db = new Database(file, { readonly: true });
      try {
        return { format: db.prepare(`SELECT value FROM meta WHERE key = 'format'`).get(), events: db.prepare('SELECT * FROM events ORDER BY sid, ofs').all() };
      } finally {
        db.close();
      }
    };
    // Read from a copy: opening a WAL-mode file, even read-only, writes -shm and -wal beside it.
    const pristine = join(fixtureFolder(), 'rivulet.db');
    const original = rows(pristine);
    expect(original.format).toEqual({ value: '2' });
    expect(rows(copy)).toEqual(original);
    expect(existsSync(`${copy}.partial`)).toBe(false);

    for (const [key, offsets] of Object.entries(manifest.appended)) {
      const { project, path } = split(key);
      const events = await allEvents(server, path, project);
      // Every acknowledged durable event reads back; ephemeral ones may have been pruned since the
      // fixture was made (their retention is 10 minutes), nothing else is missing.
      const read = events.map((e) => e.offset);
      expect(read).toEqual(expect.arrayContaining(offsets));
      const ephemeral = manifest.ephemeral[key] ?? [];
      expect(Array.from({ length: Math.max(...read) }, (_, i) => i + 1).filter((o) => !read.includes(o) && !ephemeral.includes(o))).toEqual([]);
      const folded = events.reduce<CoreState | null>((state, event) => (event.ephemeral ? state : reduce(state, event)), null);
      const { core } = await get<{ core: CoreState }>(server, `/v1/streams${path}:state`, project);
      expect(core).toEqual(folded);
    }

    // The step to format 4 filled the subscription index from stored state: the cross-stream listing
    // (protocol §21) has every subscription the old server configured.
    const listed = await get<{ subscriptions: Array<{ sourcePath: string; subscriptionKey: string }> }>(server, '/v1/subscriptions');
    expect(listed.subscriptions.map((s) => [s.sourcePath, s.subscriptionKey]).sort()).toEqual(
      manifest.subscriptions.map((s) => [s.source, s.key]).sort(),
    );

    // The copy subscription resumes after its cursor: new orders are copied once, old ones not again.
    const [sub] = manifest.subscriptions;
    const before = await allEvents(server, sub!.receiver);
    const appended = await fetch(`${server.url}/v1/streams${sub!.source}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ type: 'order.placed', payload: { n: 'after-upgrade-1' } }, { type: 'order.placed', payload: { n: 'after-upgrade-2' } }]),
    });
    expect(appended.status).toBe(200);
    const { events: fresh } = (await appended.json()) as { events: CommittedEvent[] };
    const source = await allEvents(server, sub!.source);
    const durableOffsets = source.filter((e) => !e.ephemeral && e.offset > 2).map((e) => e.offset);
    let copied: number[] = [];
    for (let waited = 0; waited < 10_000; waited += 10) {
      const receiver = await allEvents(server, sub!.receiver);
      copied = receiver.flatMap((e) => (e.source?.copiedFrom ? [e.source.copiedFrom[0]!.offset] : []));
      if (copied.includes(fresh.at(-1)!.offset)) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(before.length).toBeGreaterThan(0);
    expect(copied).toEqual(durableOffsets);
    const last = Math.max(...manifest.appended[sub!.source]!, ...(manifest.ephemeral[sub!.source] ?? []));
    expect(fresh.map((e) => e.offset)).toEqual([last + 1, last + 2]);
  });

  it('a second start finds format 10 and upgrades nothing', async () => {
    const data = fixtureFolder();
    const first: string[] = [];
    const server = await start(data, first);
    await server.close();
    rmSync(join(data, 'rivulet.db.before-upgrade-v2'));
    const second: string[] = [];
    await start(data, second);
    expect(first).toHaveLength(1);
    expect(second).toEqual([]);
    expect(existsSync(join(data, 'rivulet.db.before-upgrade-v2'))).toBe(false);
  });

  it('compact upgrades as serve does: the copy first, then format 10', () => {
    const data = fixtureFolder();
    const lines: string[] = [];
    compactDataFolder(data, { progress: (line) => lines.push(line) });
    const copy = join(data, 'rivulet.db.before-upgrade-v2');
    expect(lines[0]).toBe(`rivulet: upgrading the data folder ${data} from storage format 2 to 10; the database as it was is kept in ${copy}`);
    const db = new Database(join(data, 'rivulet.db'), { readonly: true });
    try {
      expect(db.prepare(`SELECT value FROM meta WHERE key = 'format'`).get()).toEqual({ value: '10' });
      expect(db.prepare('SELECT DISTINCT format FROM streams').all()).toEqual([{ format: 10 }]);
    } finally {
      db.close();
    }
    expect(existsSync(copy)).toBe(true);
  });

  it('refuses to start when the copy cannot be written, and changes nothing', async () => {
    const data = fixtureFolder();
    // A folder where the copy should go: the rename onto it fails.
    mkdirSync(join(data, 'rivulet.db.before-upgrade-v2', 'taken'), { recursive: true });
    const warnings: string[] = [];
    const error = await startNodeServer({ port: 0, data, logger: { error: () => undefined, warn: (m) => warnings.push(m) } }).then(
      () => expect.unreachable(),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RivuletError);
    expect((error as RivuletError).code).toBe('UNAVAILABLE');
    expect((error as RivuletError).message).toMatch(
      new RegExp(`^cannot upgrade the data folder ${data} from storage format 2 to 10: the copy of the database could not be written to ${join(data, 'rivulet.db.before-upgrade-v2')} \\(.+\\)\\. Nothing was changed\\.$`),
    );
    expect(warnings).toEqual([]);
    expect(existsSync(join(data, 'rivulet.db.before-upgrade-v2.partial'))).toBe(false);
    const db = new Database(join(data, 'rivulet.db'), { readonly: true });
    try {
      expect(db.prepare(`SELECT value FROM meta WHERE key = 'format'`).get()).toEqual({ value: '2' });
    } finally {
      db.close();
    }
    // The folder is free again: a start after the obstacle is gone upgrades it.
    rmSync(join(data, 'rivulet.db.before-upgrade-v2'), { recursive: true });
    await start(data, warnings);
    expect(warnings).toHaveLength(1);
  });
});

describe('upgrading a format-4 data folder (protocol §16.4)', () => {
  interface Manifest4 extends Manifest {
    keys: Record<string, Record<string, number>>;
  }
  const manifest4 = JSON.parse(readFileSync(new URL('manifest.json', FIXTURE4), 'utf8')) as Manifest4;
  const post = (server: RunningServer, path: string, body: unknown, project?: string) =>
    fetch(`${server.url}/v1/streams${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(project ? { 'x-project-id': project } : {}) },
      body: JSON.stringify(body),
    });

  it('upgrades in place and keeps every event, idempotency key and subscription', async () => {
    const data = fixtureFolder(FIXTURE4);
    const pristine = new Database(join(fixtureFolder(FIXTURE4), 'rivulet.db'), { readonly: true });
    const before = pristine.prepare('SELECT sid, ofs, type, idem, created_ms, body FROM events WHERE ephemeral = 0 ORDER BY sid, ofs').all();
    expect(pristine.prepare(`SELECT value FROM meta WHERE key = 'format'`).get()).toEqual({ value: '4' });
    pristine.close();
    const warnings: string[] = [];
    const server = await start(data, warnings);
    expect(warnings).toEqual([
      `rivulet: upgrading the data folder ${data} from storage format 4 to 10; the database as it was is kept in ${join(data, 'rivulet.db.before-upgrade-v4')}`,
    ]);

    for (const [key, offsets] of Object.entries(manifest4.appended)) {
      const { project, path } = split(key);
      const events = await allEvents(server, path, project);
      expect(events.map((e) => e.offset)).toEqual(expect.arrayContaining(offsets));
      const folded = events.reduce<CoreState | null>((state, event) => (event.ephemeral ? state : reduce(state, event)), null);
      const { core } = await get<{ core: CoreState }>(server, `/v1/streams${path}:state`, project);
      expect(core).toEqual(folded);
    }

    // Every key the old server committed answers its stored event to a repeat, and refuses a
    // different event (protocol §4.2); the same key in another stream is that stream's own.
    let keys = 0;
    for (const [key, byKey] of Object.entries(manifest4.keys)) {
      const { project, path } = split(key);
      const stored = await allEvents(server, path, project);
      const head = stored.at(-1)!.offset;
      for (const [idempotencyKey, offset] of Object.entries(byKey)) {
        const original = stored.find((e) => e.offset === offset)!;
        expect(original.idempotencyKey).toBe(idempotencyKey);
        const repeat = await post(server, path, { type: original.type, ...(original.payload ? { payload: original.payload } : {}), idempotencyKey }, project);
        expect(repeat.status).toBe(200);
        const { events } = (await repeat.json()) as { events: CommittedEvent[] };
        expect(events).toEqual([original]);
        const other = await post(server, path, { type: 'different', idempotencyKey }, project);
        expect(other.status).toBe(409);
        expect(((await other.json()) as { error: { code: string } }).error.code).toBe('CONFLICT');
        keys++;
      }
      expect((await allEvents(server, path, project)).at(-1)!.offset).toBe(head);
    }
    expect(keys).toBe(Object.values(manifest4.keys).reduce((n, byKey) => n + Object.keys(byKey).length, 0));
    expect(keys).toBeGreaterThan(10);
    // A new key is still new after the upgrade, and a repeat of it is the same event.
    const fresh = await post(server, '/shop/payments', { type: 'paid', idempotencyKey: 'after-upgrade' });
    const again = await post(server, '/shop/payments', { type: 'paid', idempotencyKey: 'after-upgrade' });
    const [a, b] = [(await fresh.json()) as { events: CommittedEvent[] }, (await again.json()) as { events: CommittedEvent[] }];
    expect(a.events[0]!.offset).toBe(Math.max(...manifest4.appended['/shop/payments']!) + 1);
    expect(b.events[0]!.offset).toBe(a.events[0]!.offset);

    // Both subscriptions are listed, and the copy one resumes after its cursor.
    const listed = await get<{ subscriptions: Array<{ sourcePath: string; subscriptionKey: string }> }>(server, '/v1/subscriptions');
    expect(listed.subscriptions.map((s) => [s.sourcePath, s.subscriptionKey]).sort()).toEqual(manifest4.subscriptions.map((s) => [s.source, s.key]).sort());
    const audit = manifest4.subscriptions.find((s) => s.key === 'audit')!;
    const placed = await post(server, audit.source, { type: 'order.placed', payload: { n: 'after-upgrade' } });
    const { events: placedEvents } = (await placed.json()) as { events: CommittedEvent[] };
    let copied: number[] = [];
    for (let waited = 0; waited < 10_000; waited += 10) {
      copied = (await allEvents(server, audit.receiver)).flatMap((e) => (e.source?.copiedFrom ? [e.source.copiedFrom[0]!.offset] : []));
      if (copied.includes(placedEvents[0]!.offset)) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // Everything durable after the audit subscription's own configured event (offset 2), once.
    const source = await allEvents(server, audit.source);
    expect(copied).toEqual(source.filter((e) => !e.ephemeral && e.offset > 2).map((e) => e.offset));
    expect(copied).toEqual(expect.arrayContaining([...manifest4.appended[audit.source]!, placedEvents[0]!.offset]));
    await server.close();

    // The stored durable rows are the old ones plus what this test appended (ephemeral ones may have
    // been pruned: their retention is over).
    const db = new Database(join(data, 'rivulet.db'), { readonly: true });
    try {
      expect(db.prepare(`SELECT value FROM meta WHERE key = 'format'`).get()).toEqual({ value: '10' });
      // Format 6: no index on the key; every key the old server stored was moved into event_keys.
      expect(db.prepare(`SELECT name FROM sqlite_master WHERE name = 'events_by_idem'`).get()).toBeUndefined();
      // Format 10: in the legacy run of event_keys (engine/key-runs.ts).
      const moved = db.prepare(`SELECT sid, idem, ofs FROM event_keys WHERE run = 15`).all();
      const keyed = (before as Array<{ sid: number; ofs: number; idem: string | null }>).filter((r) => r.idem !== null);
      expect(keyed.length).toBeGreaterThan(0);
      expect(moved).toEqual(expect.arrayContaining(keyed.map(({ sid, idem, ofs }) => ({ sid, idem, ofs }))));
      // Format 9: no (sid, ofs) index; every row up to the watermark is entered in event_offsets (the
      // rows past it are the tail, which lives with a connection and is not in the file).
      expect(db.prepare(`SELECT name FROM sqlite_master WHERE name = 'events_by_offset'`).get()).toBeUndefined();
      expect(
        db
          .prepare(
            `SELECT count(*) AS n FROM events e WHERE e.rowid <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'keys_moved')
               AND NOT EXISTS (SELECT 1 FROM event_offsets o WHERE o.sid = e.sid AND o.ofs = e.ofs AND o.rid = e.rowid)`,
          )
          .get(),
      ).toEqual({ n: 0 });
      expect(db.prepare(`SELECT count(*) AS n FROM event_offsets`).get()).toEqual(
        // (copies stored as parts, which the server wrote after the upgrade, are entered by their batch)
        db.prepare(`SELECT count(*) AS n FROM events WHERE rowid <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'keys_moved') OR copy_run IS NOT NULL`).get(),
      );
      const after = db.prepare('SELECT sid, ofs, type, idem, created_ms, body FROM events WHERE ephemeral = 0 ORDER BY sid, ofs').all();
      expect(after).toEqual(expect.arrayContaining(before));
    } finally {
      db.close();
    }
  });
});
