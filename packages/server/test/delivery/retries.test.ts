/**
 * The failure ladder of the send loop (protocol §9.7, §12.4–12.7): backoff between attempts, the
 * durable halt at the attempt limit (and no delivery after it), resume from the cursor with a fresh
 * ladder, unavailable receivers (scripted, timeouts) never causing a skip, the skip policy and its
 * limit, receivers that throw, and the in-flight watchdog.
 */
import { EventType } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { resumeSubscription, setSubscriptionCursorAndResume } from '../../src/engine/commands.js';
import { createHarness, failing, ok, unavailable, waitFor, type Harness } from './harness.js';
import { itxSub, x } from './payloads.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

describe('halt', () => {
  it('halts after the attempt limit with a durable fact, then delivers nothing more', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 4, retryBaseMs: 10 } });
    h.itx.script = (call) => (call.ctx.subscriptionKey === 'k' ? failing('boom') : ok());
    await h.configure('/s', itxSub('k', { eventTypes: ['app/x'] }));
    await h.configure('/s', itxSub('sentinel', { eventTypes: ['app/x'] }));
    await h.append('/s', x(1));
    const halt = await h.halted('/s', 'k');

    // k, caught up at 2, moved past the sentinel's configure event (3), not of its types, at its commit.
    expect(halt).toEqual({ reason: 'delivery-failed', afterOffset: 3, attempts: 4, error: 'boom' });
    const calls = h.itx.callsFor('k');
    expect(calls.map((c) => c.offsets)).toEqual([[4], [4], [4], [4]]);
    expect(calls.map((c) => c.ctx.attempt)).toEqual([1, 2, 3, 4]);
    // backoff before attempt n+1 is base · 2^(n−1) (random 0.5: no jitter)
    const gaps = calls.slice(1).map((c, i) => c.at - calls[i]!.at);
    expect(gaps[0]).toBeGreaterThanOrEqual(9);
    expect(gaps[1]).toBeGreaterThanOrEqual(19);
    expect(gaps[2]).toBeGreaterThanOrEqual(39);

    const halted = h.eventsOfType('/s', EventType.subscriptionDeliveryHalted);
    expect(halted).toHaveLength(1);
    expect(halted[0]?.payload).toEqual({ subscriptionKey: 'k', reason: 'delivery-failed', afterOffset: 3, attempts: 4, error: 'boom' });
    await waitFor(() => h.sub('/s', 'k').inFlightDeadlineAt === null, 'watchdog cleared');
    expect(h.sub('/s', 'k')).toMatchObject({ acknowledgedOffset: 3, attempt: 4, lastError: 'boom', nextAttemptAt: null, inFlightDeadlineAt: null });

    await h.append('/s', x(2));
    await h.caughtUp('/s', 'sentinel');
    expect(h.itx.callsFor('k')).toHaveLength(4);
    expect(h.alarms.armed).toEqual([]);
  });

  it('resume restarts from the cursor with attempt 0 (a fresh ladder)', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 3 } });
    let healthy = false;
    h.itx.script = () => (healthy ? ok() : failing('boom'));
    await h.configure('/s', itxSub('k', { eventTypes: ['app/x'] }));
    await h.append('/s', x(1));
    await h.halted('/s', 'k');
    await h.append('/s', x(2));
    expect(h.itx.calls).toHaveLength(3);

    healthy = true;
    const { event } = await resumeSubscription(h.actor('/s'), { subscriptionKey: 'k' });
    expect(event?.type).toBe(EventType.subscriptionDeliveryResumed);
    await h.caughtUp('/s', 'k');
    const after = h.itx.calls.slice(3);
    expect(after.map((c) => c.offsets)).toEqual([[3, 5]]);
    expect(after[0]?.ctx.attempt).toBe(1);
    expect(after[0]?.ctx.cursorChangedAtSourceOffset).toBe(2);
    expect(h.sub('/s', 'k')).toMatchObject({ attempt: 0, lastError: null });
    expect(h.core('/s').subscriptions.outbound.byKey.k?.deliveryHalted).toBeUndefined();

    // resuming a subscription that is not halted appends nothing
    expect(await resumeSubscription(h.actor('/s'), { subscriptionKey: 'k' })).toEqual({ event: null });
  });

  it('set cursor and resume: a new run from the new cursor', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 2 } });
    let healthy = false;
    h.itx.script = () => (healthy ? ok() : failing('boom'));
    await h.configure('/s', itxSub('k', { eventTypes: ['app/x'] }));
    await h.append('/s', x(1), x(2));
    await h.halted('/s', 'k');
    healthy = true;
    const { cursorSet, resumed } = await setSubscriptionCursorAndResume(h.actor('/s'), { subscriptionKey: 'k', afterOffset: 3 });
    expect(resumed?.type).toBe(EventType.subscriptionDeliveryResumed);
    await h.caughtUp('/s', 'k');
    const last = h.itx.calls[h.itx.calls.length - 1]!;
    expect(last.offsets).toEqual([4]);
    expect(last.ctx.cursorChangedAtSourceOffset).toBe(cursorSet.offset);
    expect(last.ctx.attempt).toBe(1);
  });

  it('a receiver that throws is a failing delivery', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 2 } });
    h.itx.script = () => new Error('receiver crashed');
    await h.configure('/s', itxSub('k'));
    await h.append('/s', x(1));
    expect(await h.halted('/s', 'k')).toMatchObject({ attempts: 2, error: 'receiver crashed' });
  });
});

