/**
 * End-to-end over real HTTP: durable copy-to-stream subscriptions (protocol §9–§14), what one copy is:
 * configure commits on the source alone, a bare subscribeToEventsFrom, filters and the exact hop
 * (§13.2), and copy transforms. Runs of a key are in subscriptions-copy-runs.test.ts, receiving
 * streams and what is never delivered in subscriptions-copy-receivers.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommittedEvent, DeliveryAttempt } from '@rivulet/contract';
import { expectError, queryString, streamRoute, type Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { MAX_BATCH_BYTES, sizedJobs, storedBytes } from '../helpers/batch-bytes.js';
import {
  EventType,
  allEvents,
  caughtUp,
  command,
  configured,
  copiedBody as body,
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
  subscribe,
  waitForCopies,
} from '../helpers/subscriptions.js';

const CREATED = EventType.created;
const CONFIGURED = EventType.subscriptionConfigured;
const REMOVED = EventType.subscriptionRemoved;
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

  it('a backlog is copied in batches of at most 1000 events: the 1000th closes a batch, the 1001st opens the next (protocol §12.3)', async () => {
    const src = '/s20/batch-src';
    const recv = '/s20/batch-recv';
    const jobs = await api.append(
      src,
      Array.from({ length: 1001 }, (_, i) => ({ type: 'job', payload: { i } })),
    );
    await subscribe(api, recv, { sourceStreamPath: src, subscriptionKey: 'b', filter: { eventTypes: ['job'] }, delivery: { start: 'beginning' } });
    await caughtUp(api, src, 'b', 15_000);

    const res = await api.request<{ attempts: DeliveryAttempt[] }>('GET', `${streamRoute(src, 'deliveryAttempts')}${queryString({ subscriptionKey: 'b' })}`);
    expect(res.status, res.text).toBe(200);
    // Newest first; every attempt succeeded.
    const batches = res.body.attempts.reverse();
    expect(batches.map((a) => a.outcome)).toEqual(['ok', 'ok']);
    expect(batches.map((a) => [a.fromOffset, a.toOffset])).toEqual([
      [jobs[0]!.offset, jobs[999]!.offset],
      [jobs[1000]!.offset, jobs[1000]!.offset],
    ]);
    const copies = await copiesOn(api, recv);
    expect(copies.map((c) => lastHop(c).offset)).toEqual(jobs.map((e) => e.offset));
  });

  /**
   * A backlog of jobs whose stored texts are `lengths` UTF-8 bytes long (helpers/batch-bytes.ts; `wide`: padded with 2-byte characters), checked on the
   * events as read back, copied from the beginning: answers the jobs and the [from, to] offsets of
   * each copy batch, oldest first.
   */
  async function copyBatchesOf(src: string, recv: string, lengths: number[], wide = false): Promise<{ jobs: CommittedEvent[]; batches: [number, number][] }> {
    const jobs = await api.append(src, sizedJobs(src, 2, lengths, wide));
    const stored = (await allEvents(api, src)).filter((e) => e.type === 'job');
    expect(stored.map(storedBytes)).toEqual(lengths);
    await subscribe(api, recv, { sourceStreamPath: src, subscriptionKey: 'bytes', filter: { eventTypes: ['job'] }, delivery: { start: 'beginning' } });
    await caughtUp(api, src, 'bytes', 15_000);
    const res = await api.request<{ attempts: DeliveryAttempt[] }>('GET', `${streamRoute(src, 'deliveryAttempts')}${queryString({ subscriptionKey: 'bytes' })}`);
    expect(res.status, res.text).toBe(200);
    const attempts = res.body.attempts.reverse();
    expect(attempts.map((a) => a.outcome)).toEqual(attempts.map(() => 'ok'));
    expect((await copiesOn(api, recv)).map((c) => lastHop(c).offset)).toEqual(jobs.map((e) => e.offset));
    return { jobs, batches: attempts.map((a) => [a.fromOffset, a.toOffset]) };
  }

  it('a copy batch holds 1 MiB of stored event JSON: four events of exactly 1,048,576 bytes go in one batch, the next event opens the next (protocol §12.3)', async () => {
    const quarter = MAX_BATCH_BYTES / 4;
    const { jobs, batches } = await copyBatchesOf('/s20/bytes-at-src', '/s20/bytes-at-recv', [quarter, quarter, quarter, quarter, 1000]);
    expect(batches).toEqual([
      [jobs[0]!.offset, jobs[3]!.offset],
      [jobs[4]!.offset, jobs[4]!.offset],
    ]);
  });

  it('one byte past 1 MiB: the event that would take a copy batch over it opens the next batch (protocol §12.3)', async () => {
    const quarter = MAX_BATCH_BYTES / 4;
    const { jobs, batches } = await copyBatchesOf('/s20/bytes-past-src', '/s20/bytes-past-recv', [quarter, quarter, quarter, quarter + 1, 1000]);
    expect(batches).toEqual([
      [jobs[0]!.offset, jobs[2]!.offset],
      [jobs[3]!.offset, jobs[4]!.offset],
    ]);
  });

  it('the bound is in UTF-8 bytes, not characters: events of 2-byte characters split at 1 MiB of bytes, where their characters come to about half of it (protocol §12.3)', async () => {
    const quarter = MAX_BATCH_BYTES / 4;
    const { jobs, batches } = await copyBatchesOf('/s20/bytes-wide-src', '/s20/bytes-wide-recv', [quarter, quarter, quarter, quarter + 1, 1000], true);
    const characters = (await allEvents(api, '/s20/bytes-wide-src')).filter((e) => e.type === 'job').reduce((n, e) => n + JSON.stringify(e).length, 0);
    expect(characters).toBeLessThan(MAX_BATCH_BYTES * 0.6);
    expect(batches).toEqual([
      [jobs[0]!.offset, jobs[2]!.offset],
      [jobs[3]!.offset, jobs[4]!.offset],
    ]);
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
