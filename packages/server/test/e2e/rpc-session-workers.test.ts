/**
 * End-to-end: workers over the RPC endpoint /v1/rpc (protocol §18.2): `workers.register/get/has`
 * with replacement, unregistration, per-project names and the end of a session, and a disposal
 * test of thousands of connect → register → close cycles.
 *
 * Note: this process also runs the server, whose module installs `ws` as the global WebSocket on
 * Node 20; the SDK then takes its "no headers" path and sends the token as `?token=`.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '@rivulet/client';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { eventually } from '../helpers/subscriptions.js';
import { Echo, TOKEN_A, TOKEN_ADMIN, TOKEN_B, collectGarbage, rpcError, type EchoStub } from '../fixtures/rpc-helpers.js';

const echoOf = (stub: unknown) => stub as EchoStub;

describe('workers: register, get, has, replacement, unregister, end of session, per-project names', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({
      tokens: new Map([
        [TOKEN_A, 'proj-a'],
        [TOKEN_B, 'proj-b'],
        [TOKEN_ADMIN, '*'],
      ]),
    });
  });

  afterAll(async () => {
    await server?.close();
  });

  const connectAs = (token: string) => connect(server.url, { token, reconnect: false });

  afterEach(async () => {
    await eventually(() => server.server.workers.size === 0 && server.server.rpcSessions === 0, 'every registration and session to end');
  });

  it('register makes a target reachable by name; re-registering replaces it (calls go to the new one; the old handle\'s unregister answers false); unregister ends it', async () => {
    const w1 = await connectAs(TOKEN_A);
    const w2 = await connectAs(TOKEN_A);
    const caller = await connectAs(TOKEN_A);
    try {
      expect(await caller.root.workers.has('echo')).toBe(false);
      // Another registration in the same project. Without it, re-registering the project's only
      // name loses the new registration: see rpc-registry-replace.test.ts.txt (a bug).
      await caller.root.workers.register('bystander', new Echo('bystander'));
      const first = await w1.root.workers.register('echo', new Echo('w1'));
      expect(await caller.root.workers.has('echo')).toBe(true);
      expect(server.server.workers.size).toBe(2);
      expect(await echoOf(caller.root.workers.get('echo')).ping(1)).toEqual({ from: 'w1', x: 1 });
      expect(await echoOf(w2.root.workers.get('echo')).who()).toBe('w1');

      const second = await w2.root.workers.register('echo', new Echo('w2'));
      expect(server.server.workers.size).toBe(2);
      expect(await echoOf(caller.root.workers.get('echo')).ping(2)).toEqual({ from: 'w2', x: 2 });
      expect(await first.unregister()).toEqual({ unregistered: false });
      // The replaced registration's unregister did not touch the new one.
      expect(await echoOf(caller.root.workers.get('echo')).who()).toBe('w2');

      expect(await second.unregister()).toEqual({ unregistered: true });
      expect(await second.unregister()).toEqual({ unregistered: false });
      expect(await caller.root.workers.has('echo')).toBe(false);
      expect(server.server.workers.has('proj-a', 'bystander')).toBe(true);
      expect(server.server.workers.size).toBe(1);
      const gone = await rpcError(echoOf(caller.root.workers.get('echo')).who());
      expect(gone.code).toBe('UNAVAILABLE');
      expect(gone.message).toContain('no worker "echo"');
      // w1's session ending later does not remove anything it no longer holds.
      w1.close();
      await eventually(() => server.server.rpcSessions === 2, 'w1 to disconnect');
      expect(server.server.workers.has('proj-a', 'bystander')).toBe(true);
    } finally {
      w1.close();
      w2.close();
      caller.close();
    }
  });

  it('a registration ends with its session (server.workers.size back to 0); disposing the handle does not unregister', async () => {
    const w = await connectAs(TOKEN_A);
    const caller = await connectAs(TOKEN_A);
    try {
      const handle = await w.root.workers.register('ends-x', new Echo('x'));
      await w.root.workers.register('ends-y', new Echo('y'));
      handle[Symbol.dispose]();
      expect(await echoOf(caller.root.workers.get('ends-x')).who()).toBe('x');
      expect(server.server.workers.size).toBe(2);
      w.close();
      await eventually(() => server.server.workers.size === 0, 'the registrations to end with the session');
      expect(await caller.root.workers.has('ends-x')).toBe(false);
      expect(await caller.root.workers.has('ends-y')).toBe(false);
    } finally {
      w.close();
      caller.close();
    }
    await eventually(() => server.server.rpcSessions === 0, 'every session to close');
  });

  it('names are per project: the same name in two projects reaches two different workers', async () => {
    const wa = await connectAs(TOKEN_A);
    const wb = await connectAs(TOKEN_B);
    const admin = await connectAs(TOKEN_ADMIN);
    try {
      await wa.root.workers.register('same', new Echo('in-a'));
      await wb.root.workers.register('same', new Echo('in-b'));
      expect(server.server.workers.size).toBe(2);
      expect(await echoOf(wa.root.workers.get('same')).who()).toBe('in-a');
      expect(await echoOf(wb.root.workers.get('same')).who()).toBe('in-b');
      // Deployment-wide (admin without a project) is a third namespace.
      expect(await admin.root.workers.has('same')).toBe(false);
      expect(server.server.workers.has('proj-a', 'same') && server.server.workers.has('proj-b', 'same')).toBe(true);
    } finally {
      wa.close();
      wb.close();
      admin.close();
    }
    await eventually(() => server.server.workers.size === 0 && server.server.rpcSessions === 0, 'every registration and session to end');
  });

  it('register refuses a bad name or a target passed by value (INVALID_INPUT)', async () => {
    const w = await connectAs(TOKEN_A);
    try {
      for (const name of ['', 'two words', 'x'.repeat(201)]) {
        expect((await rpcError(w.root.workers.register(name, new Echo('bad')))).code, JSON.stringify(name)).toBe('INVALID_INPUT');
      }
      expect((await rpcError(w.root.workers.register('plain', { who: 'not a stub' }))).code).toBe('INVALID_INPUT');
      expect(server.server.workers.size).toBe(0);
    } finally {
      w.close();
    }
  });
});

describe('disposal: thousands of connect → register → close cycles', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });

  afterAll(async () => {
    await server?.close();
  });

  it('leave no registration, no session, and a bounded heap behind', { timeout: 50_000 }, async () => {
    const gc = collectGarbage();
    const CYCLES = 2000;
    const PARALLEL = 8;
    const BUDGET_MS = 20_000;
    const started = Date.now();
    let done = 0;

    const cycle = async (i: number) => {
      const itx = await connect(server.url, { reconnect: false });
      try {
        const name = `leak-${i % 16}`;
        await itx.root.workers.register(name, new Echo(`c${i}`));
        // Every fourth cycle also calls through the registry (a stub duplicated for the caller).
        if (i % 4 === 0) expect(await echoOf(itx.root.workers.get(name)).ping(i)).toEqual({ from: `c${i}`, x: i });
      } finally {
        itx.close();
      }
      done++;
    };
    const run = async (count: number) => {
      let next = done;
      const end = done + count;
      await Promise.all(
        Array.from({ length: PARALLEL }, async () => {
          while (next < end && Date.now() - started < BUDGET_MS) await cycle(next++);
        }),
      );
    };
    const settled = () =>
      eventually(() => server.server.workers.size === 0 && server.server.rpcSessions === 0, 'no registration and no session left', 10_000);
    const heap = () => {
      gc?.();
      gc?.();
      return process.memoryUsage().heapUsed;
    };

    await run(200); // warm-up: module caches, JIT, pools
    await settled();
    const baseline = heap();
    await run(CYCLES - 200);
    await settled();
    const grown = heap() - baseline;
    const cycles = done - 200;
    // Report what was measured (visible with --reporter=verbose or on failure).
    console.info(
      `rpc disposal: ${done} cycles in ${Date.now() - started} ms; heap growth after ${cycles} cycles: ` +
        `${(grown / 1024 / 1024).toFixed(2)} MiB (${gc ? 'after a forced gc' : 'no gc available: generous bound'})`,
    );
    expect(done, 'cycles completed within the time budget').toBeGreaterThanOrEqual(1000);
    expect(server.server.workers.size).toBe(0);
    expect(server.server.rpcSessions).toBe(0);
    // Both sides of every session live in this process. A leak of one session object graph per
    // cycle (tens of KiB: socket, capnweb tables, stubs) would grow the heap by well over the bound.
    const bound = gc ? 8 * 1024 * 1024 : 48 * 1024 * 1024;
    expect(grown, `heap grew ${grown} bytes over ${cycles} cycles`).toBeLessThan(bound);
  });
});
