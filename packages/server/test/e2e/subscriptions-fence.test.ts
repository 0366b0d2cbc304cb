/**
 * End-to-end: the receiver's passive inbound fence and per-run copy identity (protocol §13.1,
 * §13.2), and late results of a superseded run for copies (§12.4).
 *
 * Delayed or repeated batches cannot be produced over HTTP on demand, so these tests use the
 * in-process server object: `service.actor(projectId, path)` is the receiving StreamActor and its
 * `receiveCopies(batch)` is exactly the trusted entry point the delivery engine calls. Hand-built
 * batches go straight to it; for the late results the actor's entry point is wrapped to hold real
 * deliveries until the test lets them through, which makes the in-flight race deterministic.
 * Everything observed is observed over HTTP.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CommittedEvent } from '@rivulet/contract';
import type { CopyBatch } from '../../src/core/copy-builder.js';
import type { CopyReceipt, StreamActor } from '../../src/engine/actor.js';
import type { WrittenCopyReceipt } from '../../src/ports/directory.js';
import type { Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import {
  EventType,
  allEvents,
  caughtUp,
  command,
  copiesOn,
  copyIdempotencyKey,
  eventually,
  inboundOf,
  lastHop,
  lifetimeOf,
  runtimeOf,
  settle,
  subscribe,
} from '../helpers/subscriptions.js';

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer({ retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 3, deliveryTimeoutMs: 5_000 });
  api = server.api;
});

afterAll(async () => {
  await server?.close();
});

function receivingActor(s: TestServer, path: string): StreamActor {
  return s.server.service.actor(null, path);
}

/** A copy batch as the sender builds it, from source events (shaped = the events' own bodies). */
function batchOf(
  stamp: { streamId: string; streamCreatedAt: string; cursorChangedAtSourceOffset: number },
  sourcePath: string,
  subscriptionKey: string,
  receivingStreamPath: string,
  events: CommittedEvent[],
): CopyBatch {
  return {
    projectId: null,
    path: sourcePath,
    ...stamp,
    subscriptionKey,
    receivingStreamPath,
    events: events.map((e) => ({
      offset: e.offset,
      type: e.type,
      createdAt: e.createdAt,
      shaped: {
        type: e.type,
        ...(e.payload !== undefined ? { payload: e.payload } : {}),
        ...(e.metadata !== undefined ? { metadata: e.metadata } : {}),
      },
    })),
  };
}

/** Everything a receiver shows: its whole log and its state. */
async function snapshot(a: Api, path: string) {
  return { log: await allEvents(a, path), state: await a.state(path) };
}

const hopsOf = (copies: CommittedEvent[]) => copies.map((c) => [lastHop(c).offset, lastHop(c).cursorChangedAtSourceOffset]);

