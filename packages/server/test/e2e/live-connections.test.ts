/**
 * End to end over real RPC sessions (the SDK's connect, a real server on loopback): live
 * connections (protocol §19): replay and live, filters and state-only batches, split batches,
 * throwing filters, replacement, validation, slow and overflowing callbacks, the end of a session,
 * runtime.connections and the SDK's watch helper. waitForEvent is in live-connections-wait.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, watch, type CommittedEvent, type ConnectionBatch, type ItxConnection, type LiveConnectionRpc } from '@rivulet/client';
import { connectionReads, isFact } from '../helpers/connections.js';
import { expectError, streamRoute } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { EventType, eventually, subscribe } from '../helpers/subscriptions.js';
import { rpcError } from '../fixtures/rpc-helpers.js';

let server: TestServer;
let itx: ItxConnection;

beforeAll(async () => {
  server = await startTestServer();
  itx = await connect(server.url);
});

afterAll(async () => {
  itx?.close();
  await server?.close();
});

/** A processEventBatch that records batches; hold() keeps the next call pending until release(). */
class Sink {
  readonly batches: ConnectionBatch[] = [];
  private gate: { promise: Promise<void>; resolve: () => void } | null = null;
  pendingCalls = 0;

  readonly processEventBatch = async (batch: ConnectionBatch): Promise<void> => {
    this.batches.push(batch);
    while (this.gate) {
      this.pendingCalls++;
      await this.gate.promise;
      this.pendingCalls--;
    }
  };

  hold(): void {
    if (this.gate) return;
    let resolve!: () => void;
    const promise = new Promise<void>((r) => {
      resolve = r;
    });
    this.gate = { promise, resolve };
  }

  release(): void {
    const gate = this.gate;
    this.gate = null;
    gate?.resolve();
  }

  get events(): CommittedEvent[] {
    return this.batches.flatMap((b) => b.events);
  }

  get offsets(): number[] {
    return this.events.map((e) => e.offset);
  }

  eventsOfType(type: string): CommittedEvent[] {
    return this.events.filter((e) => e.type === type);
  }
}

const { facts, connectionsOf } = connectionReads(() => server);

const open = (path: string, sink: Sink, options: Record<string, unknown> = {}) =>
  itx.root.streams.get(path).openConnection({ ...options, processEventBatch: sink.processEventBatch }) as unknown as Promise<LiveConnectionRpc>;

