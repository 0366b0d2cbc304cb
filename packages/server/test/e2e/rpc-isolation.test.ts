/**
 * End-to-end project isolation, the expression part (protocol §18.4: an expression is evaluated
 * from the source stream's own project): with tokens for projects A and B, an itx-call subscription
 * is evaluated from its source stream's project root on every delivery, so a worker of another
 * project is unreachable even under the same name; and an RPC session of A reaches neither B's
 * workers nor B's streams. Workers are served in this process over real RPC (serveWorker).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, serveWorker, type ItxBatch, type ItxConnection } from '@rivulet/client';
import { Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { EventType, allEvents, caughtUp, configured, eventually, outboundOf, runtimeOf } from '../helpers/subscriptions.js';
import { Echo, rpcError, type EchoStub } from '../fixtures/rpc-helpers.js';

const TOKEN_A = 'token-isolation-a-0001';
const TOKEN_B = 'token-isolation-b-0001';
const TOKEN_ADMIN = 'token-isolation-admin1';
const KNOBS = { retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 500, deliveryTimeoutMs: 2_000 } as const;
const EXPRESSION = ['workers', ['get', 'billing'], 'processEventBatch'];

let server: TestServer;
let apiA: Api;
let apiB: Api;
const open: ItxConnection[] = [];

async function connectAs(token: string, projectId?: string): Promise<ItxConnection> {
  const itx = await connect(server.url, { token, projectId, reconnect: false });
  open.push(itx);
  return itx;
}

/** serveWorker("billing") on a connection; answers the batches it receives. */
async function billingWorker(itx: ItxConnection): Promise<ItxBatch[]> {
  const seen: ItxBatch[] = [];
  const served = serveWorker(itx, 'billing', {
    processEventBatch: (batch) => {
      seen.push(batch);
      return { ok: true };
    },
  });
  await served.ready;
  return seen;
}

function billing(key: string) {
  return configured({
    subscriptionKey: key,
    filter: { eventTypes: ['invoice'] },
    receiver: { action: 'itx-call', expression: EXPRESSION, delivery: { start: 'beginning', onFailingEvent: 'skip' } },
  });
}

beforeAll(async () => {
  server = await startTestServer({
    ...KNOBS,
    tokens: new Map([
      [TOKEN_A, 'proj-a'],
      [TOKEN_B, 'proj-b'],
      [TOKEN_ADMIN, '*'],
    ]),
  });
  apiA = new Api(server.url).withToken(TOKEN_A);
  apiB = new Api(server.url).withToken(TOKEN_B);
});

afterAll(async () => {
  for (const itx of open) itx.close();
  await server?.close();
});

