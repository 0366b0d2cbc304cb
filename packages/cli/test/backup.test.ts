/**
 * `rivulet backup` and `rivulet restore` under load (protocol §15.5, §16.10): appends run while the
 * backup is taken; the server restored from it holds every event acknowledged before the backup
 * began, every stream's state equals the fold of its log, and a copy subscription resumes from its
 * cursor: each source event arrives once, none twice.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, type CommittedEvent, type RivuletClient } from '@rivulet/client';
import type { CoreState } from '@rivulet/contract';
import { reduce } from '@rivulet/server';
import { FORMAT_VERSION, startNodeServer, type RunningServer } from '@rivulet/server/node';
import { Capture, startTestServer } from './harness.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function everything(client: RivuletClient, path: string): Promise<CommittedEvent[]> {
  const events: CommittedEvent[] = [];
  for await (const event of client.readAll(path, { includeEphemeral: true })) events.push(event);
  return events;
}

/** Source offsets the receiver holds copies of, in the order they arrived. */
async function copiedOffsets(client: RivuletClient, receiver: string): Promise<number[]> {
  return (await everything(client, receiver)).flatMap((e) => (e.source?.copiedFrom ? [e.source.copiedFrom[0]!.offset] : []));
}

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let waited = 0; !(await check()); waited += 10) {
    if (waited > 15_000) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('rivulet backup and restore', () => {
  it('a backup taken under load restores to a server with every acknowledged event, folded states and resumed cursors', async () => {
    const t = await startTestServer();
    cleanups.push(() => t.dispose());
    const client = createClient({ url: t.url });
    await client.subscribeToEventsFrom('/shop/audit', { sourceStreamPath: '/shop/orders', subscriptionKey: 'audit' });
    // A database of some size, so the backup takes several steps (256 pages each) while appends go on.
    const pad = 'p'.repeat(900);
    for (let i = 0; i < 8; i++) await client.append(`/bulk/${i}`, Array.from({ length: 500 }, (_, n) => ({ type: 'bulk', payload: { n, pad } })));

    const acked: Array<{ path: string; event: CommittedEvent; at: number }> = [];
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const path = i % 3 === 0 ? '/shop/orders' : `/load/${w}`;
        const [event] = await client.append(path, { type: 'order.placed', payload: { w, i } });
        acked.push({ path, event: event!, at: performance.now() });
      }
    };
    const writers = Array.from({ length: 4 }, (_, w) => writer(w));
    await until(async () => acked.length >= 20, 'the writers are under way');

    const file = join(tempDir('rivulet-backup-'), 'snapshot.db');
    const began = performance.now();
    const ackedBefore = acked.filter((a) => a.at < began);
    const backup = await new Capture({ RIVULET_URL: t.url }).run(['backup', '--to', file, '--json']);
    const during = acked.filter((a) => a.at > began).length;
    stop = true;
    await Promise.all(writers);
    expect([backup.code, backup.stderr]).toEqual([0, '']);
    const report = JSON.parse(backup.stdout) as { file: string; bytes: number; format: number; durationMs: number };
    expect(report).toMatchObject({ file, bytes: statSync(file).size, format: FORMAT_VERSION });
    expect(existsSync(`${file}.partial`)).toBe(false);
    // Appends were answered while the backup ran (it did not hold the event loop throughout).
    expect(during).toBeGreaterThan(0);
    await t.stop();

    const data = tempDir('rivulet-restored-');
    const restore = await new Capture({}).run(['restore', '--from', file, '--data', data, '--json']);
    expect([restore.code, JSON.parse(restore.stdout)]).toEqual([0, { data, bytes: report.bytes, format: FORMAT_VERSION }]);
    const restored: RunningServer = await startNodeServer({ port: 0, data, logger: { error: () => undefined } });
    cleanups.push(() => restored.close());
    const again = createClient({ url: restored.url });

    // Every event acknowledged before the backup began is there, as it was answered.
    const byPath = new Map<string, CommittedEvent[]>();
    for (const path of new Set(acked.map((a) => a.path))) byPath.set(path, await everything(again, path));
    for (const { path, event } of ackedBefore) expect(byPath.get(path)![event.offset - 1]).toEqual(event);
    // Every stream's state is the fold of its log.
    for (const { path } of (await again.list({ prefix: '/' })).streams) {
      const log = await everything(again, path);
      const folded = log.reduce<CoreState | null>((state, event) => (event.ephemeral ? state : reduce(state, event)), null);
      expect((await again.state(path)).core).toEqual(folded);
    }
    // The copy subscription resumes from its cursor: new orders arrive once, old ones not again.
    await again.append('/shop/orders', [{ type: 'order.placed', payload: { after: 1 } }, { type: 'order.placed', payload: { after: 2 } }]);
    const orders = (await everything(again, '/shop/orders')).filter((e) => e.type === 'order.placed').map((e) => e.offset);
    await until(async () => (await copiedOffsets(again, '/shop/audit')).length >= orders.length, 'the audit copies caught up');
    expect(await copiedOffsets(again, '/shop/audit')).toEqual(orders);
  });

  it('with tokens, a backup needs an admin token: none is UNAUTHENTICATED, a project token FORBIDDEN (exit 1, no file)', async () => {
    const t = await startTestServer({ tokens: new Map([['admin-token-0123456789', '*'], ['project-token-0123456789', 'acme']]) });
    cleanups.push(() => t.dispose());
    const dir = tempDir('rivulet-backup-auth-');
    const file = join(dir, 'b.db');
    const none = await new Capture({ RIVULET_URL: t.url }).run(['backup', '--to', file]);
    expect([none.code, none.stderr]).toEqual([1, 'rivulet backup: UNAUTHENTICATED missing token: send Authorization: Bearer <token>']);
    const project = await new Capture({ RIVULET_URL: t.url, RIVULET_TOKEN: 'project-token-0123456789' }).run(['backup', '--to', file]);
    expect([project.code, project.stderr]).toEqual([
      1,
      'rivulet backup: FORBIDDEN /v1/admin/backup copies every project on this server: it needs an admin token (project "*")',
    ]);
    expect(readdirSync(dir)).toEqual([]);
    const admin = await new Capture({ RIVULET_URL: t.url, RIVULET_TOKEN: 'admin-token-0123456789' }).run(['backup', '--to', file]);
    expect(admin.code).toBe(0);
    expect(admin.stdout).toMatch(new RegExp(`^backed up ${t.url} to ${file}: \\d+\\.\\d MB, storage format ${FORMAT_VERSION}, in \\d+\\.\\d s$`));
    expect(readdirSync(dir)).toEqual(['b.db']);
  });
});
