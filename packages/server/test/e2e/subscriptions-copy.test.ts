/**
 * End-to-end over real HTTP: durable copy-to-stream subscriptions (protocol §9–§14), and what they
 * never deliver: ephemeral events and idempotent repeats (§4.2, §4.4, §12.3).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommittedEvent } from '@rivulet/contract';
import { expectError, type Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import {
  EventType,
  RUNTIME_FIELDS,
  allEvents,
  caughtUp,
  command,
  configured,
  copiesOn,
  copyIdempotencyKey,
  copyTo,
  eventually,
  expectedHop,
  headOf,
  inboundOf,
  lastHop,
  lifetimeOf,
  outboundOf,
  runtimeOf,
  settle,
  subscribe,
  waitForCopies,
} from '../helpers/subscriptions.js';

const CREATED = EventType.created;
const CONFIGURED = EventType.subscriptionConfigured;
const REMOVED = EventType.subscriptionRemoved;
const CURSOR_SET = EventType.subscriptionCursorSet;
const PAUSED = EventType.paused;
const RESUMED = EventType.resumed;

let server: TestServer;
let api: Api;
/** A server whose ladder never halts in these tests (a paused receiver is retried, not halted). */
let patient: TestServer;

beforeAll(async () => {
  [server, patient] = await Promise.all([
    startTestServer({ retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 3, deliveryTimeoutMs: 5_000 }),
    startTestServer({ retryBaseMs: 10, retryMaxMs: 40, maxDeliveryAttempts: 100_000, deliveryTimeoutMs: 5_000 }),
  ]);
  api = server.api;
});

afterAll(async () => {
  await Promise.all([server?.close(), patient?.close()]);
});

/** The fields of a committed event a copy must reproduce (type/payload/metadata, omitted stays omitted). */
function body(event: CommittedEvent): Pick<CommittedEvent, 'type' | 'payload' | 'metadata'> {
  return {
    type: event.type,
    ...(event.payload !== undefined ? { payload: event.payload } : {}),
    ...(event.metadata !== undefined ? { metadata: event.metadata } : {}),
  };
}

describe('configure commits on the source alone', () => {
  it('the receiver does not exist until the first copy; then its inbound record is the stamp and one event', async () => {
    const src = '/s18/src';
    const recv = '/s18/recv';
    await api.append(src, { type: 'before' });

    const answer = await subscribe(api, recv, { sourceStreamPath: src, subscriptionKey: 'k18' });
    expect(answer.subscriptionKey).toBe('k18');
    expect(answer.subscriptionConfiguredEvent).toEqual({
      path: src,
      offset: 3,
      createdAt: answer.subscriptionConfiguredEvent.createdAt,
      type: CONFIGURED,
      payload: { subscriptionKey: 'k18', receiver: copyTo(recv) },
    });
    // The one control event is on the source; the receiving stream was not even created.
    const sourceLog = await allEvents(api, src);
    expect(sourceLog.map((e) => [e.offset, e.type])).toEqual([
      [1, CREATED],
      [2, 'before'],
      [3, CONFIGURED],
    ]);
    expect(sourceLog[2]).toEqual(answer.subscriptionConfiguredEvent);
    expect(await outboundOf(api, src, 'k18')).toEqual({
      configuration: { subscriptionKey: 'k18', receiver: copyTo(recv) },
      configuredAtOffset: 3,
      configuredAt: answer.subscriptionConfiguredEvent.createdAt,
    });
    // start "now": the cursor is the configure offset, nothing is owed, and still no receiver.
    expect((await caughtUp(api, src, 'k18')).acknowledgedOffset).toBe(3);
    expect(await api.read(recv)).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    expect(await api.state(recv)).toEqual({ core: null, runtime: null });
    const listed = await api.request<{ streams: { path: string }[] }>('GET', '/v1/streams?prefix=/s18');
    expect(listed.body.streams.map((s) => s.path)).toEqual([src]);

    // The first copy creates the receiver and its passive record.
    const [first] = await api.append(src, { type: 'first', payload: { n: 1 } });
    const [copy] = await waitForCopies(api, recv, 1);
    const recvLog = await allEvents(api, recv);
    expect(recvLog.map((e) => [e.offset, e.type])).toEqual([
      [1, CREATED],
      [2, 'first'],
    ]);
    expect(recvLog[1]).toEqual(copy);
    const { streamId, streamCreatedAt } = await lifetimeOf(api, src);
    expect(lastHop(copy!)).toEqual(expectedHop(first!, { streamId, streamCreatedAt, subscriptionKey: 'k18', cursorChangedAtSourceOffset: 3 }));
    const { core, runtime } = await api.state(recv);
    expect(core!.subscriptions).toEqual({
      inbound: {
        bySourcePath: {
          [src]: {
            k18: { streamId, streamCreatedAt, cursorChangedAtSourceOffset: 3, numEventsReceived: 1, lastEventReceivedAt: copy!.createdAt },
          },
        },
      },
      outbound: { byKey: {} },
    });
    // The receiver stores no configuration and owns no delivery row for the source's subscription.
    expect(runtime!.subscriptions).toEqual({});
  });
});