describe('the receiver fence', () => {
  it('a delayed batch from a superseded configuration is rejected and changes nothing', async () => {
    const src = '/s24/src';
    const recv = '/s24/recv';
    const items = await api.append(src, [{ type: 'item', payload: { i: 1 } }, { type: 'item', payload: { i: 2 } }]);
    const answer = await subscribe(api, recv, { sourceStreamPath: src, subscriptionKey: 'k', filter: { eventTypes: ['item'] }, delivery: { start: 'beginning' } });
    const oldGen = answer.subscriptionConfiguredEvent.offset;
    await caughtUp(api, src, 'k');
    const res = await command(api, src, 'setSubscriptionCursor', { subscriptionKey: 'k', afterOffset: items[0]!.offset });
    expect(res.status, res.text).toBe(200);
    const newGen = (res.body as { event: CommittedEvent }).event.offset;
    items.push(...(await api.append(src, { type: 'item', payload: { i: 3 } })));
    await caughtUp(api, src, 'k');
    expect(hopsOf(await copiesOn(api, recv))).toEqual([
      [2, oldGen],
      [3, oldGen],
      [3, newGen],
      [items[2]!.offset, newGen],
    ]);
    const lifetime = await lifetimeOf(api, src);
    expect(await inboundOf(api, recv, src, 'k')).toMatchObject({ ...lifetime, cursorChangedAtSourceOffset: newGen, numEventsReceived: 4 });

    // A batch of the superseded run (old generation) arriving late, carrying an offset it never copied.
    const before = await snapshot(api, recv);
    const late = batchOf({ ...lifetime, cursorChangedAtSourceOffset: oldGen }, src, 'k', recv, [items[2]!]);
    await expect(receivingActor(server, recv).receiveCopies(late)).rejects.toMatchObject({
      code: 'CONFLICT',
      message: expect.stringContaining('already accepted a newer delivery'),
    });
    expect(await snapshot(api, recv)).toEqual(before);
  });

  it('a batch from a destroyed-and-recreated source is accepted from offset 1 again; a stale one of the old lifetime is not', async () => {
    const src = '/s24/life-src';
    const recv = '/s24/life-recv';
    const oldItems = await api.append(src, [{ type: 'item', payload: { life: 1, i: 1 } }, { type: 'item', payload: { life: 1, i: 2 } }, { type: 'item', payload: { life: 1, i: 3 } }]);
    const first = await subscribe(api, recv, { sourceStreamPath: src, subscriptionKey: 'k', filter: { eventTypes: ['item'] }, delivery: { start: 'beginning' } });
    const oldGen = first.subscriptionConfiguredEvent.offset;
    expect(oldGen).toBe(5);
    await caughtUp(api, src, 'k');
    const oldLifetime = await lifetimeOf(api, src);
    expect(await inboundOf(api, recv, src, 'k')).toMatchObject({ ...oldLifetime, cursorChangedAtSourceOffset: oldGen, numEventsReceived: 3 });

    await api.destroy(src);
    // Lifetimes order by streamCreatedAt first: make sure the new one is created in a later millisecond.
    await eventually(() => Date.now() > Date.parse(oldLifetime.streamCreatedAt) + 1, 'the clock to pass the old creation');
    const [newItem] = await api.append(src, { type: 'item', payload: { life: 2, i: 1 } });
    expect(newItem!.offset).toBe(2);
    // The new lifetime's configure generation (3) is lower than the old one's (5): the lifetime decides.
    const second = await subscribe(api, recv, { sourceStreamPath: src, subscriptionKey: 'k', filter: { eventTypes: ['item'] }, delivery: { start: 'beginning' } });
    const newGen = second.subscriptionConfiguredEvent.offset;
    expect(newGen).toBe(3);
    await caughtUp(api, src, 'k');
    const newLifetime = await lifetimeOf(api, src);
    expect(newLifetime.streamId).not.toBe(oldLifetime.streamId);
    expect(newLifetime.streamCreatedAt > oldLifetime.streamCreatedAt).toBe(true);

    const copies = await copiesOn(api, recv);
    expect(copies.map((c) => [lastHop(c).streamId, lastHop(c).offset, lastHop(c).cursorChangedAtSourceOffset])).toEqual([
      ...oldItems.map((e) => [oldLifetime.streamId, e.offset, oldGen]),
      [newLifetime.streamId, 2, newGen],
    ]);
    const copy = copies[3]!;
    expect(copy.payload).toEqual({ life: 2, i: 1 });
    expect(copy.idempotencyKey).toBe(copyIdempotencyKey('k', newGen, null, src, newLifetime.streamId, 2));
    // Source offset 2 was copied before, in the old lifetime: both copies stand, the new one is not a repeat.
    expect(copies[0]!.idempotencyKey).not.toBe(copy.idempotencyKey);
    expect(await inboundOf(api, recv, src, 'k')).toEqual({
      ...newLifetime,
      cursorChangedAtSourceOffset: newGen,
      numEventsReceived: 1,
      lastEventReceivedAt: copy.createdAt,
    });

    // A batch of the destroyed lifetime arriving late is older than the fence now.
    const before = await snapshot(api, recv);
    const stale = batchOf({ ...oldLifetime, cursorChangedAtSourceOffset: oldGen + 10 }, src, 'k', recv, [
      { ...oldItems[2]!, offset: 9, payload: { life: 1, late: true } },
    ]);
    await expect(receivingActor(server, recv).receiveCopies(stale)).rejects.toMatchObject({
      code: 'CONFLICT',
      message: expect.stringContaining('already accepted a newer delivery'),
    });
    expect(await snapshot(api, recv)).toEqual(before);
  });
});