describe('unavailable receivers', () => {
  it('a scripted outage halts at the attempt limit but never skips', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 5 } });
    h.itx.script = () => unavailable('worker not connected');
    await h.configure('/s', itxSub('k', { onFailingEvent: 'skip', eventTypes: ['app/x'] }));
    await h.append('/s', x(1), x(2));
    const halt = await h.halted('/s', 'k');
    expect(h.itx.offsetsFor('k')).toEqual([[3, 4], [3], [3], [3], [3]]);
    expect(halt).toEqual({ reason: 'delivery-failed', afterOffset: 2, attempts: 5, error: 'worker not connected' });
    expect(h.eventsOfType('/s', EventType.errorOccurred)).toEqual([]);
  });

  it('timeouts are unavailable: the call is aborted, retried, never skipped', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 3, deliveryTimeoutMs: 60 } });
    h.itx.script = () => 'hang';
    await h.configure('/s', itxSub('k', { onFailingEvent: 'skip', eventTypes: ['app/x'] }));
    await h.append('/s', x(1));
    const halt = await h.halted('/s', 'k');
    expect(halt).toEqual({ reason: 'delivery-failed', afterOffset: 2, attempts: 3, error: 'delivery timed out after 60 ms' });
    expect(h.itx.calls).toHaveLength(3);
    expect(h.itx.calls.every((c) => c.ctx.signal.aborted)).toBe(true);
    expect(h.eventsOfType('/s', EventType.errorOccurred)).toEqual([]);
    expect(h.sub('/s', 'k').acknowledgedOffset).toBe(2);
  });

  it('an action this server has no receiver for is unavailable: it halts, never skips', async () => {
    h = await createHarness({ copyOnly: true, config: { maxDeliveryAttempts: 3 } });
    await h.configure('/s', itxSub('k', { onFailingEvent: 'skip' }));
    await h.append('/s', x(1));
    expect(await h.halted('/s', 'k')).toEqual({ reason: 'delivery-failed', afterOffset: 2, attempts: 3, error: 'this server has no itx-call receiver' });
    expect(h.eventsOfType('/s', EventType.errorOccurred)).toEqual([]);
  });

  it('an outage that ends in time loses nothing: the ladder resets on success', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 6 } });
    h.itx.script = (_call, index) => (index < 3 ? unavailable() : ok());
    await h.configure('/s', itxSub('k', { onFailingEvent: 'skip' }));
    await h.append('/s', x(1), x(2));
    await h.caughtUp('/s', 'k');
    expect(h.itx.offsetsFor('k')).toEqual([[3, 4], [3], [3], [3], [4]]);
    expect(h.sub('/s', 'k')).toMatchObject({ attempt: 0, lastError: null });
  });
});