describe('a bare subscribeToEventsFrom', () => {
  it('without idempotencyKey it is INVALID_INPUT before anything is appended', async () => {
    const src = '/s19/refused-src';
    const recv = '/s19/refused-recv';
    const fresh = await command(api, recv, 'subscribeToEventsFrom', { sourceStreamPath: src });
    expectError(fresh, 'INVALID_INPUT', 'without a subscriptionKey needs an idempotencyKey');
    expect(await api.state(src)).toEqual({ core: null, runtime: null });
    expect(await api.state(recv)).toEqual({ core: null, runtime: null });

    await api.append(src, { type: 'x' });
    const existing = await command(api, recv, 'subscribeToEventsFrom', { sourceStreamPath: src, filter: { eventTypes: ['x'] } });
    expectError(existing, 'INVALID_INPUT', 'needs an idempotencyKey');
    expect(await headOf(api, src)).toBe(2);
    expect((await api.state(src)).core!.subscriptions.outbound.byKey).toEqual({});
  });

  it('generates subscription:<offset>, starts now, retries return the same key and event, copies later control events as inert data', async () => {
    const src = '/s19/src';
    const recv = '/s19/recv';
    await api.append(src, { type: 'old' });

    const first = await subscribe(api, recv, { sourceStreamPath: src, idempotencyKey: 'idem-19' });
    expect(first.subscriptionKey).toBe('subscription:3');
    // The original event stays keyless; reduced state stores the effective key and remembers it was generated.
    expect(first.subscriptionConfiguredEvent).toEqual({
      path: src,
      offset: 3,
      createdAt: first.subscriptionConfiguredEvent.createdAt,
      type: CONFIGURED,
      idempotencyKey: 'idem-19',
      payload: { receiver: copyTo(recv, { start: 'now' }) },
    });
    expect(await outboundOf(api, src, 'subscription:3')).toEqual({
      configuration: { subscriptionKey: 'subscription:3', receiver: copyTo(recv, { start: 'now' }) },
      configuredAtOffset: 3,
      configuredAt: first.subscriptionConfiguredEvent.createdAt,
      subscriptionKeyWasGenerated: true,
    });

    // A retried call is the same subscription: same key, same event, nothing appended.
    const retry = await subscribe(api, recv, { sourceStreamPath: src, idempotencyKey: 'idem-19' });
    expect(retry).toEqual(first);
    expect(await headOf(api, src)).toBe(3);
    // The same idempotency key with another request names a different event.
    expectError(
      await command(api, recv, 'subscribeToEventsFrom', { sourceStreamPath: src, idempotencyKey: 'idem-19', filter: { eventTypes: ['x'] } }),
      'CONFLICT',
      'idempotency key "idem-19" already names a different event',
    );
    expect(await headOf(api, src)).toBe(3);

    // Starts "now": neither "old" nor the configure event is copied.
    expect((await caughtUp(api, src, 'subscription:3')).acknowledgedOffset).toBe(3);
    expect(await api.state(recv)).toEqual({ core: null, runtime: null });

    // Later control events of the source are copied by the wildcard subscription, as data.
    const later = await api.append(src, [
      configured({ subscriptionKey: 'other', receiver: copyTo('/s19/other') }),
      { type: PAUSED, payload: { reason: 'copied pause' } },
      { type: RESUMED },
      { type: REMOVED, payload: { subscriptionKey: 'other' } },
      { type: 'after', payload: { n: 1 } },
    ]);
    expect(later.map((e) => e.offset)).toEqual([4, 5, 6, 7, 8]);
    await caughtUp(api, src, 'subscription:3');
    const copies = await copiesOn(api, recv);
    expect(copies.map((c) => [lastHop(c).offset, c.type])).toEqual(later.map((e) => [e.offset, e.type]));
    copies.forEach((copy, i) => expect(body(copy)).toEqual(body(later[i]!)));

    // They changed nothing on the receiver but its inbound record: not paused, no outbound entry, no delivery row.
    const { streamId, streamCreatedAt } = await lifetimeOf(api, src);
    const { core, runtime } = await api.state(recv);
    expect(core).toMatchObject({ paused: false, pauseReason: null, eventCount: 6, maxOffset: 6 });
    expect(core!.subscriptions).toEqual({
      inbound: {
        bySourcePath: {
          [src]: {
            'subscription:3': {
              streamId,
              streamCreatedAt,
              cursorChangedAtSourceOffset: 3,
              numEventsReceived: 5,
              lastEventReceivedAt: copies[4]!.createdAt,
            },
          },
        },
      },
      outbound: { byKey: {} },
    });
    expect(runtime!.subscriptions).toEqual({});
    // The copied pause did not pause it: a caller's event is accepted.
    await api.append(recv, { type: 'direct' });
    expect(await api.state('/s19/other')).toEqual({ core: null, runtime: null });
  });
});

