/**
 * End-to-end over real HTTP: failing copy deliveries — a throwing condition, halts and resume, a
 * paused receiver, and what /metrics shows meanwhile (protocol §12.3–§12.5, §13.6, §9.7, §14.4,
 * §14.5, §11, §15.2).
 *
 * How a copy subscription is made to halt for real: a paused receiving stream refuses copies, which
 * the sender treats as an *unavailable* receiver — it backs off and counts towards the halt ladder
 * but never skips (protocol §12.4). With maxDeliveryAttempts 3 it halts after three refusals, and
 * unlike a throwing condition (deterministic on the event) the cause can be removed again by
 * resuming the receiver, so resumeSubscription can then deliver.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import type { CommittedEvent } from '@rivulet/contract';
import type { Api } from '../helpers/http.js';
import { TEST_HOST, startTestServer, type TestServer } from '../helpers/server.js';
import {
  EventType,
  QUICK,
  allEvents,
  caughtUp,
  command,
  copiesOn,
  eventually,
  halted,
  headOf,
  lastHop,
  outboundOf,
  runtimeOf,
  sampleOf,
  scrape,
  settle,
  subscribe,
  useQuickServer,
} from '../helpers/subscriptions.js';

const HALTED = EventType.subscriptionDeliveryHalted;
const RESUMED_SUB = EventType.subscriptionDeliveryResumed;
const CURSOR_SET = EventType.subscriptionCursorSet;
const ERROR = EventType.errorOccurred;
const PAUSED = EventType.paused;
const RESUMED = EventType.resumed;

const quick = useQuickServer();

const offsetsOf = (copies: CommittedEvent[]) => copies.map((c) => lastHop(c).offset);

/** Pauses `recv`, appends `events` on `src`, and waits for subscription `key` to halt. */
async function haltByPausedReceiver(a: Api, src: string, recv: string, key: string, events: { type: string; payload?: Record<string, unknown> }[]) {
  await a.append(recv, { type: PAUSED, payload: { reason: 'maintenance' } });
  const appended = await a.append(src, events);
  const entry = await halted(a, src, key);
  await a.append(recv, { type: RESUMED });
  return { appended, entry };
}

describe('a JSONata condition that throws', () => {
  it('retries in order, records lastError, never passes the failing event; one audit; halts after maxDeliveryAttempts', async () => {
    const src = '/s28/src';
    const recv = '/s28/recv';
    const condition = 'payload.bad = true ? $error("boom") : true';
    await subscribe(quick.api, recv, { sourceStreamPath: src, subscriptionKey: 'cond', filter: { eventTypes: ['job'], jsonataCondition: condition }, delivery: { start: 'beginning' } });
    const jobs = await quick.api.append(src, [
      { type: 'job', payload: { n: 1 } },
      { type: 'job', payload: { n: 2, bad: true } },
      { type: 'job', payload: { n: 3 } },
    ]);
    const [ok, bad] = jobs;

    const entry = await halted(quick.api, src, 'cond');
    // The healthy prefix was delivered, the failing event never passed, nothing after it either.
    expect(offsetsOf(await copiesOn(quick.api, recv))).toEqual([ok!.offset]);
    expect(entry.deliveryHalted).toEqual({ reason: 'delivery-failed', afterOffset: ok!.offset, attempts: QUICK.maxDeliveryAttempts, error: expect.stringContaining('boom') });
    const log = await allEvents(quick.api, src);
    const halts = log.filter((e) => e.type === HALTED);
    expect(halts).toHaveLength(1);
    expect(halts[0]!.payload).toEqual({
      subscriptionKey: 'cond',
      reason: 'delivery-failed',
      afterOffset: ok!.offset,
      attempts: QUICK.maxDeliveryAttempts,
      error: entry.deliveryHalted!.error,
    });
    // Exactly one error-occurred audit for the throwing event, although it was evaluated on every attempt.
    const auditLines = log.filter((e) => e.type === ERROR);
    expect(auditLines).toHaveLength(1);
    expect(auditLines[0]!.payload).toMatchObject({ subscriptionKey: 'cond', offset: bad!.offset, error: expect.stringContaining('boom') });
    expect((auditLines[0]!.payload as { message: string }).message).toContain(`threw on offset ${bad!.offset}`);
    expect(auditLines[0]!.offset).toBeLessThan(halts[0]!.offset);
    // Runtime keeps the failure: the cursor before the failing event, the error, the attempts.
    expect(await runtimeOf(quick.api, src, 'cond')).toMatchObject({
      acknowledgedOffset: ok!.offset,
      attempt: QUICK.maxDeliveryAttempts,
      nextAttemptAt: null,
      lastError: expect.stringContaining('boom'),
    });
  });
});

