/**
 * Live connections in-process (protocol §19): replay then live with no gap, the options of §19.1,
 * the facts, replacement, validation before anything is replaced, the backlog bound, failing
 * filters and callbacks, destroy, runtime counters and waitForEvent. The same scenarios run end to
 * end over real RPC sessions in test/e2e/live-connections.test.ts.
 */
import { RivuletError, type EventInput, type WaitForEventBody } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { waitForEvent } from '../../src/engine/connections/index.js';
import { ConnectionsHarness, EventType, Recorder, waitFor } from './harness.js';

let harness: ConnectionsHarness;

afterEach(() => harness?.close());

const typed = (type: string, n: number, extra: Partial<EventInput> = {}): EventInput[] =>
  Array.from({ length: n }, (_, i) => ({ type, payload: { i }, ...extra }));

async function rejection(promise: Promise<unknown>): Promise<RivuletError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof RivuletError) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

describe('replay then live', () => {
  it('replays durable matching events after replayAfterOffset, then live ones, with no gap and no duplicate', async () => {
    harness = await ConnectionsHarness.create();
    await harness.append('/a', ...typed('x', 3), ...typed('y', 2), { type: 'x', ephemeral: true });
    const rec = new Recorder();
    const handle = await harness.hub.openConnection(harness.actor('/a'), { replayAfterOffset: 2, filter: { eventTypes: ['x'] } }, rec.callback);
    await waitFor(() => rec.batches.length >= 1, 'the first batch');
    // Offsets 2-4 are x, 5-6 y, 7 an ephemeral x (never replayed); 8 is the connection-opened fact.
    expect(rec.batches[0]!.events.map((e) => e.offset)).toEqual([3, 4]);
    expect(handle.streamMaxOffset).toBe(8);
    await harness.append('/a', { type: 'x', payload: { live: 1 } }, { type: 'y' }, { type: 'x', ephemeral: true });
    await waitFor(() => rec.offsets.length === 4, () => `live events (${rec.offsets})`);
    expect(rec.offsets).toEqual([3, 4, 9, 11]);
    expect(rec.events.at(-1)!.ephemeral).toBe(true);
    // Every batch names the lifetime and carries the state at its head.
    for (const batch of rec.batches) {
      expect(batch).toMatchObject({ projectId: 'proj', path: '/a', streamId: harness.actor('/a').coreState!.streamId });
      expect(batch.state!.maxOffset).toBeLessThanOrEqual(batch.streamMaxOffset);
      expect(batch.events.every((e) => e.offset <= batch.streamMaxOffset)).toBe(true);
    }
  });

  it('keeps the seam exact while appends race with the opening and with a slow replay', async () => {
    harness = await ConnectionsHarness.create();
    await harness.append('/race', ...typed('x', 1200));
    const rec = new Recorder();
    rec.hold();
    const racing: Promise<unknown>[] = [];
    for (let i = 0; i < 20; i++) racing.push(harness.append('/race', ...typed('x', 3), { type: 'x', ephemeral: true }));
    const opening = harness.hub.openConnection(harness.actor('/race'), { replayAfterOffset: 0, maxDeliveryEvents: 300 }, rec.callback);
    for (let i = 0; i < 20; i++) racing.push(harness.append('/race', ...typed('x', 2), { type: 'x', ephemeral: true }));
    await Promise.all([opening, ...racing]);
    rec.release();
    const all = harness.events('/race');
    const opened = all.find((e) => e.type === EventType.connectionOpened)!;
    // Every durable event but its own fact, and every ephemeral one appended after the opening.
    const durable = all.filter((e) => !e.ephemeral && e.offset !== opened.offset).map((e) => e.offset);
    const laterEphemeral = all.filter((e) => e.ephemeral && e.offset > opened.offset).map((e) => e.offset);
    await waitFor(() => durable.every((o) => rec.offsets.includes(o)), () => `${rec.offsets.length} of ${durable.length} durable events`);
    await waitFor(() => laterEphemeral.every((o) => rec.offsets.includes(o)), 'the later ephemeral events');
    expect(rec.events.filter((e) => !e.ephemeral).map((e) => e.offset)).toEqual(durable);
    // In order, each once.
    expect(rec.offsets).toEqual([...new Set(rec.offsets)].sort((a, b) => a - b));
    expect(Math.max(...rec.batches.map((b) => b.events.length))).toBeLessThanOrEqual(300);
  });

  it('live only: an immediate empty batch with the current state, then only what is appended after the opening', async () => {
    harness = await ConnectionsHarness.create();
    await harness.append('/live', ...typed('x', 2));
    const rec = new Recorder();
    const handle = await harness.hub.openConnection(harness.actor('/live'), {}, rec.callback);
    await waitFor(() => rec.batches.length === 1, 'the first batch');
    expect(rec.batches[0]!.events).toEqual([]);
    expect(rec.batches[0]!.state).toMatchObject({ eventCount: 4, maxOffset: 4 });
    expect(rec.batches[0]!.streamMaxOffset).toBe(handle.streamMaxOffset);
    await harness.append('/live', { type: 'x', ephemeral: true }, { type: 'y' });
    await waitFor(() => rec.offsets.length === 2, 'two live events');
    expect(rec.offsets).toEqual([5, 6]);
  });

  it('opening a stream that does not exist creates it; a replay from 0 sees its created event live', async () => {
    harness = await ConnectionsHarness.create();
    const rec = new Recorder();
    const handle = await harness.hub.openConnection(harness.actor('/fresh'), { replayAfterOffset: 0 }, rec.callback);
    expect(handle.streamMaxOffset).toBe(2);
    await waitFor(() => rec.offsets.length === 1, 'the created event');
    expect(rec.events[0]!.type).toBe(EventType.created);
    expect(harness.facts('/fresh').map((e) => e.offset)).toEqual([2]);
  });
});