describe('a copy honours its filter and records an exact hop', () => {
  it('types and a JSONata condition select; each copy has the exact hop, the visible copy key, the original body', async () => {
    const src = '/s20/src';
    const recv = '/s20/recv';
    const answer = await subscribe(api, recv, {
      sourceStreamPath: src,
      subscriptionKey: 'f',
      filter: { eventTypes: ['order', 'refund'], jsonataCondition: 'payload.amount > 10' },
      delivery: { start: 'beginning' },
    });
    const gen = answer.subscriptionConfiguredEvent.offset;
    expect(gen).toBe(2);
    const appended = await api.append(src, [
      { type: 'order', payload: { amount: 5 } }, // condition false
      { type: 'order', payload: { amount: 20 }, metadata: { by: 'ci' } }, // copied
      { type: 'note', payload: { amount: 100 } }, // type not listed
      { type: 'refund', payload: { amount: 50 } }, // copied
      { type: 'order', payload: { amount: 11 }, idempotencyKey: 'caller-key' }, // copied
      { type: 'order' }, // no payload: condition false
      { type: 'refund', payload: { amount: 1000 }, ephemeral: true }, // ephemeral: never delivered
    ]);
    const head = appended[appended.length - 1]!.offset;
    expect((await caughtUp(api, src, 'f')).acknowledgedOffset).toBe(head);

    const expected = [appended[1]!, appended[3]!, appended[4]!];
    const { streamId, streamCreatedAt } = await lifetimeOf(api, src);
    const copies = await copiesOn(api, recv);
    expect(copies.map((c) => lastHop(c).offset)).toEqual(expected.map((e) => e.offset));
    copies.forEach((copy, i) => {
      const source = expected[i]!;
      expect(copy).toEqual({
        path: recv,
        offset: i + 2,
        createdAt: copy.createdAt,
        ...body(source),
        idempotencyKey: copyIdempotencyKey('f', gen, null, src, streamId, source.offset),
        source: {
          copiedFrom: [expectedHop(source, { streamId, streamCreatedAt, subscriptionKey: 'f', cursorChangedAtSourceOffset: gen })],
        },
      });
    });
    // The hop spells every field of protocol §13.2.
    expect(Object.keys(lastHop(copies[0]!)).sort()).toEqual(
      ['createdAt', 'cursorChangedAtSourceOffset', 'offset', 'path', 'projectId', 'streamCreatedAt', 'streamId', 'subscriptionKey', 'type'].sort(),
    );
    expect('metadata' in copies[1]!).toBe(false);
    expect(await inboundOf(api, recv, src, 'f')).toEqual({
      streamId,
      streamCreatedAt,
      cursorChangedAtSourceOffset: gen,
      numEventsReceived: 3,
      lastEventReceivedAt: copies[2]!.createdAt,
    });
  });

  it('retries caused by a temporarily paused receiver leave exactly one copy per source event', async () => {
    const papi = patient.api;
    const src = '/s20/retry-src';
    const recv = '/s20/retry-recv';
    await papi.append(recv, { type: PAUSED, payload: { reason: 'maintenance' } });
    await subscribe(papi, recv, { sourceStreamPath: src, subscriptionKey: 'p', filter: { eventTypes: ['item'] }, delivery: { start: 'beginning' } });
    const items: CommittedEvent[] = [];
    items.push(...(await papi.append(src, [{ type: 'item', payload: { i: 1 } }, { type: 'item', payload: { i: 2 } }])));
    // Several failed attempts (the receiver refuses while paused) before it is resumed.
    await eventually(async () => {
      const row = await runtimeOf(papi, src, 'p');
      return row && row.attempt >= 3 && (row.lastError ?? '').includes('paused') ? row : undefined;
    }, 'three failed attempts against the paused receiver');
    items.push(...(await papi.append(src, [{ type: 'item', payload: { i: 3 } }, { type: 'item', payload: { i: 4 } }])));
    await papi.append(recv, { type: RESUMED });
    await caughtUp(papi, src, 'p');
    items.push(...(await papi.append(src, { type: 'item', payload: { i: 5 } })));
    await caughtUp(papi, src, 'p');

    const copies = await copiesOn(papi, recv);
    expect(copies.map((c) => lastHop(c).offset)).toEqual(items.map((e) => e.offset));
    expect(new Set(copies.map((c) => c.idempotencyKey)).size).toBe(items.length);
    expect((await inboundOf(papi, recv, src, 'p'))!.numEventsReceived).toBe(items.length);
    // And no halt was ever recorded on the source.
    expect((await allEvents(papi, src)).filter((e) => e.type === EventType.subscriptionDeliveryHalted)).toEqual([]);
  });
});

