/**
 * End-to-end: hosted processors (protocol §20) with a REAL
 * processor host process (test/fixtures/processor-host.mjs: the built SDK's serveProcessors, one
 * processor "ledger" folding `order` events into {count, total, offsets}, stored in its own SQLite
 * file). The server runs in this process (the Node host, or the Worker host under Miniflare with
 * RIVULET_TEST_HOST=worker) and is restarted over the same storage and port; the host process is
 * killed and started again on the same file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '@rivulet/client';
import { startNodeServer, type NodeServerOptions, type RunningServer } from '../../src/hosts/node/serve.js';
import { Api } from '../helpers/http.js';
import { TEST_HOST } from '../helpers/server.js';
import { EventType, configured, eventually } from '../helpers/subscriptions.js';
import { startWorkerHost } from '../helpers/worker-host.js';
import { assertSdkBuilt } from '../fixtures/worker-process.js';
import { foldLedger, killAllHosts, readStore, spawnProcessorHost, type HostProcess } from '../fixtures/processor-host-process.js';

/** Quick retries that never halt during a restart; a short idle period so that teardown shows. */
const KNOBS: NodeServerOptions = { retryBaseMs: 10, retryMaxMs: 100, maxDeliveryAttempts: 1000, deliveryTimeoutMs: 2_000, processorIdleMs: 300 };

const ledgerSubscription = (key = 'ledger', host = 'ledger') =>
  configured({
    subscriptionKey: key,
    filter: { eventTypes: ['order'] },
    receiver: { action: 'processor-wake', expression: ['processors', ['get', host], 'wakeStreamProcessor'] },
  });

const order = (amount: number, extra: Record<string, unknown> = {}) => ({ type: 'order', payload: { amount }, ...extra });

/** The server under test, restartable over its own storage and port (either host, RIVULET_TEST_HOST). */
interface Server {
  readonly url: string;
  restart(): Promise<void>;
  close(): Promise<void>;
}

let dir: string;
let server: Server;
let api: Api;
const internal: string[] = [];
const logger = { error: (message: string, error: unknown) => internal.push(`${message}: ${String(error)}`) };

async function startServer(): Promise<Server> {
  if (TEST_HOST === 'worker') {
    const worker = await startWorkerHost(KNOBS);
    return {
      get url() {
        return worker.url;
      },
      restart: () => worker.restart(),
      close: () => worker.close(),
    };
  }
  const dataDir = join(dir, 'data');
  const start = (port: number) => startNodeServer({ host: '127.0.0.1', port, data: dataDir, logger, ...KNOBS });
  let node: RunningServer = await start(0);
  return {
    get url() {
      return node.url;
    },
    async restart() {
      const port = node.port;
      await node.close();
      node = await start(port);
    },
    close: () => node.close(),
  };
}

/** Whether a processor host is registered under `name`, as any RPC client of the project sees it. */
async function registered(name: string): Promise<boolean> {
  const probe = await connect(server.url, { reconnect: false });
  try {
    return await probe.root.processors.has(name);
  } finally {
    probe.close();
  }
}

beforeAll(async () => {
  assertSdkBuilt();
  dir = mkdtempSync(join(tmpdir(), 'rivulet-processors-'));
  server = await startServer();
  api = new Api(server.url);
}, 60_000);

afterEach(async () => {
  await killAllHosts();
});

afterAll(async () => {
  await killAllHosts();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
  expect(internal).toEqual([]);
});

/** The host's stored state once it folded up to `offset`; it must equal the fold of the stream's durable events. */
async function foldedThrough(host: HostProcess | undefined, dbPath: string, path: string, key: string, offset: number) {
  const { streamId } = (await api.state(path)).core!;
  if (host) await host.until(() => host.commits.some((c) => c.path === path && c.streamId === streamId && c.checkpoint >= offset), `a commit through ${offset}`);
  const stored = await eventually(() => {
    const row = readStore(dbPath, path, key);
    return row && row.streamId === streamId && row.checkpoint >= offset ? row : undefined;
  }, `the stored checkpoint ${offset}`);
  const events = await api.readAll(path);
  expect(stored.state).toEqual(foldLedger(events));
  return stored;
}

const connectionsOf = async (path: string) => (await api.state(path)).runtime?.connections ?? {};