describe('replay + live with a filter, live-only and state-only connections on one stream', () => {
  it('compose on one stream; closing one leaves the others running', async () => {
    const path = '/s12/orders';
    await server.api.append(path, [
      { type: 'order-created', payload: { id: 1, total: 5 } },
      { type: 'order-created', payload: { id: 2, total: 50 } },
      { type: 'note', payload: { total: 99 } },
      { type: 'order-paid', payload: { id: 2, total: 50 } },
    ]);
    const replaying = new Sink();
    const liveOnly = new Sink();
    const stateOnly = new Sink();
    const a = await open(path, replaying, {
      connectionKey: 'replaying',
      replayAfterOffset: 0,
      filter: { eventTypes: ['order-created', 'order-paid'], jsonataCondition: 'payload.total > 10' },
    });
    const b = await open(path, liveOnly, { connectionKey: 'live-only' });
    await open(path, stateOnly, { connectionKey: 'state-only', events: false });
    expect(await a.connectionKey).toBe('replaying');
    await eventually(() => replaying.batches.length >= 1 && liveOnly.batches.length >= 1 && stateOnly.batches.length >= 1, 'three first batches');
    // The replay: only the durable matches, in order.
    expect(replaying.batches[0]!.events.map((e) => e.offset)).toEqual([3, 5]);
    expect(liveOnly.batches[0]!.events).toEqual([]);
    const liveOnlyFrom = await b.streamMaxOffset;

    const appended = await server.api.append(path, [
      { type: 'order-created', payload: { id: 3, total: 30 } },
      { type: 'order-created', payload: { id: 4, total: 3 } },
      { type: 'note', payload: { total: 1000 } },
    ]);
    await eventually(() => replaying.offsets.includes(appended[0]!.offset), 'the live match');
    await eventually(() => liveOnly.offsets.includes(appended[2]!.offset), 'the live-only connection');
    expect(replaying.offsets).toEqual([3, 5, appended[0]!.offset]);
    // Live only: nothing at or before the head it opened at, except the later connections' facts.
    expect(liveOnly.events.filter((e) => !isFact(e)).map((e) => e.offset)).toEqual(appended.map((e) => e.offset));
    expect(liveOnly.offsets.every((o) => o > liveOnlyFrom)).toBe(true);
    // State only: no events, the core state growing.
    await eventually(() => stateOnly.batches.at(-1)!.state!.maxOffset >= appended[2]!.offset, 'a state batch after the append');
    expect(stateOnly.batches.every((batch) => batch.events.length === 0 && batch.state !== null)).toBe(true);

    // Close the live-only one; the others keep running.
    expect(await b.close()).toEqual({ closed: true });
    expect(await b.whenClosed()).toEqual({ reason: 'requested' });
    const [later] = await server.api.append(path, { type: 'order-paid', payload: { id: 3, total: 30 } });
    await eventually(() => replaying.offsets.includes(later!.offset), 'the replaying connection still running');
    await eventually(() => stateOnly.batches.at(-1)!.state!.maxOffset === later!.offset, 'the state-only connection still running');
    expect(liveOnly.offsets).not.toContain(later!.offset);
    const recorded = (await facts(path)).map((e) => [e.type, (e.payload as { connectionKey: string }).connectionKey, (e.payload as { reason?: string }).reason]);
    expect(recorded).toEqual([
      [EventType.connectionOpened, 'replaying', undefined],
      [EventType.connectionOpened, 'live-only', undefined],
      [EventType.connectionOpened, 'state-only', undefined],
      [EventType.connectionClosed, 'live-only', 'requested'],
    ]);
    // runtime.connections lists the open ones with counters; core state knows nothing of them.
    const runtime = await eventually(async () => {
      const c = await connectionsOf(path);
      return c.replaying?.lag === 0 ? c : undefined;
    }, 'the replaying connection caught up');
    expect(Object.keys(runtime).sort()).toEqual(['replaying', 'state-only']);
    expect(runtime.replaying).toMatchObject({ kind: 'live', eventsSent: 4, deliveredThroughOffset: later!.offset, lag: 0 });
    expect(runtime.replaying!.batchesSent).toBeGreaterThanOrEqual(3);
    expect(runtime['state-only']).toMatchObject({ kind: 'live', eventsSent: 0 });
    expect(JSON.stringify((await server.api.state(path)).core)).not.toMatch(/replaying|state-only/);
  });
});

describe('maxDeliveryEvents', () => {
  it('splits a large atomic append into several batches with no gap', async () => {
    const path = '/s13/split';
    await server.api.append(path, { type: 'x' });
    const sink = new Sink();
    await open(path, sink, { maxDeliveryEvents: 7 });
    await eventually(() => sink.batches.length === 1, 'the first batch');
    const appended = await server.api.append(path, Array.from({ length: 50 }, (_, i) => ({ type: 'x', payload: { i } })));
    await eventually(() => sink.offsets.length === 50, '50 events');
    const parts = sink.batches.slice(1);
    expect(parts.map((p) => p.events.length)).toEqual([7, 7, 7, 7, 7, 7, 7, 1]);
    expect(sink.offsets).toEqual(appended.map((e) => e.offset));
    expect(new Set(parts.map((p) => p.streamMaxOffset))).toEqual(new Set([appended.at(-1)!.offset]));
  });
});