describe('more ordered failures', () => {
  it('resuming a subscription whose condition still throws halts it again; the audit stays one (idempotent per key, run and offset)', async () => {
    const src = '/s28/again-src';
    const recv = '/s28/again-recv';
    await subscribe(quick.api, recv, {
      sourceStreamPath: src,
      subscriptionKey: 'again',
      filter: { eventTypes: ['job'], jsonataCondition: 'payload.bad ? $error("still broken") : true' },
      delivery: { start: 'beginning' },
    });
    const [, bad] = await quick.api.append(src, [{ type: 'job', payload: { n: 1 } }, { type: 'job', payload: { n: 2, bad: true } }]);
    await halted(quick.api, src, 'again');
    const res = await command(quick.api, src, 'resumeSubscription', { subscriptionKey: 'again' });
    expect(res.status, res.text).toBe(200);
    await eventually(async () => (await allEvents(quick.api, src)).filter((e) => e.type === HALTED).length === 2, 'the second halt');
    const log = await allEvents(quick.api, src);
    expect(log.filter((e) => e.type === ERROR).map((e) => (e.payload as { offset: number }).offset)).toEqual([bad!.offset]);
    expect(log.filter((e) => e.type === HALTED).map((e) => (e.payload as { afterOffset: number }).afterOffset)).toEqual([bad!.offset - 1, bad!.offset - 1]);
    expect(offsetsOf(await copiesOn(quick.api, recv))).toEqual([bad!.offset - 1]);
  });

  it('a halt persists at most 4096 characters of a long error', async () => {
    // The server logs every halt with its error: keep 4 KiB of "x" out of the test output.
    const quiet = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    onTestFinished(() => quiet.mockRestore());
    const src = '/s28/long-src';
    await subscribe(quick.api, '/s28/long-recv', {
      sourceStreamPath: src,
      subscriptionKey: 'long',
      filter: { jsonataCondition: 'payload.bad ? $error($pad("", 5000, "x")) : true' },
    });
    await quick.api.append(src, { type: 'job', payload: { bad: true } });
    const entry = await halted(quick.api, src, 'long');
    expect(entry.deliveryHalted!.error!.length).toBeLessThanOrEqual(4096);
    expect(entry.deliveryHalted!.error).toMatch(/^filter.jsonataCondition threw on offset \d+: x+…$/);
    const audit = (await allEvents(quick.api, src)).find((e) => e.type === ERROR)!;
    expect((audit.payload as { error: string }).error.length).toBeLessThanOrEqual(4096);
  });

  it('a transform that throws on one event is an ordered failure too: the prefix is copied, the event never passes', async () => {
    const src = '/s28/transform-src';
    const recv = '/s28/transform-recv';
    await subscribe(quick.api, recv, {
      sourceStreamPath: src,
      subscriptionKey: 'shape',
      filter: { eventTypes: ['job'] },
      jsonataTransform: 'payload.bad ? $error("cannot shape") : {"payload": {"shaped": payload.n}}',
      delivery: { start: 'beginning' },
    });
    const [ok, bad] = await quick.api.append(src, [
      { type: 'job', payload: { n: 1 } },
      { type: 'job', payload: { n: 2, bad: true } },
      { type: 'job', payload: { n: 3 } },
    ]);
    const entry = await halted(quick.api, src, 'shape');
    expect(entry.deliveryHalted).toEqual({
      reason: 'delivery-failed',
      afterOffset: ok!.offset,
      attempts: QUICK.maxDeliveryAttempts,
      error: `jsonataTransform failed on offset ${bad!.offset}: cannot shape`,
    });
    const copies = await copiesOn(quick.api, recv);
    expect(copies.map((c) => [lastHop(c).offset, c.payload])).toEqual([[ok!.offset, { shaped: 1 }]]);
  });
});