describe('a copy transform', () => {
  it('shapes type/payload/metadata, omitted fields copy verbatim; hop, provenance and copy key are untouched', async () => {
    const src = '/s21/src';
    const shapedA = '/s21/a';
    const shapedB = '/s21/b';
    const a = await subscribe(api, shapedA, {
      sourceStreamPath: src,
      subscriptionKey: 'shape-a',
      filter: { eventTypes: ['num'] },
      // Payload-level look-alikes of provenance stay data: a transform cannot forge the real fields.
      jsonataTransform: '{"type": "shaped/" & type, "payload": {"doubled": payload.n * 2, "idempotencyKey": "forged", "source": {"copiedFrom": []}}}',
      delivery: { start: 'beginning' },
    });
    const b = await subscribe(api, shapedB, {
      sourceStreamPath: src,
      subscriptionKey: 'shape-b',
      filter: { eventTypes: ['num'] },
      jsonataTransform: '{"metadata": {"via": "b"}}',
      delivery: { start: 'beginning' },
    });
    const events = await api.append(src, [
      { type: 'num', payload: { n: 1 }, metadata: { m: 1 } },
      { type: 'num', payload: { n: 2 } },
      { type: 'other', payload: { n: 3 } },
    ]);
    await caughtUp(api, src, 'shape-a');
    await caughtUp(api, src, 'shape-b');
    const { streamId, streamCreatedAt } = await lifetimeOf(api, src);

    const copiesA = await copiesOn(api, shapedA);
    expect(copiesA.map((c) => ({ type: c.type, payload: c.payload, metadata: c.metadata }))).toEqual([
      { type: 'shaped/num', payload: { doubled: 2, idempotencyKey: 'forged', source: { copiedFrom: [] } }, metadata: { m: 1 } },
      { type: 'shaped/num', payload: { doubled: 4, idempotencyKey: 'forged', source: { copiedFrom: [] } }, metadata: undefined },
    ]);
    expect('metadata' in copiesA[1]!).toBe(false);
    const copiesB = await copiesOn(api, shapedB);
    expect(copiesB.map((c) => ({ type: c.type, payload: c.payload, metadata: c.metadata }))).toEqual([
      { type: 'num', payload: { n: 1 }, metadata: { via: 'b' } },
      { type: 'num', payload: { n: 2 }, metadata: { via: 'b' } },
    ]);

    for (const [copies, key, gen] of [
      [copiesA, 'shape-a', a.subscriptionConfiguredEvent.offset],
      [copiesB, 'shape-b', b.subscriptionConfiguredEvent.offset],
    ] as const) {
      copies.forEach((copy, i) => {
        const source = events[i]!;
        // The hop keeps the original type and coordinates; the dedupe identity ignores the transform.
        expect(copy.source).toEqual({
          copiedFrom: [expectedHop(source, { streamId, streamCreatedAt, subscriptionKey: key, cursorChangedAtSourceOffset: gen })],
        });
        expect(lastHop(copy).type).toBe('num');
        expect(copy.idempotencyKey).toBe(copyIdempotencyKey(key, gen, null, src, streamId, source.offset));
      });
    }
  });
});