describe('a re-delivered identical batch appends nothing', () => {
  it('the same batch of the same run, delivered again through the trusted path, collapses onto the stored copies', async () => {
    const src = '/s20fence/src';
    const recv = '/s20fence/recv';
    const items = await api.append(src, [
      { type: 'item', payload: { i: 1 }, metadata: { m: true } },
      { type: 'item', payload: { i: 2 } },
      { type: 'item' },
    ]);
    const answer = await subscribe(api, recv, { sourceStreamPath: src, subscriptionKey: 'once', filter: { eventTypes: ['item'] }, delivery: { start: 'beginning' } });
    await caughtUp(api, src, 'once');
    expect((await copiesOn(api, recv)).length).toBe(3);
    const before = await snapshot(api, recv);
    const lifetime = await lifetimeOf(api, src);
    const again = batchOf({ ...lifetime, cursorChangedAtSourceOffset: answer.subscriptionConfiguredEvent.offset }, src, 'once', recv, items);
    // The equal stamp is accepted (ordinary at-least-once redelivery) …
    const receipt: CopyReceipt = await receivingActor(server, recv).receiveCopies(again);
    expect(receipt.dropped).toBe(0);
    // … and the per-event identity collapses it: not one event more, the record not counted again.
    expect(await snapshot(api, recv)).toEqual(before);
    // A part of it (the last event alone) collapses as well.
    await receivingActor(server, recv).receiveCopies({ ...again, events: again.events.slice(2) });
    expect(await snapshot(api, recv)).toEqual(before);
    // A transform that is not deterministic ($now(), random ids) shapes a different body on the
    // redelivery: the copy identity names the source fact of the run, so it still collapses
    // instead of wedging the subscription with a CONFLICT (protocol §13.2).
    const reshaped = { ...again, events: again.events.map((e) => ({ ...e, shaped: { ...e.shaped, payload: { at: new Date().toISOString() } } })) };
    await receivingActor(server, recv).receiveCopies(reshaped);
    expect(await snapshot(api, recv)).toEqual(before);
  });
});

// ------------------------------------------------------------- late results of a superseded run

interface Held {
  batch: CopyBatch;
  /** Lets the held call reach the real receiving actor; answers its outcome. */
  pass(): Promise<CopyReceipt>;
  /** Fails the held call with an error (a receiver refusal), without touching the receiver. */
  fail(message: string): void;
}

/**
 * Wraps the receiving actor's trusted entry point (on the Node host `writeCopies`: copies join their
 * source's group commit, docs/architecture.md "Copies in the source's commit") so that every
 * delivery waits in `held` until the test passes or fails it. `release()` restores the real method
 * and lets later calls through.
 */
function holdDeliveries(actor: StreamActor): { held: Held[]; release(): void } {
  const original = actor.writeCopies.bind(actor);
  const held: Held[] = [];
  actor.writeCopies = (batch: CopyBatch) =>
    new Promise<WrittenCopyReceipt>((resolve, reject) => {
      held.push({
        batch,
        pass: () => {
          const outcome = original(batch);
          outcome.then(resolve, reject);
          return outcome;
        },
        fail: (message) => reject(new Error(message)),
      });
    });
  return {
    held,
    release: () => {
      Reflect.deleteProperty(actor, 'writeCopies');
    },
  };
}