describe('a halted subscription', () => {
  it('holds new events; resumeSubscription delivers them from the existing cursor and clears deliveryHalted', async () => {
    const src = '/s29/src';
    const recv = '/s29/recv';
    const marker = '/s29/marker';
    const body = { sourceStreamPath: src, subscriptionKey: 'h', filter: { eventTypes: ['e'] }, delivery: { start: 'beginning' as const } };
    const original = await subscribe(quick.api, recv, body);
    await subscribe(quick.api, marker, { sourceStreamPath: src, subscriptionKey: 'm', filter: { eventTypes: ['e'] } });
    const [e1] = await quick.api.append(src, { type: 'e', payload: { n: 1 } });
    await caughtUp(quick.api, src, 'h');

    const { appended, entry } = await haltByPausedReceiver(quick.api, src, recv, 'h', [{ type: 'e', payload: { n: 2 } }]);
    expect(entry.deliveryHalted).toEqual({
      reason: 'delivery-failed',
      afterOffset: e1!.offset,
      attempts: QUICK.maxDeliveryAttempts,
      error: expect.stringMatching(/receiving stream \/s29\/recv: .*is paused \(maintenance\)/),
    });
    const haltEvent = (await allEvents(quick.api, src)).find((e) => e.type === HALTED)!;
    expect(haltEvent.payload).toEqual({ subscriptionKey: 'h', ...entry.deliveryHalted });

    // The receiver accepts copies again, but the halted subscription holds new events.
    const [e3] = await quick.api.append(src, { type: 'e', payload: { n: 3 } });
    await eventually(async () => (await copiesOn(quick.api, marker)).some((c) => lastHop(c).offset === e3!.offset), 'the marker copy of e3');
    await settle();
    expect(offsetsOf(await copiesOn(quick.api, recv))).toEqual([e1!.offset]);
    expect(await runtimeOf(quick.api, src, 'h')).toMatchObject({ acknowledgedOffset: e1!.offset, nextAttemptAt: null, inFlightDeadlineAt: null });

    // Repeating the identical subscribe while halted returns the original event and appends nothing (protocol §14.1).
    const head = await headOf(quick.api, src);
    expect(await subscribe(quick.api, recv, body)).toEqual(original);
    expect(await headOf(quick.api, src)).toBe(head);
    expect((await outboundOf(quick.api, src, 'h'))!.deliveryHalted).toBeDefined();

    const res = await command(quick.api, src, 'resumeSubscription', { subscriptionKey: 'h' });
    expect(res.status, res.text).toBe(200);
    const resumed = (res.body as { event: CommittedEvent }).event;
    expect(resumed).toEqual({ path: src, offset: head + 1, createdAt: resumed.createdAt, type: RESUMED_SUB, payload: { subscriptionKey: 'h' } });
    const row = await caughtUp(quick.api, src, 'h');
    expect(row).toMatchObject({ attempt: 0, lastError: null, acknowledgedOffset: resumed.offset });
    expect(offsetsOf(await copiesOn(quick.api, recv))).toEqual([e1!.offset, appended[0]!.offset, e3!.offset]);
    expect((await outboundOf(quick.api, src, 'h'))!.deliveryHalted).toBeUndefined();
  });

  it('resumeSubscription when not halted answers {event: null}; setSubscriptionCursorAndResume answers {cursorSet, resumed}', async () => {
    const src = '/s29/cmd-src';
    const recv = '/s29/cmd-recv';
    await subscribe(quick.api, recv, { sourceStreamPath: src, subscriptionKey: 'h', filter: { eventTypes: ['e'] }, delivery: { start: 'beginning' } });
    const [e1] = await quick.api.append(src, { type: 'e', payload: { n: 1 } });
    await caughtUp(quick.api, src, 'h');

    // Not halted: resume appends nothing.
    let head = await headOf(quick.api, src);
    const notHalted = await command(quick.api, src, 'resumeSubscription', { subscriptionKey: 'h' });
    expect(notHalted.status, notHalted.text).toBe(200);
    expect(notHalted.body).toEqual({ event: null });
    expect(await headOf(quick.api, src)).toBe(head);

    // Not halted: set-and-resume appends only the cursor-set (a new run from the cursor).
    const onlyCursor = await command(quick.api, src, 'setSubscriptionCursorAndResume', { subscriptionKey: 'h', afterOffset: 0 });
    expect(onlyCursor.status, onlyCursor.text).toBe(200);
    const a = onlyCursor.body as { cursorSet: CommittedEvent; resumed: CommittedEvent | null };
    expect(a.resumed).toBeNull();
    expect(a.cursorSet).toMatchObject({ offset: head + 1, type: CURSOR_SET, payload: { subscriptionKey: 'h', afterOffset: 0 } });
    expect(await headOf(quick.api, src)).toBe(head + 1);
    await caughtUp(quick.api, src, 'h');
    expect((await copiesOn(quick.api, recv)).map((c) => [lastHop(c).offset, lastHop(c).cursorChangedAtSourceOffset])).toEqual([
      [e1!.offset, 2],
      [e1!.offset, a.cursorSet.offset],
    ]);

    // Halted: both events in one atomic append, consecutive offsets; delivery restarts at the new cursor.
    const { appended } = await haltByPausedReceiver(quick.api, src, recv, 'h', [{ type: 'e', payload: { n: 2 } }, { type: 'e', payload: { n: 3 } }]);
    head = await headOf(quick.api, src);
    const both = await command(quick.api, src, 'setSubscriptionCursorAndResume', { subscriptionKey: 'h', afterOffset: appended[0]!.offset });
    expect(both.status, both.text).toBe(200);
    const b = both.body as { cursorSet: CommittedEvent; resumed: CommittedEvent };
    expect(b.cursorSet).toMatchObject({ offset: head + 1, type: CURSOR_SET, payload: { subscriptionKey: 'h', afterOffset: appended[0]!.offset } });
    expect(b.resumed).toMatchObject({ offset: head + 2, type: RESUMED_SUB, payload: { subscriptionKey: 'h' } });
    expect(b.resumed.createdAt).toBe(b.cursorSet.createdAt);
    await caughtUp(quick.api, src, 'h');
    const copies = await copiesOn(quick.api, recv);
    // Only the event after the new cursor is copied, under the cursor-set's generation.
    expect(copies.slice(2).map((c) => [lastHop(c).offset, lastHop(c).cursorChangedAtSourceOffset])).toEqual([[appended[1]!.offset, b.cursorSet.offset]]);
    expect((await outboundOf(quick.api, src, 'h'))!.deliveryHalted).toBeUndefined();
  });
});