describe('a filter that throws', () => {
  it('closes the connection with connection-closed {reason: "delivery-failed", error}', async () => {
    const path = '/s14/throws';
    await server.api.append(path, { type: 'x', payload: { ok: true } });
    const sink = new Sink();
    const handle = await open(path, sink, { connectionKey: 'fragile', filter: { jsonataCondition: 'payload.ok ? true : $error("not ok")' } });
    const [, bad] = await server.api.append(path, [{ type: 'x', payload: { ok: true } }, { type: 'x', payload: { ok: false } }]);
    const closed = await handle.whenClosed();
    expect(closed.reason).toBe('delivery-failed');
    expect(closed.error).toMatch(new RegExp(`event ${bad!.offset} .*not ok`));
    // The healthy prefix was delivered.
    expect(sink.eventsOfType('x').map((e) => e.offset)).toEqual([bad!.offset - 1]);
    const last = await eventually(async () => (await facts(path)).find((e) => e.type === EventType.connectionClosed), 'the closed fact');
    expect(last.payload).toEqual({ connectionKey: 'fragile', reason: 'delivery-failed', error: closed.error });
    expect(await connectionsOf(path)).toEqual({});
  });
});

describe('a callback that rejects', () => {
  it('closes its connection with delivery-failed, naming the callback\'s error', async () => {
    const path = '/live/rejects';
    await server.api.append(path, { type: 'x' });
    let calls = 0;
    const handle = (await itx.root.streams.get(path).openConnection({
      connectionKey: 'refuser',
      processEventBatch: async (batch: ConnectionBatch) => {
        calls++;
        if (batch.events.length > 0) throw new Error('no thanks');
      },
    })) as unknown as LiveConnectionRpc;
    await server.api.append(path, { type: 'x' });
    const closed = await handle.whenClosed();
    expect(closed).toEqual({ reason: 'delivery-failed', error: 'processEventBatch failed: no thanks' });
    expect(calls).toBe(2);
    const fact = await eventually(async () => (await facts(path)).find((e) => e.type === EventType.connectionClosed), 'the closed fact');
    expect(fact.payload).toEqual({ connectionKey: 'refuser', ...closed });
    expect(await connectionsOf(path)).toEqual({});
  });
});

describe('the same key', () => {
  it('atomically replaces the old callback, also from another session (reason "replaced")', async () => {
    const path = '/s15/swap';
    await server.api.append(path, { type: 'x' });
    const first = new Sink();
    const second = new Sink();
    const old = await open(path, first, { connectionKey: 'shared' });
    const [before] = await server.api.append(path, { type: 'x', payload: { to: 'first' } });
    await eventually(() => first.offsets.includes(before!.offset), 'the first callback receiving');
    const other = await connect(server.url);
    try {
      const replacement = (await other.root.streams
        .get(path)
        .openConnection({ connectionKey: 'shared', processEventBatch: second.processEventBatch })) as unknown as LiveConnectionRpc;
      expect(await old.whenClosed()).toEqual({ reason: 'replaced' });
      const [after] = await server.api.append(path, { type: 'x', payload: { to: 'second' } });
      await eventually(() => second.offsets.includes(after!.offset), 'the second callback receiving');
      expect(first.offsets).not.toContain(after!.offset);
      const recorded = await facts(path);
      const closed = recorded.find((e) => e.type === EventType.connectionClosed)!;
      const reopened = recorded.at(-1)!;
      expect(closed.payload).toEqual({ connectionKey: 'shared', reason: 'replaced' });
      expect(reopened).toMatchObject({ type: EventType.connectionOpened, offset: closed.offset + 1 });
      expect(await replacement.streamMaxOffset).toBe(reopened.offset);
      expect(Object.keys(await connectionsOf(path))).toEqual(['shared']);
      // Closing the old handle now changes nothing: the key belongs to the new callback.
      expect(await old.close()).toEqual({ closed: false });
      expect(Object.keys(await connectionsOf(path))).toEqual(['shared']);
    } finally {
      other.close();
    }
  });
});