describe('options', () => {
  it('maxDeliveryEvents splits one large atomic append into several batches with no gap', async () => {
    harness = await ConnectionsHarness.create();
    await harness.append('/split', { type: 'x' });
    const rec = new Recorder();
    await harness.hub.openConnection(harness.actor('/split'), { maxDeliveryEvents: 10 }, rec.callback);
    await waitFor(() => rec.batches.length === 1, 'the first batch');
    const [first] = await harness.append('/split', ...typed('x', 25));
    await waitFor(() => rec.offsets.length === 25, 'all 25 events');
    expect(rec.batches.slice(1).map((b) => b.events.length)).toEqual([10, 10, 5]);
    expect(rec.offsets).toEqual(Array.from({ length: 25 }, (_, i) => first!.offset + i));
    // Every part names the same head: the append was one commit.
    expect(new Set(rec.batches.slice(1).map((b) => b.streamMaxOffset)).size).toBe(1);
  });

  it('events: false sends the state alone, one batch per commit with a matching event, coalesced while busy', async () => {
    harness = await ConnectionsHarness.create();
    await harness.append('/state', { type: 'x' });
    const rec = new Recorder();
    await harness.hub.openConnection(harness.actor('/state'), { events: false, filter: { eventTypes: ['x'] } }, rec.callback);
    await waitFor(() => rec.batches.length === 1, 'the first batch');
    rec.hold();
    await harness.append('/state', { type: 'x' });
    await waitFor(() => rec.waiting === 1, 'the second batch, held');
    await harness.append('/state', { type: 'x' });
    await harness.append('/state', { type: 'x' });
    await harness.append('/state', { type: 'y' });
    rec.release();
    await waitFor(() => rec.batches.length === 3, 'the coalesced batch');
    expect(rec.batches.every((b) => b.events.length === 0)).toBe(true);
    expect(rec.batches.map((b) => b.state!.eventCount)).toEqual([3, 4, 7]);
    await harness.append('/state', { type: 'y' }, { type: 'x', ephemeral: true });
    await harness.append('/state', { type: 'x' });
    await waitFor(() => rec.batches.length === 4, 'a batch for the next x');
    expect(rec.batches[3]!.state!.eventCount).toBe(9);
  });

  it('state: false sends state null', async () => {
    harness = await ConnectionsHarness.create();
    const rec = new Recorder();
    await harness.hub.openConnection(harness.actor('/nostate'), { state: false }, rec.callback);
    await harness.append('/nostate', { type: 'x' });
    await waitFor(() => rec.offsets.length === 1, 'one event');
    expect(rec.batches.every((b) => b.state === null)).toBe(true);
  });

  it('opens on a paused stream (platform facts are accepted) and sees the resume', async () => {
    harness = await ConnectionsHarness.create();
    await harness.append('/paused', { type: EventType.paused, payload: { reason: 'maintenance' } });
    const rec = new Recorder();
    await harness.hub.openConnection(harness.actor('/paused'), { filter: { eventTypes: [EventType.resumed] } }, rec.callback);
    const [resumed] = await harness.append('/paused', { type: EventType.resumed });
    await waitFor(() => rec.offsets.length === 1, 'the resumed event');
    expect(rec.offsets).toEqual([resumed!.offset]);
  });

  it('a JSONata condition sees the whole committed event', async () => {
    harness = await ConnectionsHarness.create();
    const rec = new Recorder();
    await harness.hub.openConnection(harness.actor('/cond'), { filter: { jsonataCondition: 'payload.n > 1 and metadata.by = "ci"' } }, rec.callback);
    await harness.append('/cond', { type: 'a', payload: { n: 1 }, metadata: { by: 'ci' } }, { type: 'a', payload: { n: 2 }, metadata: { by: 'ci' } }, { type: 'a', payload: { n: 3 } });
    await waitFor(() => rec.offsets.length === 1, 'the one match');
    expect(rec.events[0]!.payload).toEqual({ n: 2 });
  });
});