describe('an expression cannot reach another project', () => {
  it('A\'s itx-call naming worker "billing" never reaches B\'s (or the deployment-wide) "billing": unavailable until A registers its own, then A\'s events reach A\'s worker only', async () => {
    const seenB = await billingWorker(await connectAs(TOKEN_B));
    const seenGlobal = await billingWorker(await connectAs(TOKEN_ADMIN));
    expect(server.server.workers.has('proj-b', 'billing')).toBe(true);
    expect(server.server.workers.has(null, 'billing')).toBe(true);

    // The same path in both projects, each with the same subscription.
    const path = '/s46/invoices';
    await apiA.append(path, billing('bill'));
    await apiB.append(path, billing('bill'));
    const inA = await apiA.append(path, [
      { type: 'invoice', payload: { project: 'a', n: 1 } },
      { type: 'invoice', payload: { project: 'a', n: 2 } },
    ]);
    const inB = await apiB.append(path, { type: 'invoice', payload: { project: 'b', n: 1 } });

    // B's subscription reaches B's worker.
    await caughtUp(apiB, path, 'bill');
    expect(seenB.map((b) => [b.projectId, b.events.map((e) => e.payload)])).toEqual([['proj-b', [inB[0]!.payload]]]);

    // A's delivery is unavailable: there is no worker "billing" in A's project. It is retried,
    // never skipped (skip policy, many attempts) and never reaches B's or the global worker.
    const row = await eventually(
      async () => {
        const r = await runtimeOf(apiA, path, 'bill');
        return r && r.attempt >= 5 ? r : undefined;
      },
      'A\'s delivery to fail 5 times',
    );
    expect(row.lastError).toContain('no worker "billing" is connected in this project');
    expect(row.acknowledgedOffset).toBeLessThan(inA[0]!.offset);
    expect((await allEvents(apiA, path)).filter((e) => e.type === EventType.errorOccurred)).toEqual([]);
    expect((await outboundOf(apiA, path, 'bill'))?.deliveryHalted).toBeUndefined();
    expect(seenB.every((b) => b.projectId === 'proj-b')).toBe(true);
    expect(seenB).toHaveLength(1);
    expect(seenGlobal).toEqual([]);

    // A registers its own "billing": A's events arrive there, and only there.
    const seenA = await billingWorker(await connectAs(TOKEN_A));
    await caughtUp(apiA, path, 'bill');
    expect(seenA.flatMap((b) => b.events.map((e) => e.payload))).toEqual(inA.map((e) => e.payload));
    expect(seenA.every((b) => b.projectId === 'proj-a' && b.path === path)).toBe(true);
    expect(seenB).toHaveLength(1);
    expect(seenGlobal).toEqual([]);

    // And B's later events still go to B's worker only.
    const [later] = await apiB.append(path, { type: 'invoice', payload: { project: 'b', n: 2 } });
    await caughtUp(apiB, path, 'bill');
    expect(seenB.flatMap((b) => b.events.map((e) => e.offset))).toEqual([inB[0]!.offset, later!.offset]);
    expect(seenA.flatMap((b) => b.events.map((e) => e.payload))).toEqual(inA.map((e) => e.payload));
  });

  it('an RPC session of A cannot get B\'s worker nor read or write B\'s streams: the same path in A is A\'s stream', async () => {
    const b = await connectAs(TOKEN_B);
    await b.root.workers.register('b-only', new Echo('worker of b'));
    const [bEvent] = await b.root.streams.get('/s46/shared').append({ type: 'secret', payload: { of: 'b' } });

    const a = await connectAs(TOKEN_A);
    expect(await a.root.workers.has('b-only')).toBe(false);
    const refused = await rpcError((a.root.workers.get('b-only') as unknown as EchoStub).who());
    expect(refused.code).toBe('UNAVAILABLE');
    expect(refused.message).toContain('in this project');

    // A's "/s46/shared" is its own stream: it does not exist until A writes it.
    const aShared = a.root.streams.get('/s46/shared');
    expect(await aShared.getEvents()).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    expect(await aShared.state()).toEqual({ core: null, runtime: null });
    const [aEvent] = await aShared.append({ type: 'mine', payload: { of: 'a' } });
    expect(aEvent!.offset).toBe(2);
    const aRead = await aShared.getEvents();
    expect(aRead.events.map((e) => e.type)).toEqual([EventType.created, 'mine']);
    expect(aRead.events[0]!.payload).toMatchObject({ projectId: 'proj-a' });
    const listed = await a.root.streams.list({ prefix: '/s46' });
    expect(listed.streams.map((s) => (s as { path: string }).path)).toEqual(['/s46/invoices', '/s46/shared']);

    // B's stream is untouched; destroying A's does not touch it either.
    expect(await aShared.destroy()).toEqual({ destroyed: true });
    const bRead = await b.root.streams.get('/s46/shared').getEvents();
    expect(bRead.events.map((e) => e.offset)).toEqual([1, bEvent!.offset]);
    expect(bRead.events[1]!.payload).toEqual({ of: 'b' });
    expect((await apiB.read('/s46/shared')).events).toHaveLength(2);
  });
});