describe('a copy into a paused receiver', () => {
  let patient: TestServer;
  let papi: Api;
  beforeAll(async () => {
    patient = await startTestServer({ retryBaseMs: 10, retryMaxMs: 40, maxDeliveryAttempts: 100_000, deliveryTimeoutMs: 5_000 });
    papi = patient.api;
  });
  afterAll(async () => {
    await patient?.close();
  });

  it('backs off (lastError mentions the pause, attempt grows), never halts or skips, and lands after stream/resumed', async () => {
    const src = '/s30/src';
    const recv = '/s30/recv';
    await subscribe(papi, recv, { sourceStreamPath: src, subscriptionKey: 'p', filter: { eventTypes: ['e'] }, delivery: { start: 'beginning' } });
    const [e1] = await papi.append(src, { type: 'e', payload: { n: 1 } });
    await caughtUp(papi, src, 'p');
    await papi.append(recv, { type: PAUSED, payload: { reason: 'closed for inventory' } });
    const waiting = await papi.append(src, [{ type: 'e', payload: { n: 2 } }, { type: 'e', payload: { n: 3 } }]);

    const seen = new Set<number>();
    const failing = await eventually(async () => {
      const row = await runtimeOf(papi, src, 'p');
      if (row) seen.add(row.attempt);
      return row && row.attempt >= 4 ? row : undefined;
    }, 'four failed attempts against the paused receiver');
    expect(failing.lastError).toMatch(/receiving stream \/s30\/recv: .*is paused \(closed for inventory\)/);
    expect(failing.acknowledgedOffset).toBe(e1!.offset);
    expect(failing.lag).toBeGreaterThan(0);
    expect(failing.nextAttemptAt === null && failing.inFlightDeadlineAt === null).toBe(false);
    // The attempt count grows one by one across retries.
    expect(Math.max(...seen)).toBeGreaterThanOrEqual(4);
    // Never halted, never skipped past the refused event.
    expect((await outboundOf(papi, src, 'p'))!.deliveryHalted).toBeUndefined();
    expect((await allEvents(papi, src)).filter((e) => e.type === EventType.subscriptionDeliveryHalted || e.type === ERROR)).toEqual([]);
    expect(offsetsOf(await copiesOn(papi, recv))).toEqual([e1!.offset]);

    const [resumed] = await papi.append(recv, { type: RESUMED });
    await caughtUp(papi, src, 'p');
    const log = await allEvents(papi, recv);
    const late = log.filter((e) => e.source !== undefined && lastHop(e).offset > e1!.offset);
    expect(late.map((c) => lastHop(c).offset)).toEqual(waiting.map((e) => e.offset));
    for (const copy of late) expect(copy.offset).toBeGreaterThan(resumed!.offset);
    expect(await runtimeOf(papi, src, 'p')).toMatchObject({ attempt: 0, lastError: null });
  });
});