describe('setSubscriptionCursor', () => {
  it('copies the same source offset again under the new cursorChangedAtSourceOffset; numEventsReceived counts both', async () => {
    const src = '/s22/src';
    const recv = '/s22/recv';
    const items = await api.append(src, [{ type: 'item', payload: { i: 'a' } }, { type: 'item', payload: { i: 'b' } }]);
    const answer = await subscribe(api, recv, { sourceStreamPath: src, subscriptionKey: 'c', filter: { eventTypes: ['item'] }, delivery: { start: 'beginning' } });
    const firstGen = answer.subscriptionConfiguredEvent.offset;
    await caughtUp(api, src, 'c');
    expect((await copiesOn(api, recv)).map((c) => [lastHop(c).offset, lastHop(c).cursorChangedAtSourceOffset])).toEqual([
      [2, firstGen],
      [3, firstGen],
    ]);

    const res = await command(api, src, 'setSubscriptionCursor', { subscriptionKey: 'c', afterOffset: 2 });
    expect(res.status, res.text).toBe(200);
    const cursorSet = (res.body as { event: CommittedEvent }).event;
    expect(cursorSet).toEqual({
      path: src,
      offset: 5,
      createdAt: cursorSet.createdAt,
      type: CURSOR_SET,
      payload: { subscriptionKey: 'c', afterOffset: 2 },
    });
    expect((await outboundOf(api, src, 'c'))!.cursorSet).toEqual({ afterOffset: 2, setAtSourceOffset: 5 });
    expect((await caughtUp(api, src, 'c')).acknowledgedOffset).toBe(5);

    const { streamId, streamCreatedAt } = await lifetimeOf(api, src);
    const copies = await copiesOn(api, recv);
    expect(copies.map((c) => [lastHop(c).offset, lastHop(c).cursorChangedAtSourceOffset])).toEqual([
      [2, firstGen],
      [3, firstGen],
      [3, 5],
    ]);
    expect(copies[2]!.idempotencyKey).toBe(copyIdempotencyKey('c', 5, null, src, streamId, items[1]!.offset));
    expect(copies[2]!.idempotencyKey).not.toBe(copies[1]!.idempotencyKey);
    expect(body(copies[2]!)).toEqual(body(items[1]!));
    expect(await inboundOf(api, recv, src, 'c')).toEqual({
      streamId,
      streamCreatedAt,
      cursorChangedAtSourceOffset: 5,
      numEventsReceived: 3,
      lastEventReceivedAt: copies[2]!.createdAt,
    });
  });
});