describe('invalid coordinates and keys', () => {
  it('reject before anything is replaced; a subscription may not take a live connection key', async () => {
    const path = '/s16/coords';
    await server.api.append(path, Array.from({ length: 10 }, () => ({ type: 'x' })));
    await subscribe(server.api, '/s16/receiver', { sourceStreamPath: path, subscriptionKey: 'sub-key' });
    const kept = new Sink();
    await open(path, kept, { connectionKey: 'k' });
    const { streamId } = await server.api.read(path, { limit: 1 });
    const before = (await server.api.readAll(path)).length;
    const stream = itx.root.streams.get(path);
    const attempt = (options: Record<string, unknown>) =>
      rpcError(stream.openConnection({ connectionKey: 'k', ...options, processEventBatch: () => undefined } as never));

    const gap = await attempt({ replayAfterOffset: 2, maxReplayOffsetGap: 3 });
    expect(gap.code).toBe('INVALID_INPUT');
    expect(gap.message).toMatch(/more than maxReplayOffsetGap 3/);
    const nan = await attempt({ replayAfterOffset: Number.NaN });
    expect(nan.code).toBe('INVALID_INPUT');
    expect(nan.message).toMatch(/replayAfterOffset must be a safe integer/);
    expect((await attempt({ replayAfterOffset: -3 })).code).toBe('INVALID_INPUT');
    expect((await attempt({ replayAfterOffset: 10_000 })).message).toMatch(/beyond this stream's current maximum offset/);
    const lifetime = await attempt({ expectedStreamId: '11111111-1111-4111-8111-111111111111' });
    expect(lifetime.code).toBe('CONFLICT');
    expect(lifetime.message).toMatch(/not the expected/);
    expect((await attempt({ expectedStreamId: streamId, replayAfterOffset: 0, maxReplayOffsetGap: 1 })).code).toBe('INVALID_INPUT');
    const reserved = await attempt({ connectionKey: 'sub-key' });
    expect(reserved.code).toBe('CONFLICT');
    expect(reserved.message).toMatch(/held by a subscription/);
    expect((await attempt({ unknownOption: 1 })).code).toBe('INVALID_INPUT');
    expect((await rpcError(stream.openConnection({ connectionKey: 'k' } as never))).message).toMatch(/processEventBatch must be a function/);

    // Nothing was appended, and the existing callback still holds "k" and receives.
    expect((await server.api.readAll(path)).length).toBe(before);
    expect(Object.keys(await connectionsOf(path))).toEqual(['k']);
    const [next] = await server.api.append(path, { type: 'after' });
    await eventually(() => kept.offsets.includes(next!.offset), 'the kept callback receiving');

    // The other direction (protocol §9.2): configuring a subscription with the live key.
    const res = await server.api.request('POST', streamRoute('/s16/receiver2', 'subscribeToEventsFrom'), {
      json: { sourceStreamPath: path, subscriptionKey: 'k' },
    });
    expectError(res, 'CONFLICT', 'held by a live connection');
  });
});

describe('slow and overflowing callbacks', () => {
  it('a slow callback blocks neither appends nor other connections; one that falls 10,000 events behind is closed', async () => {
    const path = '/live/slow';
    await server.api.append(path, { type: 'x' });
    const slow = new Sink();
    const quick = new Sink();
    const slowHandle = await open(path, slow, { connectionKey: 'slow' });
    await open(path, quick, { connectionKey: 'quick' });
    // The slow one also receives the quick one's connection-opened fact: hold only after it, so that
    // the held batch is the next append's on either host.
    await eventually(() => quick.batches.length >= 1 && slow.events.some(isFact), 'first batches');
    slow.hold();
    const [held] = await server.api.append(path, { type: 'x' });
    await eventually(() => slow.pendingCalls === 1, 'the slow callback holding a batch');
    // Appends go on at full speed while the slow callback holds its batch.
    const started = Date.now();
    for (let i = 0; i < 20; i++) await server.api.append(path, { type: 'x', payload: { i } });
    expect(Date.now() - started).toBeLessThan(5000);
    await eventually(() => quick.eventsOfType('x').length === 21, 'the quick connection keeping up');
    const lagging = (await connectionsOf(path)).slow!;
    expect(lagging.lag).toBeGreaterThanOrEqual(20);
    expect(lagging.deliveredThroughOffset).toBeLessThan(held!.offset);
    // 10,000 more events in one append: the slow one's backlog passes the bound.
    await server.api.append(path, Array.from({ length: 10_000 }, (_, i) => ({ type: 'x', payload: { i } })));
    const closed = await slowHandle.whenClosed();
    expect(closed.reason).toBe('backlog-exceeded');
    expect(closed.error).toMatch(/fell behind by 10020 events .* the bound is 10000 events/);
    slow.release();
    await eventually(() => quick.eventsOfType('x').length === 10_021, 'the quick connection unaffected', 10_000);
    const closedFact = await eventually(
      async () => (await facts(path)).find((e) => e.type === EventType.connectionClosed),
      'the closed fact',
    );
    expect(closedFact.payload).toMatchObject({ connectionKey: 'slow', reason: 'backlog-exceeded' });
    expect(Object.keys(await connectionsOf(path))).toEqual(['quick']);
  });
});

describe('the end of a session', () => {
  it('closes its connections ("session-ended") and frees their keys', async () => {
    const path = '/live/session';
    await server.api.append(path, { type: 'x' });
    const session = await connect(server.url, { reconnect: false });
    const sink = new Sink();
    await session.root.streams.get(path).openConnection({ connectionKey: 'ephemeral-session', processEventBatch: sink.processEventBatch });
    expect(Object.keys(await connectionsOf(path))).toEqual(['ephemeral-session']);
    session.close();
    const closed = await eventually(
      async () => (await facts(path)).find((e) => e.type === EventType.connectionClosed),
      'the closed fact',
    );
    expect(closed.payload).toEqual({ connectionKey: 'ephemeral-session', reason: 'session-ended' });
    expect(await connectionsOf(path)).toEqual({});
    // The key is free again: a subscription may take it.
    await subscribe(server.api, '/live/session-receiver', { sourceStreamPath: path, subscriptionKey: 'ephemeral-session' });
  });
});

describe('a destroyed stream', () => {
  it('closes its connections without a fact, so nothing recreates it', async () => {
    const path = '/live/destroyed';
    await server.api.append(path, { type: 'x' });
    const handle = await open(path, new Sink(), { connectionKey: 'doomed' });
    await server.api.destroy(path);
    expect(await handle.whenClosed()).toEqual({ reason: 'destroyed', error: 'the stream was destroyed' });
    expect(await server.api.state(path)).toEqual({ core: null, runtime: null });
    // Its key is free in the next lifetime.
    const again = await open(path, new Sink(), { connectionKey: 'doomed' });
    expect(await again.streamMaxOffset).toBe(2);
  });
});

describe('the SDK watch helper', () => {
  it('watches a stream live from a script in a few lines', async () => {
    const path = '/live/watch';
    await server.api.append(path, [{ type: 'order', payload: { n: 1 } }, { type: 'noise' }]);
    const seen: number[] = [];
    const w = watch(itx, path, { replayAfterOffset: 0, filter: { eventTypes: ['order'] } }, (batch) => {
      for (const e of batch.events) seen.push(e.payload!.n as number);
    });
    await w.ready;
    await server.api.append(path, [{ type: 'order', payload: { n: 2 } }, { type: 'order', payload: { n: 3 } }]);
    await eventually(() => seen.length === 3, 'three orders');
    expect(seen).toEqual([1, 2, 3]);
    expect(w.connectionKey).toMatch(/^connection:/);
    await w.close();
    expect(await w.closed).toEqual({ reason: 'requested' });
    const last = (await facts(path)).at(-1)!;
    expect(last.payload).toEqual({ connectionKey: w.connectionKey, reason: 'requested' });
  });

  it('ends with the server’s error when the first open is refused', async () => {
    const w = watch(itx, '/live/refused', { replayAfterOffset: 5 }, () => undefined);
    await expect(w.ready).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect(await w.closed).toMatchObject({ reason: 'open-failed', code: 'INVALID_INPUT' });
  });
});
