/**
 * End-to-end over real HTTP: the receiving streams of copy-to-stream subscriptions (protocol §9.3,
 * §12.10), and what durable subscriptions never deliver: ephemeral events and idempotent repeats
 * (§4.2, §4.4, §12.3).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import {
  EventType,
  allEvents,
  caughtUp,
  command,
  configured,
  copiesOn,
  copyTo,
  inboundOf,
  lastHop,
  outboundOf,
  subscribe,
  waitForCopies,
} from '../helpers/subscriptions.js';

const CREATED = EventType.created;

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer({ retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 3, deliveryTimeoutMs: 5_000 });
  api = server.api;
});

afterAll(async () => {
  await server?.close();
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