describe('replacing a key', () => {
  it('starts a new run (start: beginning replays), runtime rows never repeat configuration, the old receiver keeps inert history', async () => {
    const src = '/s23/src';
    const recv = '/s23/recv';
    const recv2 = '/s23/recv2';
    await api.append(src, [{ type: 'item', payload: { i: 1 } }, { type: 'item', payload: { i: 2 } }]);
    const first = await subscribe(api, recv, {
      sourceStreamPath: src,
      subscriptionKey: 'r',
      description: 'a long description that must stay in core state only',
      filter: { eventTypes: ['item'], jsonataCondition: '$exists(payload.i)' },
    });
    expect(first.subscriptionConfiguredEvent.offset).toBe(4);
    await api.append(src, { type: 'item', payload: { i: 3 } });
    await caughtUp(api, src, 'r');
    expect((await copiesOn(api, recv)).map((c) => [lastHop(c).offset, lastHop(c).cursorChangedAtSourceOffset])).toEqual([[5, 4]]);

    const replaced = await subscribe(api, recv, {
      sourceStreamPath: src,
      subscriptionKey: 'r',
      description: 'a long description that must stay in core state only',
      filter: { eventTypes: ['item'], jsonataCondition: '$exists(payload.i)' },
      delivery: { start: 'beginning' },
    });
    expect(replaced.subscriptionConfiguredEvent.offset).toBe(6);
    const entry = await outboundOf(api, src, 'r');
    expect(entry).toMatchObject({ configuredAtOffset: 6 });
    expect(entry!.cursorSet).toBeUndefined();
    expect((await caughtUp(api, src, 'r')).acknowledgedOffset).toBe(6);
    expect((await copiesOn(api, recv)).map((c) => [lastHop(c).offset, lastHop(c).cursorChangedAtSourceOffset])).toEqual([
      [5, 4],
      [2, 6],
      [3, 6],
      [5, 6],
    ]);
    expect(await inboundOf(api, recv, src, 'r')).toMatchObject({ cursorChangedAtSourceOffset: 6, numEventsReceived: 4 });

    // :state runtime.subscriptions holds progress only (protocol §11), never the configuration.
    const stateRes = await api.request('GET', '/v1/streams/s23/src:state');
    const runtime = (stateRes.body as { runtime: { subscriptions: Record<string, Record<string, unknown>> } }).runtime;
    expect(Object.keys(runtime.subscriptions)).toEqual(['r']);
    for (const field of Object.keys(runtime.subscriptions.r!)) expect(RUNTIME_FIELDS).toContain(field);
    const runtimeText = JSON.stringify(runtime);
    for (const configurationWord of ['receivingStreamPath', 'description', 'must stay in core', 'jsonataCondition', 'eventTypes', 'copy-to-stream']) {
      expect(runtimeText).not.toContain(configurationWord);
    }

    // Re-pointing the key to another receiver is a new run there; the old record stays as history.
    const before = await api.state(recv);
    const moved = await subscribe(api, recv2, {
      sourceStreamPath: src,
      subscriptionKey: 'r',
      filter: { eventTypes: ['item'] },
      delivery: { start: 'beginning' },
    });
    expect(moved.subscriptionConfiguredEvent.offset).toBe(7);
    await caughtUp(api, src, 'r');
    expect((await copiesOn(api, recv2)).map((c) => [lastHop(c).offset, lastHop(c).cursorChangedAtSourceOffset])).toEqual([
      [2, 7],
      [3, 7],
      [5, 7],
    ]);
    expect(await api.state(recv)).toEqual(before);
  });
});