describe('facts, keys and replacement', () => {
  it('opening and closing append platform facts; closing stops delivery and frees the key', async () => {
    harness = await ConnectionsHarness.create();
    const rec = new Recorder();
    const handle = await harness.hub.openConnection(harness.actor('/facts'), { connectionKey: 'k', replayAfterOffset: 0, filter: { eventTypes: ['x'] } }, rec.callback);
    expect(harness.actor('/facts').connectionKeys.has('k')).toBe(true);
    expect(await handle.close()).toBe(true);
    expect(await handle.close()).toBe(false);
    expect(await handle.closed).toEqual({ reason: 'requested' });
    expect(harness.actor('/facts').connectionKeys.has('k')).toBe(false);
    const facts = harness.facts('/facts');
    expect(facts.map((e) => [e.type, e.payload])).toEqual([
      [EventType.connectionOpened, { connectionKey: 'k', kind: 'live', replayAfterOffset: 0, filter: { eventTypes: ['x'] } }],
      [EventType.connectionClosed, { connectionKey: 'k', reason: 'requested' }],
    ]);
    await harness.append('/facts', { type: 'x' });
    expect(rec.offsets).toEqual([]);
    // Core state knows nothing of connections.
    expect(JSON.stringify(harness.actor('/facts').coreState)).not.toContain('"k"');
  });

  it('the same key replaces the old callback atomically', async () => {
    harness = await ConnectionsHarness.create();
    await harness.append('/swap', { type: 'first' });
    const oldRec = new Recorder();
    const newRec = new Recorder();
    const old = await harness.hub.openConnection(harness.actor('/swap'), { connectionKey: 'same' }, oldRec.callback);
    await harness.append('/swap', { type: 'x', payload: { to: 'old' } });
    await waitFor(() => oldRec.offsets.length === 1, 'the old callback’s event');
    const appends = [harness.append('/swap', { type: 'x', payload: { n: 1 } })];
    const replacing = harness.hub.openConnection(harness.actor('/swap'), { connectionKey: 'same' }, newRec.callback);
    appends.push(harness.append('/swap', { type: 'x', payload: { n: 2 } }));
    const fresh = await replacing;
    await Promise.all(appends);
    expect(await old.closed).toEqual({ reason: 'replaced' });
    const facts = harness.facts('/swap');
    const closed = facts.find((e) => e.type === EventType.connectionClosed)!;
    const reopened = facts.at(-1)!;
    expect(closed.payload).toEqual({ connectionKey: 'same', reason: 'replaced' });
    expect(reopened.offset).toBe(closed.offset + 1);
    expect(fresh.streamMaxOffset).toBe(reopened.offset);
    // Every x reaches exactly one of them, the old one nothing at or after its close.
    await harness.append('/swap', { type: 'x', payload: { n: 3 } });
    const xs = harness.events('/swap').filter((e) => e.type === 'x').map((e) => e.offset);
    await waitFor(() => oldRec.dataOffsets.length + newRec.dataOffsets.length === xs.length, 'every x delivered');
    expect([...oldRec.dataOffsets, ...newRec.dataOffsets].sort((a, b) => a - b)).toEqual(xs);
    expect(oldRec.dataOffsets.every((o) => o < closed.offset)).toBe(true);
    expect(newRec.dataOffsets).toContain(xs.at(-1));
    // Neither sees the facts of the replacement.
    expect(newRec.offsets).not.toContain(reopened.offset);
    expect(harness.actor('/swap').connectionKeys.has('same')).toBe(true);
  });

  it('invalid coordinates reject before anything is replaced and append nothing', async () => {
    harness = await ConnectionsHarness.create();
    await harness.append('/coords', ...typed('x', 10));
    const rec = new Recorder();
    await harness.hub.openConnection(harness.actor('/coords'), { connectionKey: 'k' }, rec.callback);
    await harness.append('/coords', {
      type: EventType.subscriptionConfigured,
      payload: { subscriptionKey: 'sub', receiver: { action: 'copy-to-stream', receivingStreamPath: '/elsewhere', delivery: { start: 'now', onFailingEvent: 'halt' } } },
    });
    const before = harness.events('/coords').length;
    const actor = harness.actor('/coords');
    const open = (options: object) => harness.hub.openConnection(actor, { connectionKey: 'k', ...options }, new Recorder().callback);
    const gap = await rejection(open({ replayAfterOffset: 1, maxReplayOffsetGap: 5 }));
    expect(gap.code).toBe('INVALID_INPUT');
    expect(gap.message).toMatch(/more than maxReplayOffsetGap 5/);
    expect((await rejection(open({ replayAfterOffset: Number.NaN }))).code).toBe('INVALID_INPUT');
    expect((await rejection(open({ replayAfterOffset: -1 }))).code).toBe('INVALID_INPUT');
    expect((await rejection(open({ replayAfterOffset: 2 ** 60 }))).code).toBe('INVALID_INPUT');
    const beyond = await rejection(open({ replayAfterOffset: 999 }));
    expect(beyond.message).toMatch(/beyond this stream's current maximum offset 13/);
    const lifetime = await rejection(open({ expectedStreamId: '00000000-0000-4000-8000-00000000ffff' }));
    expect(lifetime.code).toBe('CONFLICT');
    const held = await rejection(harness.hub.openConnection(actor, { connectionKey: 'sub' }, new Recorder().callback));
    expect(held.code).toBe('CONFLICT');
    expect(held.message).toMatch(/held by a subscription/);
    expect((await rejection(open({ connectionKey: 'subscription:3' }))).code).toBe('INVALID_INPUT');
    expect((await rejection(open({ filter: { jsonataCondition: '(' } }))).code).toBe('INVALID_INPUT');
    expect((await rejection(open({ events: false, replayAfterOffset: 0 }))).code).toBe('INVALID_INPUT');
    // Nothing was appended and the old callback still holds the key and receives.
    expect(harness.events('/coords').length).toBe(before);
    await harness.append('/coords', { type: 'after' });
    await waitFor(() => rec.events.some((e) => e.type === 'after'), 'the old callback receiving');
    // The other direction: a subscription may not take a live connection's key.
    const configure = await rejection(
      harness.append('/coords', {
        type: EventType.subscriptionConfigured,
        payload: { subscriptionKey: 'k', receiver: { action: 'copy-to-stream', receivingStreamPath: '/elsewhere', delivery: { start: 'now', onFailingEvent: 'halt' } } },
      }),
    );
    expect(configure.code).toBe('CONFLICT');
  });
});

describe('failures and bounds', () => {
  it('a filter that throws delivers the healthy prefix, then closes with delivery-failed and the error', async () => {
    harness = await ConnectionsHarness.create();
    const rec = new Recorder();
    const handle = await harness.hub.openConnection(
      harness.actor('/throw'),
      { connectionKey: 'f', filter: { jsonataCondition: 'payload.bad ? $error("bad event") : true' } },
      rec.callback,
    );
    await harness.append('/throw', { type: 'x', payload: { n: 1 } }, { type: 'x', payload: { bad: true } }, { type: 'x', payload: { n: 3 } });
    const closed = await handle.closed;
    expect(closed.reason).toBe('delivery-failed');
    expect(closed.error).toMatch(/event 4 .*bad event/);
    expect(rec.dataOffsets).toEqual([3]);
    await waitFor(() => harness.facts('/throw').length === 2, 'the closed fact');
    expect(harness.facts('/throw')[1]!.payload).toEqual({ connectionKey: 'f', reason: 'delivery-failed', error: closed.error });
  });

  it('a callback that rejects closes the connection with delivery-failed', async () => {
    harness = await ConnectionsHarness.create();
    const rec = new Recorder();
    rec.failWith = new Error('receiver exploded');
    const handle = await harness.hub.openConnection(harness.actor('/reject'), {}, rec.callback);
    expect(await handle.closed).toEqual({ reason: 'delivery-failed', error: 'processEventBatch failed: receiver exploded' });
  });

  it('a slow callback blocks neither appends nor other connections; one that overflows its backlog is closed', async () => {
    harness = await ConnectionsHarness.create({ maxBacklogEvents: 50 });
    await harness.append('/slow', { type: 'first' });
    const slow = new Recorder();
    const fast = new Recorder();
    const slowHandle = await harness.hub.openConnection(harness.actor('/slow'), { connectionKey: 'slow' }, slow.callback);
    await harness.hub.openConnection(harness.actor('/slow'), { connectionKey: 'fast' }, fast.callback);
    await waitFor(() => slow.batches.length === 1 && fast.batches.length === 1, 'both first batches');
    slow.hold();
    await harness.append('/slow', { type: 'x' });
    await waitFor(() => slow.waiting === 1, 'the slow callback holding a batch');
    for (let i = 0; i < 30; i++) await harness.append('/slow', { type: 'x' });
    await waitFor(() => fast.dataOffsets.length === 31, 'the fast connection keeping up');
    const runtime = harness.hub.runtime(harness.actor('/slow'));
    // Its batches so far: the empty first one, then the fast connection's connection-opened fact.
    expect(runtime.slow).toMatchObject({ kind: 'live', batchesSent: 2, eventsSent: 1, lag: 31 });
    expect(runtime.fast).toMatchObject({ kind: 'live', lag: 0, eventsSent: 31 });
    await harness.append('/slow', ...typed('x', 25));
    const closed = await slowHandle.closed;
    expect(closed.reason).toBe('backlog-exceeded');
    expect(closed.error).toMatch(/fell behind by 55 events/);
    slow.release();
    await waitFor(() => fast.dataOffsets.length === 56, 'the fast one unaffected');
    await waitFor(() => harness.facts('/slow').some((e) => e.type === EventType.connectionClosed), 'the closed fact');
    expect(Object.keys(harness.hub.runtime(harness.actor('/slow')))).toEqual(['fast']);
  });

  it('destroying the stream closes its connections without appending anything', async () => {
    harness = await ConnectionsHarness.create();
    const handle = await harness.hub.openConnection(harness.actor('/gone'), { connectionKey: 'd' }, new Recorder().callback);
    await harness.actor('/gone').destroy();
    expect(await handle.closed).toEqual({ reason: 'destroyed', error: 'the stream was destroyed' });
    expect(harness.actor('/gone').exists).toBe(false);
    expect(harness.actor('/gone').connectionKeys.size).toBe(0);
    expect(harness.hub.size).toBe(0);
  });

  it('runtime.connections counts batches and events and measures lag from the delivered offset', async () => {
    harness = await ConnectionsHarness.create();
    await harness.append('/rt', ...typed('x', 5));
    const rec = new Recorder();
    await harness.hub.openConnection(harness.actor('/rt'), { connectionKey: 'r', replayAfterOffset: 0, filter: { eventTypes: ['x'] } }, rec.callback);
    await waitFor(() => rec.offsets.length === 5, 'the replay');
    await harness.append('/rt', { type: 'y' }, { type: 'x' });
    await waitFor(() => rec.offsets.length === 6, 'the live x');
    const state = await waitFor(() => {
      const r = harness.hub.runtime(harness.actor('/rt')).r;
      return r && r.lag === 0 ? r : undefined;
    }, 'lag 0');
    expect(state).toMatchObject({ kind: 'live', batchesSent: 2, eventsSent: 6, deliveredThroughOffset: 9, lag: 0 });
    expect(Date.parse(state.startedAt)).not.toBeNaN();
  });
});

describe('waitForEvent', () => {
  const waitOn = (path: string, body: WaitForEventBody) => waitForEvent(harness.hub, harness.actor(path), body);

  it('answers a historical durable match and a live one, each with one opened/closed pair', async () => {
    harness = await ConnectionsHarness.create();
    await harness.append('/wait', { type: 'x', payload: { n: 1 } }, { type: 'x', payload: { n: 2 } });
    const historical = await waitOn('/wait', { afterOffset: 0, jsonataCondition: 'payload.n = 2', timeoutMs: 1000 });
    expect(historical.event).toMatchObject({ offset: 3, payload: { n: 2 } });
    const live = waitOn('/wait', { eventTypes: ['y'], timeoutMs: 2000 });
    await waitFor(() => harness.facts('/wait').length === 3, 'the live wait to open');
    const [y] = await harness.append('/wait', { type: 'y' });
    expect((await live).event).toEqual(y);
    const facts = harness.facts('/wait').map((e) => [e.type.split('/').pop(), (e.payload as { reason?: string }).reason, (e.payload as { kind?: string }).kind]);
    expect(facts).toEqual([
      ['connection-opened', undefined, 'wait'],
      ['connection-closed', 'matched', undefined],
      ['connection-opened', undefined, 'wait'],
      ['connection-closed', 'matched', undefined],
    ]);
    expect(harness.actor('/wait').connectionKeys.size).toBe(0);
  });

  it('never answers its own connection-opened fact', async () => {
    harness = await ConnectionsHarness.create();
    await harness.append('/own', { type: 'x' });
    const error = await rejection(waitOn('/own', { afterOffset: 2, timeoutMs: 50 }));
    expect(error.code).toBe('TIMEOUT');
    expect(error.message).toMatch(/no event was appended after offset 2/);
  });

  it('times out with TIMEOUT and a message naming what it saw', async () => {
    harness = await ConnectionsHarness.create();
    await harness.append('/late', ...typed('x', 4), ...typed('y', 2));
    const error = await rejection(waitOn('/late', { afterOffset: 1, eventTypes: ['x'], jsonataCondition: 'payload.i > 100', timeoutMs: 60 }));
    expect(error.code).toBe('TIMEOUT');
    expect(error.message).toBe(
      'waitForEvent on /late timed out after 60 ms: it saw 6 events after offset 1 (through offset 8); 4 of type x, none satisfied the jsonataCondition',
    );
    expect(error.details).toMatchObject({ timeoutMs: 60, afterOffset: 1, eventsSeen: 6, eventsOfRequestedTypes: 4 });
    const closed = harness.facts('/late').at(-1)!;
    expect(closed.payload).toMatchObject({ reason: 'timed-out' });
  });

  it('a destroyed stream ends the wait with CONFLICT', async () => {
    harness = await ConnectionsHarness.create();
    await harness.append('/boom', { type: 'x' });
    const wait = waitOn('/boom', { timeoutMs: 2000 });
    await waitFor(() => harness.actor('/boom').connectionKeys.size === 1, 'the wait to open');
    await harness.actor('/boom').destroy();
    expect((await rejection(wait)).code).toBe('CONFLICT');
  });
});