describe('a hosted processor', () => {
  it('is woken, folds durable events (not ephemeral ones), commits its checkpoint with its state, idles, and is woken again from its checkpoint after a restart of either side', async () => {
    const path = '/s41/orders';
    const dbPath = join(dir, 's41-host.db');
    let host = await spawnProcessorHost(server.url, { dbPath });
    await api.append(path, ledgerSubscription());
    const first = await api.append(path, [order(5), order(100, { ephemeral: true }), { type: 'note' }, order(7)]);
    const lastOrder = first[3]!.offset;

    // Woken: it folds the durable orders only, and commits the checkpoint with the state.
    const stored = await foldedThrough(host, dbPath, path, 'ledger', lastOrder);
    expect(stored).toMatchObject({ checkpoint: lastOrder, state: { count: 2, total: 12, offsets: [first[0]!.offset, lastOrder] } });
    const { streamId } = (await api.state(path)).core!;
    expect(stored.streamId).toBe(streamId);
    expect(host.commits.map((c) => c.checkpoint)).toEqual([first[0]!.offset, lastOrder]);
    const state = await api.state(path);
    expect(state.runtime?.subscriptions.ledger).toMatchObject({ acknowledgedOffset: lastOrder, attempt: 0, lastError: null });
    expect(state.runtime?.connections.ledger).toMatchObject({ kind: 'hosted', deliveredThroughOffset: lastOrder, batchesSent: 2, eventsSent: 2 });
    expect(state.core?.subscriptions.outbound.byKey.ledger?.deliveryHalted).toBeUndefined();

    // Idles: the caught-up connection closes; non-matching events do not wake it.
    await eventually(async () => Object.keys(await connectionsOf(path)).length === 0, 'the idle teardown');
    await api.append(path, { type: 'note' });
    await eventually(async () => (await api.state(path)).runtime?.subscriptions.ledger?.lag === 0, 'the cursor past the note');
    expect(await connectionsOf(path)).toEqual({});

    // Woken again by the next matching event, from its checkpoint: nothing is folded twice.
    const [second] = await api.append(path, order(11));
    await foldedThrough(host, dbPath, path, 'ledger', second!.offset);
    expect((await connectionsOf(path)).ledger).toMatchObject({ kind: 'hosted', batchesSent: 1 });

    // A restart of the server (same storage and port): the host reconnects and registers again.
    await server.restart();
    api = new Api(server.url);
    await host.until(() => host.sessions >= 2, 'the host reconnected');
    await eventually(() => registered('ledger'), 'the host registered again');
    const [third] = await api.append(path, order(13));
    await foldedThrough(host, dbPath, path, 'ledger', third!.offset);

    // A restart of the host: events appended while it is away wait for it (never skipped).
    await host.kill('SIGKILL');
    // Its session ended, and its registration with it.
    await eventually(async () => !(await registered('ledger')), 'the registration ended with the session');
    const whileAway = await api.append(path, [order(2), order(3)]);
    // null (no failure recorded yet) is not an answer: eventually() returns anything but undefined.
    const missed = await eventually(async () => (await api.state(path)).runtime?.subscriptions.ledger?.lastError ?? undefined, 'the host missed');
    expect(missed).toMatch(/no processor "ledger" is connected in this project|the processor host disconnected/);
    host = await spawnProcessorHost(server.url, { dbPath });
    const final = await foldedThrough(host, dbPath, path, 'ledger', whileAway[1]!.offset);
    // It resumed exactly from its stored checkpoint: the new process folded only what was new.
    expect(host.commits.map((c) => c.checkpoint)).toEqual(whileAway.map((e) => e.offset));
    expect(final.state.offsets).toEqual([...new Set(final.state.offsets)]);
    const row = await eventually(async () => {
      const r = (await api.state(path)).runtime?.subscriptions.ledger;
      return r?.acknowledgedOffset === whileAway[1]!.offset && r.attempt === 0 ? r : undefined;
    }, 'the subscription caught up');
    expect(row.lastError).toBeNull();
    expect((await api.state(path)).core?.subscriptions.outbound.byKey.ledger?.deliveryHalted).toBeUndefined();
  });
});

describe('a recreated source', () => {
  it('a processor whose source was destroyed and recreated starts over from empty state', async () => {
    const path = '/s42/orders';
    const dbPath = join(dir, 's42-host.db');
    const host = await spawnProcessorHost(server.url, { dbPath });
    await api.append(path, ledgerSubscription());
    const old = await api.append(path, [order(50), order(60)]);
    const before = await foldedThrough(host, dbPath, path, 'ledger', old[1]!.offset);
    expect(before.state.total).toBe(110);

    await api.destroy(path);
    await api.append(path, ledgerSubscription());
    const fresh = await api.append(path, order(4));
    const after = await foldedThrough(host, dbPath, path, 'ledger', fresh[0]!.offset);
    const { streamId } = (await api.state(path)).core!;
    expect(after.streamId).toBe(streamId);
    expect(after.streamId).not.toBe(before.streamId);
    expect(after.state).toEqual({ count: 1, total: 4, offsets: [fresh[0]!.offset] });
    // The commit of the new lifetime started from the initial state, not from the old total.
    expect(host.commits.filter((c) => c.streamId === streamId).map((c) => c.state.total)).toEqual([4]);
    expect((await api.state(path)).core?.subscriptions.outbound.byKey.ledger?.configuration.receiver.action).toBe('processor-wake');
    expect((await api.readAll(path)).filter((e) => e.type === EventType.subscriptionDeliveryHalted)).toEqual([]);
  });
});