describe('repeating an identical receive command', () => {
  it('returns the original event, appends nothing and keeps the "now" cursor of its run', async () => {
    const src = '/s25/src';
    const recv = '/s25/recv';
    await api.append(src, { type: 'x', payload: { early: true } });
    const first = await subscribe(api, recv, {
      sourceStreamPath: src,
      subscriptionKey: 'same',
      description: 'd',
      filter: { eventTypes: ['item', 'x'], jsonataCondition: 'true' },
    });
    const gen = first.subscriptionConfiguredEvent.offset;
    await api.append(src, { type: 'item', payload: { n: 1 } });
    const row = await caughtUp(api, src, 'same');
    const head = await headOf(api, src);

    // JSON-equal regardless of key order, the default start spelled out, another idempotencyKey (not compared).
    const repeat = await subscribe(api, recv, {
      delivery: { start: 'now' },
      filter: { jsonataCondition: 'true', eventTypes: ['item', 'x'] },
      idempotencyKey: 'not-compared',
      description: 'd',
      subscriptionKey: 'same',
      sourceStreamPath: src,
    });
    expect(repeat).toEqual(first);
    expect(await headOf(api, src)).toBe(head);
    expect(await outboundOf(api, src, 'same')).toMatchObject({ configuredAtOffset: gen });
    expect((await runtimeOf(api, src, 'same'))!.acknowledgedOffset).toBe(row.acknowledgedOffset);

    // The run goes on: the next event is copied under the original generation, nothing is replayed.
    await api.append(src, { type: 'item', payload: { n: 2 } });
    await caughtUp(api, src, 'same');
    const copies = await copiesOn(api, recv);
    expect(copies.map((c) => [c.payload, lastHop(c).cursorChangedAtSourceOffset])).toEqual([
      [{ n: 1 }, gen],
      [{ n: 2 }, gen],
    ]);

    // A different description is not identical: it replaces the subscription with a new event.
    const changed = await subscribe(api, recv, {
      sourceStreamPath: src,
      subscriptionKey: 'same',
      description: 'other',
      filter: { eventTypes: ['item', 'x'], jsonataCondition: 'true' },
    });
    expect(changed.subscriptionConfiguredEvent.offset).toBe(head + 2);
  });
});

describe('unsubscribeFromEvents', () => {
  it('removes the subscription on the source; later events do not arrive; a second call answers already-absent', async () => {
    const src = '/s27/src';
    const recv = '/s27/recv';
    const marker = '/s27/marker';
    await subscribe(api, recv, { sourceStreamPath: src, subscriptionKey: 'u', filter: { eventTypes: ['a', 'b'] } });
    await subscribe(api, marker, { sourceStreamPath: src, subscriptionKey: 'm', filter: { eventTypes: ['a', 'b'] } });
    await api.append(src, { type: 'a' });
    await waitForCopies(api, recv, 1);

    const res = await command(api, recv, 'unsubscribeFromEvents', { sourceStreamPath: src, subscriptionKey: 'u' });
    expect(res.status, res.text).toBe(200);
    const answer = res.body as { status: string; subscriptionRemovedEvent: CommittedEvent };
    expect(answer).toEqual({
      status: 'removed',
      subscriptionRemovedEvent: {
        path: src,
        offset: answer.subscriptionRemovedEvent.offset,
        createdAt: answer.subscriptionRemovedEvent.createdAt,
        type: REMOVED,
        payload: { subscriptionKey: 'u', reason: 'requested' },
      },
    });
    expect(await outboundOf(api, src, 'u')).toBeUndefined();
    expect(await runtimeOf(api, src, 'u')).toBeUndefined();

    const [b] = await api.append(src, { type: 'b' });
    // Positive sync: the other subscription copied "b" …
    await eventually(async () => (await copiesOn(api, marker)).some((c) => lastHop(c).offset === b!.offset), 'the marker copy of "b"');
    await settle();
    // … while the removed one copied nothing more.
    expect((await copiesOn(api, recv)).map((c) => c.type)).toEqual(['a']);

    const head = await headOf(api, src);
    const again = await command(api, recv, 'unsubscribeFromEvents', { sourceStreamPath: src, subscriptionKey: 'u' });
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual({ status: 'already-absent' });
    // A key that copies into another stream, or a source that does not exist, is absent for this receiver.
    const notOurs = await command(api, recv, 'unsubscribeFromEvents', { sourceStreamPath: src, subscriptionKey: 'm' });
    expect(notOurs.body).toEqual({ status: 'already-absent' });
    expect(await outboundOf(api, src, 'm')).toBeDefined();
    const nowhere = await command(api, recv, 'unsubscribeFromEvents', { sourceStreamPath: '/s27/nowhere', subscriptionKey: 'u' });
    expect(nowhere.body).toEqual({ status: 'already-absent' });
    expect(await api.state('/s27/nowhere')).toEqual({ core: null, runtime: null });
    expect(await headOf(api, src)).toBe(head);
  });
});

