/**
 * End-to-end over real HTTP: the runs of a copy-to-stream subscription key (protocol §12.1, §14):
 * setSubscriptionCursor copies again under a new cursorChangedAtSourceOffset, replacing a key starts
 * a new run, an identical receive command keeps its run, and unsubscribeFromEvents ends it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommittedEvent } from '@rivulet/contract';
import type { Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import {
  EventType,
  RUNTIME_FIELDS,
  caughtUp,
  command,
  copiedBody as body,
  copiesOn,
  copyIdempotencyKey,
  eventually,
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

const REMOVED = EventType.subscriptionRemoved;
const CURSOR_SET = EventType.subscriptionCursorSet;

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer({ retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 3, deliveryTimeoutMs: 5_000 });
  api = server.api;
});

afterAll(async () => {
  await server?.close();
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
