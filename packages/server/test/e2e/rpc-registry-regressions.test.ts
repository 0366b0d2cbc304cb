/**
 * FAILING (bug in packages/server/src/engine/itx/worker-registry.ts `CallableRegistry.register`):
 * re-registering a name that is the only registration of its project loses the NEW registration.
 *
 *   let names = this.byProject.get(projectKey);          // the project's map
 *   const previous = names.get(name);
 *   if (previous) this.drop(projectKey, name, previous);  // drop() empties the map and deletes it
 *                                                         // from byProject (names.size === 0)
 *   names.set(name, registration);                        // …into the detached map
 *
 * Afterwards `has(name)` is false, `get(name)` is UNAVAILABLE and `size` is 0, although the new
 * registration answered a live handle. Every itx-call naming the worker is then "not connected"
 * until something else registers in that project. This is what a worker sees when it reconnects
 * before the server noticed its old session ending (serveWorker re-registers on the new session):
 * it stays unreachable. With a second name registered in the same project the map survives and
 * replacement works (rpc-session.test.ts covers that case).
 * Expected (protocol §18.2): registering a name again replaces the previous registration: calls go
 * to the new target.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connect, serveWorker } from '@rivulet/client';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { caughtUp, configured } from '../helpers/subscriptions.js';
import { Echo, type EchoStub } from '../fixtures/rpc-helpers.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 100, deliveryTimeoutMs: 2_000 });
});

afterAll(async () => {
  await server?.close();
});

it('re-registering the only name of a project: calls go to the new registration', async () => {
  const w1 = await connect(server.url, { reconnect: false });
  const w2 = await connect(server.url, { reconnect: false });
  try {
    await w1.root.workers.register('solo', new Echo('w1'));
    expect(server.server.workers.size).toBe(1);
    await w2.root.workers.register('solo', new Echo('w2'));
    expect(server.server.workers.has(null, 'solo')).toBe(true); // before the fix: false
    expect(server.server.workers.size).toBe(1); // before the fix: 0
    expect(await (w1.root.workers.get('solo') as unknown as EchoStub).who()).toBe('w2'); // before the fix: UNAVAILABLE 'no worker "solo" is connected in this project'
  } finally {
    w1.close();
    w2.close();
  }
});

it('a worker that registers again on a new session while its old one is still open stays reachable by itx-call', async () => {
  const old = await connect(server.url, { reconnect: false });
  const fresh = await connect(server.url, { reconnect: false });
  const seen: number[] = [];
  try {
    const handler = { processEventBatch: (batch: { events: { offset: number }[] }) => void seen.push(...batch.events.map((e) => e.offset)) };
    await serveWorker(old, 'reconnecting', handler).ready;
    await serveWorker(fresh, 'reconnecting', handler).ready; // as after a reconnect
    await server.api.append(
      '/replace/src',
      configured({
        subscriptionKey: 'k',
        filter: { eventTypes: ['job'] },
        receiver: { action: 'itx-call', expression: ['workers', ['get', 'reconnecting'], 'processEventBatch'], delivery: { start: 'now', onFailingEvent: 'halt' } },
      }),
    );
    const [job] = await server.api.append('/replace/src', { type: 'job' });
    await caughtUp(server.api, '/replace/src', 'k'); // before the fix: times out, lastError 'no worker "reconnecting" is connected in this project'
    expect(seen).toEqual([job!.offset]);
  } finally {
    old.close();
    fresh.close();
  }
});