describe('receiving streams (protocol §9.3, §12.10)', () => {
  it('receivingStreamPath is stored canonical and the copies land on the canonical stream', async () => {
    const src = '/canon/src';
    const [event] = await api.append(src, configured({ subscriptionKey: 'c', filter: { eventTypes: ['e'] }, receiver: copyTo(' canon/./x/../recv ') }));
    expect((event!.payload as { receiver: { receivingStreamPath: string } }).receiver.receivingStreamPath).toBe('/canon/recv');
    expect((await outboundOf(api, src, 'c'))!.configuration.receiver).toEqual(copyTo('/canon/recv'));
    await api.append(src, { type: 'e' });
    await waitForCopies(api, '/canon/recv', 1);
  });

  it('a receiver that lost its data is not refilled; the next copy recreates it; setting the cursor to 0 refills it', async () => {
    const src = '/lost/src';
    const recv = '/lost/recv';
    await subscribe(api, recv, { sourceStreamPath: src, subscriptionKey: 'l', filter: { eventTypes: ['e'] }, delivery: { start: 'beginning' } });
    const [e1, e2] = await api.append(src, [{ type: 'e', payload: { n: 1 } }, { type: 'e', payload: { n: 2 } }]);
    await caughtUp(api, src, 'l');
    const oldId = (await api.read(recv)).streamId;
    await api.destroy(recv);

    const [e3] = await api.append(src, { type: 'e', payload: { n: 3 } });
    await caughtUp(api, src, 'l');
    const log = await allEvents(api, recv);
    expect(log.map((e) => [e.offset, e.type])).toEqual([
      [1, CREATED],
      [2, 'e'],
    ]);
    expect((await api.read(recv)).streamId).not.toBe(oldId);
    expect(lastHop(log[1]!).offset).toBe(e3!.offset);
    expect((await inboundOf(api, recv, src, 'l'))!.numEventsReceived).toBe(1);

    const res = await command(api, src, 'setSubscriptionCursor', { subscriptionKey: 'l', afterOffset: 0 });
    expect(res.status, res.text).toBe(200);
    await caughtUp(api, src, 'l');
    expect((await copiesOn(api, recv)).map((c) => lastHop(c).offset)).toEqual([e3!.offset, e1!.offset, e2!.offset, e3!.offset]);
  });
});

describe('what durable subscriptions never deliver', () => {
  it('ephemeral events are never delivered; the cursor passes over them', async () => {
    const src = '/s6sub/src';
    const recv = '/s6sub/recv';
    await subscribe(api, recv, { sourceStreamPath: src, subscriptionKey: 'e', filter: { eventTypes: ['d', 'e'] }, delivery: { start: 'beginning' } });
    const events = await api.append(src, [
      { type: 'd', payload: { i: 1 } },
      { type: 'e', payload: { i: 2 }, ephemeral: true },
      { type: 'd', payload: { i: 3 } },
      { type: 'e', payload: { i: 4 }, ephemeral: true },
    ]);
    const row = await caughtUp(api, src, 'e');
    // The head is an ephemeral offset, and the cursor has passed it.
    expect(row.acknowledgedOffset).toBe(events[3]!.offset);
    expect((await copiesOn(api, recv)).map((c) => lastHop(c).offset)).toEqual([events[0]!.offset, events[2]!.offset]);
    expect((await allEvents(api, recv)).some((e) => e.ephemeral)).toBe(false);
  });

  it('an idempotent repeat on the source is not delivered again', async () => {
    const src = '/s3sub/src';
    const recv = '/s3sub/recv';
    await subscribe(api, recv, { sourceStreamPath: src, subscriptionKey: 'once' });
    const [original] = await api.append(src, { type: 'keyed', payload: { v: 1 }, idempotencyKey: 'only-once' });
    await waitForCopies(api, recv, 1);
    const [repeat] = await api.append(src, { type: 'keyed', payload: { v: 1 }, idempotencyKey: 'only-once' });
    expect(repeat).toEqual(original);
    const [marker] = await api.append(src, { type: 'marker' });
    await caughtUp(api, src, 'once');
    expect((await copiesOn(api, recv)).map((c) => [lastHop(c).offset, c.type])).toEqual([
      [original!.offset, 'keyed'],
      [marker!.offset, 'marker'],
    ]);
  });
});