// Delivery metrics live in each stream's Durable Object on the Worker host (docs/cloudflare.md §4.2).
describe.skipIf(TEST_HOST === 'worker')('/metrics for subscriptions', () => {
  const metrics = useQuickServer();

  it('counts copy deliveries by outcome and shows rivulet_subscriptions_halted 1 while a subscription is halted', async () => {
    const src = '/metrics-sub/src';
    const recv = '/metrics-sub/recv';
    await subscribe(metrics.api, recv, { sourceStreamPath: src, subscriptionKey: 'mk', filter: { eventTypes: ['e'] }, delivery: { start: 'beginning' } });
    await metrics.api.append(src, { type: 'e' });
    await caughtUp(metrics.api, src, 'mk');
    let text = await scrape(metrics.api);
    expect(sampleOf(text, 'rivulet_deliveries_total', { action: 'copy-to-stream', outcome: 'ok' })).toBeGreaterThan(0);
    expect(sampleOf(text, 'rivulet_subscriptions_halted')).toBe(0);

    await haltByPausedReceiver(metrics.api, src, recv, 'mk', [{ type: 'e' }]);
    text = await scrape(metrics.api);
    expect(sampleOf(text, 'rivulet_subscriptions_halted')).toBe(1);
    expect(sampleOf(text, 'rivulet_deliveries_total', { action: 'copy-to-stream', outcome: 'unavailable' })).toBeGreaterThanOrEqual(QUICK.maxDeliveryAttempts);
    expect(sampleOf(text, 'rivulet_subscription_lag_events', { project: '', stream: src, key: 'mk' })).toBeGreaterThan(0);

    const res = await command(metrics.api, src, 'resumeSubscription', { subscriptionKey: 'mk' });
    expect(res.status, res.text).toBe(200);
    await caughtUp(metrics.api, src, 'mk');
    text = await scrape(metrics.api);
    expect(sampleOf(text, 'rivulet_subscriptions_halted')).toBe(0);
    expect(sampleOf(text, 'rivulet_subscription_lag_events', { project: '', stream: src, key: 'mk' })).toBeUndefined();
  });
});
