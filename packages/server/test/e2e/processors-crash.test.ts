/**
 * Crash test of a hosted processor (protocol §20.7): a REAL processor
 * host process (test/fixtures/processor-host.mjs, the built SDK) is killed with SIGKILL
 *
 * - between committing and reporting: it folded an event, committed state and checkpoint together,
 *   then blocked before reportDeliveryResult (BLOCK_AFTER_COMMIT) — the source never heard of it;
 * - between folding and committing: reduce ran, then it blocked before the commit
 *   (BLOCK_BEFORE_COMMIT) — the fold was lost with the process;
 *
 * and started again on the same SQLite file. Afterwards its stored state equals the fold of the
 * source's durable events: every order exactly once, whatever the crash lost.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { configured, eventually } from '../helpers/subscriptions.js';
import { assertSdkBuilt } from '../fixtures/worker-process.js';
import { foldLedger, killAllHosts, readStore, spawnProcessorHost, type HostProcess } from '../fixtures/processor-host-process.js';

let dir: string;
let server: TestServer;
let api: Api;

beforeAll(async () => {
  assertSdkBuilt();
  dir = mkdtempSync(join(tmpdir(), 'rivulet-processor-crash-'));
  server = await startTestServer({
    // Quick retries that never halt while the host is down; a report lost with the process times out fast.
    retryBaseMs: 10,
    retryMaxMs: 100,
    maxDeliveryAttempts: 1000,
    deliveryTimeoutMs: 1_000,
  });
  api = server.api;
}, 60_000);

afterEach(async () => {
  await killAllHosts();
});

afterAll(async () => {
  await killAllHosts();
  // Fails when the server logged an internal error.
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const order = (amount: number) => ({ type: 'order', payload: { amount } });

async function subscribe(path: string): Promise<void> {
  await api.append(
    path,
    configured({
      subscriptionKey: 'ledger',
      filter: { eventTypes: ['order'] },
      receiver: { action: 'processor-wake', expression: ['processors', ['get', 'ledger'], 'wakeStreamProcessor'] },
    }),
  );
}

/** Waits until the stored checkpoint reached `offset`; answers the stored row. */
/**
 * The host's stored row once it reached `offset`, after the host also reported that commit on its
 * stdout (it commits first, then reports: reading the file alone could beat the report).
 */
async function storedThrough(host: HostProcess, dbPath: string, path: string, offset: number) {
  await host.until(() => host.commits.some((c) => c.path === path && c.checkpoint >= offset), `a commit through ${offset}`, 10_000);
  return eventually(() => {
    const row = readStore(dbPath, path, 'ledger');
    return row && row.checkpoint >= offset ? row : undefined;
  }, `the stored checkpoint ${offset}`, 10_000);
}

describe('a processor host killed with SIGKILL', () => {
  it('between committing and reporting: after a restart its state is the fold of the durable events, the event folded once', async () => {
    const path = '/crash/after-commit';
    const dbPath = join(dir, 'after-commit.db');
    await subscribe(path);
    const events = await api.append(path, [order(1), order(2), order(3), order(4)]);
    const victim = events[1]!.offset;

    const host = await spawnProcessorHost(server.url, { dbPath, blockAfterCommit: victim });
    await host.until(() => host.blocked !== undefined, 'the host blocked after its commit');
    expect(host.blocked).toEqual({ phase: 'after-commit', offset: victim });
    // Committed, never reported: the store has it, the source does not.
    expect(readStore(dbPath, path, 'ledger')).toMatchObject({ checkpoint: victim, state: foldLedger(events.slice(0, 2)) });
    expect((await api.state(path)).runtime?.subscriptions.ledger?.acknowledgedOffset).toBeLessThan(victim);
    await host.kill('SIGKILL');

    const again = await spawnProcessorHost(server.url, { dbPath });
    const last = events[3]!.offset;
    const stored = await storedThrough(again, dbPath, path, last);
    expect(stored.state).toEqual(foldLedger(await api.readAll(path)));
    expect(stored.state.offsets).toEqual(events.map((e) => e.offset));
    // The restarted host resumed after the committed checkpoint: it folded only the two after it.
    expect(again.commits.map((c) => c.checkpoint)).toEqual([events[2]!.offset, last]);
    await eventually(async () => (await api.state(path)).runtime?.subscriptions.ledger?.acknowledgedOffset === last, 'the source caught up');
  });

  it('between folding and committing: after a restart the lost fold is redone, once', async () => {
    const path = '/crash/before-commit';
    const dbPath = join(dir, 'before-commit.db');
    await subscribe(path);
    const events = await api.append(path, [order(10), order(20), order(30)]);
    const victim = events[1]!.offset;

    const host = await spawnProcessorHost(server.url, { dbPath, blockBeforeCommit: victim });
    await host.until(() => host.blocked !== undefined, 'the host blocked before its commit');
    expect(host.blocked).toEqual({ phase: 'before-commit', offset: victim });
    // Folded in memory, not committed: the store still holds the previous checkpoint.
    expect(readStore(dbPath, path, 'ledger')).toMatchObject({ checkpoint: events[0]!.offset, state: foldLedger(events.slice(0, 1)) });
    await host.kill('SIGKILL');

    // Appended while the host is down: waits for it.
    const more = await api.append(path, order(40));
    const again = await spawnProcessorHost(server.url, { dbPath });
    const last = more[0]!.offset;
    const stored = await storedThrough(again, dbPath, path, last);
    const all = await api.readAll(path);
    expect(stored.state).toEqual(foldLedger(all));
    expect(stored.state).toEqual({ count: 4, total: 100, offsets: [...events.map((e) => e.offset), last] });
    expect(again.commits.map((c) => c.checkpoint)).toEqual([victim, events[2]!.offset, last]);
  });
});