describe('late results of a superseded run (copies)', () => {
  let s39: TestServer;
  let s39api: Api;
  const restore: (() => void)[] = [];

  beforeAll(async () => {
    // One counted failure would halt at once: a late failure that leaked into the new run would show.
    s39 = await startTestServer({ retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 1, deliveryTimeoutMs: 10_000 });
    s39api = s39.api;
  });
  afterEach(() => {
    for (const r of restore.splice(0)) r();
  });
  afterAll(async () => {
    await s39?.close();
  });

  it('an old in-flight success cannot overwrite a newer cursor seek', async () => {
    const src = '/s39/seek-src';
    const recv = '/s39/seek-recv';
    const items = await s39api.append(
      src,
      [1, 2, 3, 4, 5].map((i) => ({ type: 'item', payload: { i } })),
    );
    const hold = holdDeliveries(receivingActor(s39, recv));
    restore.push(hold.release);

    const answer = await subscribe(s39api, recv, { sourceStreamPath: src, subscriptionKey: 'seek', filter: { eventTypes: ['item'] }, delivery: { start: 'beginning' } });
    const oldGen = answer.subscriptionConfiguredEvent.offset;
    await eventually(() => hold.held.length >= 1, 'the first delivery of the old run');
    const oldCall = hold.held[0]!;
    expect([oldCall.batch.cursorChangedAtSourceOffset, oldCall.batch.events.map((e) => e.offset)]).toEqual([oldGen, items.map((e) => e.offset)]);

    // Seek back while the old call is out: a new run from offset 3.
    const res = await command(s39api, src, 'setSubscriptionCursor', { subscriptionKey: 'seek', afterOffset: 3 });
    expect(res.status, res.text).toBe(200);
    const newGen = (res.body as { event: CommittedEvent }).event.offset;
    await eventually(() => hold.held.length >= 2, 'the first delivery of the new run');
    const newCall = hold.held[1]!;
    expect([newCall.batch.cursorChangedAtSourceOffset, newCall.batch.events.map((e) => e.offset)]).toEqual([newGen, [4, 5, 6]]);

    // The old call now succeeds (its copies commit on the receiver) while the new run's call is still out.
    await oldCall.pass();
    await settle(50);
    const row = await runtimeOf(s39api, src, 'seek');
    expect(row, 'the old success moved the cursor of the new run').toMatchObject({ acknowledgedOffset: 3, attempt: 0, lastError: null });

    await newCall.pass();
    hold.release();
    const done = await caughtUp(s39api, src, 'seek');
    expect(done.acknowledgedOffset).toBe(newGen);
    expect(hopsOf(await copiesOn(s39api, recv))).toEqual([
      ...items.map((e) => [e.offset, oldGen]),
      [4, newGen],
      [5, newGen],
      [6, newGen],
    ]);
    expect(hold.held.length).toBe(2);
  });

  it('an old in-flight failure cannot delay or fail a same-key replacement', async () => {
    const src = '/s39/replace-src';
    const recv = '/s39/replace-recv';
    const items = await s39api.append(src, [{ type: 'item', payload: { i: 1 } }, { type: 'item', payload: { i: 2 } }]);
    const hold = holdDeliveries(receivingActor(s39, recv));
    restore.push(hold.release);

    await subscribe(s39api, recv, { sourceStreamPath: src, subscriptionKey: 'rep', description: 'old', filter: { eventTypes: ['item'] }, delivery: { start: 'beginning' } });
    await eventually(() => hold.held.length >= 1, 'the delivery of the old configuration');
    const replaced = await subscribe(s39api, recv, {
      sourceStreamPath: src,
      subscriptionKey: 'rep',
      description: 'new',
      filter: { eventTypes: ['item'] },
      delivery: { start: 'beginning' },
    });
    const newGen = replaced.subscriptionConfiguredEvent.offset;
    await eventually(() => hold.held.length >= 2, 'the delivery of the replacement');
    expect(hold.held[1]!.batch.cursorChangedAtSourceOffset).toBe(newGen);

    // The old configuration's call fails late: with maxDeliveryAttempts 1 a counted failure would halt.
    hold.held[0]!.fail('old receiver refused');
    await settle(50);
    expect(await runtimeOf(s39api, src, 'rep')).toMatchObject({ attempt: 0, lastError: null, nextAttemptAt: null });

    await hold.held[1]!.pass();
    hold.release();
    await caughtUp(s39api, src, 'rep');
    expect(hopsOf(await copiesOn(s39api, recv))).toEqual(items.map((e) => [e.offset, newGen]));
    const sourceTypes = (await allEvents(s39api, src)).map((e) => e.type);
    expect(sourceTypes).not.toContain(EventType.subscriptionDeliveryHalted);
    expect(sourceTypes).not.toContain(EventType.errorOccurred);
  });
});