describe('skip policy', () => {
  it('one multi-event attempt, then exactly three single-event attempts, then an audit and later events flow', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 6 } });
    h.itx.script = (call) => (call.offsets.includes(3) ? failing('bad event') : ok());
    await h.configure('/s', itxSub('k', { onFailingEvent: 'skip', eventTypes: ['app/x'] }));
    await h.append('/s', x(1), x(2), x(3));
    await h.caughtUp('/s', 'k');
    expect(h.itx.offsetsFor('k')).toEqual([[3, 4, 5], [3], [3], [3], [4], [5]]);
    const audits = h.eventsOfType('/s', EventType.errorOccurred);
    expect(audits).toHaveLength(1);
    expect(audits[0]?.idempotencyKey).toBe('rivulet-internal/skip:["k",2,3]');
    expect(audits[0]?.payload).toEqual({
      message: 'subscription "k" skipped offset 3 after it failed alone 3 times: bad event',
      subscriptionKey: 'k',
      offset: 3,
      error: 'bad event',
    });
    expect(h.core('/s').subscriptions.outbound.byKey.k?.deliveryHalted).toBeUndefined();
    expect(h.sub('/s', 'k')).toMatchObject({ attempt: 0, lastError: null, acknowledgedOffset: h.head('/s') });

    await h.append('/s', x(4));
    await h.caughtUp('/s', 'k');
    expect(h.itx.offsetsFor('k').at(-1)).toEqual([7]);
  });

  it('two skips without a success in between: the third failing event halts instead', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 6 } });
    h.itx.script = (call) => (call.offsets.some((o) => o <= 5) ? failing('bad event') : ok());
    await h.configure('/s', itxSub('k', { onFailingEvent: 'skip', eventTypes: ['app/x'] }));
    await h.append('/s', x(1), x(2), x(3), x(4));
    const halt = await h.halted('/s', 'k');
    expect(h.itx.offsetsFor('k')).toEqual([[3, 4, 5, 6], [3], [3], [3], [4], [4], [4], [5], [5], [5]]);
    expect(halt).toEqual({ reason: 'delivery-failed', afterOffset: 4, attempts: 3, error: 'bad event' });
    const audits = h.eventsOfType('/s', EventType.errorOccurred);
    expect(audits.map((a) => (a.payload as { offset: number }).offset)).toEqual([3, 4]);
    expect(h.itx.calls.some((c) => c.offsets.includes(6) && c.offsets.length === 1)).toBe(false);
  });

  it('a success between skips resets the count', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 6 } });
    const bad = new Set([3, 5, 7]);
    h.itx.script = (call) => (call.offsets.some((o) => bad.has(o)) ? failing('bad event') : ok());
    await h.configure('/s', itxSub('k', { onFailingEvent: 'skip', eventTypes: ['app/x'] }));
    await h.append('/s', x(1), x(2), x(3), x(4), x(5), x(6));
    await h.caughtUp('/s', 'k');
    const audits = h.eventsOfType('/s', EventType.errorOccurred);
    expect(audits.map((a) => (a.payload as { offset: number }).offset)).toEqual([3, 5, 7]);
    expect(h.core('/s').subscriptions.outbound.byKey.k?.deliveryHalted).toBeUndefined();
  });
});

describe('the in-flight watchdog', () => {
  it('is stored before the call leaves and visible while the call hangs; the alarm covers it', async () => {
    h = await createHarness({ config: { deliveryTimeoutMs: 5000 } });
    h.itx.script = (_call, index) => (index === 0 ? 'hang' : ok());
    await h.configure('/s', itxSub('k'));
    const before = Date.now();
    await h.append('/s', x(1));
    const call = await waitFor(() => h.itx.calls[0], 'the first call');
    const deadline = h.sub('/s', 'k').inFlightDeadlineAt;
    expect(deadline).not.toBeNull();
    expect(deadline!).toBeGreaterThanOrEqual(before + 5000);
    expect(deadline!).toBeLessThanOrEqual(call.at + 5000);
    // the stored row carries it too (a restart sees an unfinished call)
    const row = h.storage.exec<{ inflight_deadline_at: number | null }>(`SELECT inflight_deadline_at FROM subscription_runtime WHERE key = 'k'`)[0];
    expect(row?.inflight_deadline_at).toBe(deadline);

    // a commit during the call does not start a second call of the same run; the alarm is armed at the deadline
    await h.append('/s', x(2));
    await waitFor(() => h.alarms.armed.some((a) => a.armedAt === deadline), 'alarm armed at the watchdog deadline');
    expect(h.itx.calls).toHaveLength(1);

    call.release(ok());
    await h.caughtUp('/s', 'k');
    expect(h.itx.offsetsFor('k')).toEqual([[3], [4]]);
    expect(h.sub('/s', 'k').inFlightDeadlineAt).toBeNull();
    expect(h.alarms.armed).toEqual([]);
  });
});
