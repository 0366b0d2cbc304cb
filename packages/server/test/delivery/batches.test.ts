/**
 * What one delivery carries (protocol §12.1, §12.3, §12.4): batches, isolate-or-progress after a
 * failure, non-matching events skipped (not deferred), ephemeral events never delivered, a
 * throwing condition (healthy prefix, one audit, an ordered failure), transforms, webhooks one
 * event at a time, and the delivery context of a run.
 */
import { EventType } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, failing, ok, waitFor, type Harness } from './harness.js';
import { itxSub, webhookSub, x } from './payloads.js';

let h: Harness;
afterEach(async () => {
  await h.close();
  expect(h.logs.filter((l) => l.includes('unexpectedly'))).toEqual([]);
});

describe('batches', () => {
  it('delivers the events of one append in one batch, with the run in the context', async () => {
    h = await createHarness();
    const configured = await h.configure('/s', itxSub('k'));
    expect(configured.offset).toBe(2);
    await h.append('/s', x(1), x(2));
    await h.caughtUp('/s', 'k');
    expect(h.itx.offsetsFor('k')).toEqual([[3, 4]]);
    const core = h.core('/s');
    const [call] = h.itx.calls;
    expect(call?.ctx).toMatchObject({
      projectId: 'proj',
      path: '/s',
      streamId: core.streamId,
      streamCreatedAt: core.createdAt,
      subscriptionKey: 'k',
      cursorChangedAtSourceOffset: 2,
      deliveryId: `delivery:${JSON.stringify([core.streamId, 'k', 2, 3, 4])}`,
      attempt: 1,
      streamMaxOffset: 4,
    });
    expect(call?.events.map((e) => e.shaped)).toEqual([
      { type: 'app/x', payload: { n: 1 } },
      { type: 'app/x', payload: { n: 2 } },
    ]);
    const view = h.sub('/s', 'k');
    expect(view).toMatchObject({ acknowledgedOffset: 4, lag: 0, attempt: 0, lastError: null, nextAttemptAt: null, inFlightDeadlineAt: null });
    expect(view.bytesSent).toBeGreaterThan(0);
    expect(view.deliveryDurationMs?.count).toBe(1);
    expect(view.completionLatencyMs?.count).toBe(1);
  });

  it('start "beginning" delivers the whole log, control events included', async () => {
    h = await createHarness();
    await h.append('/s', x(1));
    await h.configure('/s', itxSub('k', { start: 'beginning' }));
    await h.caughtUp('/s', 'k');
    expect(h.itx.offsetsFor('k')).toEqual([[1, 2, 3]]);
    expect(h.itx.calls[0]?.events.map((e) => e.event.type)).toEqual([EventType.created, 'app/x', EventType.subscriptionConfigured]);
  });

  it('isolate-or-progress: after a failure one event per batch until a success, then full batches again', async () => {
    h = await createHarness();
    h.itx.script = (_call, index) => (index === 0 ? failing() : ok());
    await h.configure('/s', itxSub('k'));
    await h.append('/s', x(1), x(2), x(3));
    await h.caughtUp('/s', 'k');
    expect(h.itx.offsetsFor('k')).toEqual([[3, 4, 5], [3], [4, 5]]);
    expect(h.itx.calls.map((c) => c.ctx.attempt)).toEqual([1, 2, 1]);
  });

  it('a failing event inside a batch: the healthy prefix commits one event at a time, then the event fails alone', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 4 } });
    h.itx.script = (call) => (call.offsets.includes(5) ? failing('offset 5 is poison') : ok());
    await h.configure('/s', itxSub('k'));
    await h.append('/s', x(1), x(2), x(3));
    const halt = await h.halted('/s', 'k');
    expect(h.itx.offsetsFor('k')).toEqual([[3, 4, 5], [3], [4, 5], [4], [5], [5], [5], [5]]);
    expect(halt).toEqual({ reason: 'delivery-failed', afterOffset: 4, attempts: 4, error: 'offset 5 is poison' });
  });

  it('webhooks get one event per call', async () => {
    h = await createHarness();
    await h.configure('/s', webhookSub('w'));
    await h.append('/s', x(1), x(2), x(3));
    await h.caughtUp('/s', 'w');
    expect(h.webhook.offsetsFor('w')).toEqual([[3], [4], [5]]);
  });
});

describe('filters and ephemeral events', () => {
  it('non-matching events are skipped, not deferred: the cursor passes them', async () => {
    h = await createHarness();
    await h.configure('/s', itxSub('k', { condition: 'payload.n > 10' }));
    await h.append('/s', x(1), x(2));
    await h.caughtUp('/s', 'k');
    expect(h.itx.calls).toEqual([]);
    expect(h.sub('/s', 'k').acknowledgedOffset).toBe(4);

    await h.append('/s', x(11), x(3), x(12), x(4));
    await h.caughtUp('/s', 'k');
    expect(h.itx.offsetsFor('k')).toEqual([[5, 7]]);
    expect(h.sub('/s', 'k').acknowledgedOffset).toBe(8);
  });

  it('event types are filtered the same way', async () => {
    h = await createHarness();
    await h.configure('/s', itxSub('k', { eventTypes: ['app/x'] }));
    await h.append('/s', { type: 'app/other' }, x(1), { type: 'app/other' });
    await h.caughtUp('/s', 'k');
    expect(h.itx.offsetsFor('k')).toEqual([[4]]);
    await h.append('/s', { type: 'app/other' });
    await h.caughtUp('/s', 'k');
    expect(h.itx.calls).toHaveLength(1);
    expect(h.sub('/s', 'k').acknowledgedOffset).toBe(6);
  });

  it('ephemeral events are never delivered; the cursor passes over them', async () => {
    h = await createHarness();
    await h.configure('/s', itxSub('k'));
    await h.append('/s', x(1, { ephemeral: true }), x(2), x(3, { ephemeral: true }));
    await h.caughtUp('/s', 'k');
    expect(h.itx.offsetsFor('k')).toEqual([[4]]);
    expect(h.sub('/s', 'k').acknowledgedOffset).toBe(5);
    await h.append('/s', x(4, { ephemeral: true }));
    await h.caughtUp('/s', 'k');
    expect(h.itx.calls).toHaveLength(1);
    expect(h.sub('/s', 'k').acknowledgedOffset).toBe(6);
  });

  it('a throwing condition: the healthy prefix is delivered, then the event fails in order with exactly one audit', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 4 } });
    await h.configure('/s', itxSub('k', { eventTypes: ['app/x'], condition: '$number(payload.s) > 0' }));
    const s = (v: string) => ({ type: 'app/x', payload: { s: v } });
    await h.append('/s', s('1'), s('2'), s('bad'), s('3'));
    const halt = await h.halted('/s', 'k');

    const jsonataMessage = 'Unable to cast value to a number: "bad"';
    expect(h.itx.offsetsFor('k')).toEqual([[3, 4]]);
    const audits = h.eventsOfType('/s', EventType.errorOccurred);
    expect(audits).toHaveLength(1);
    expect(audits[0]?.payload).toEqual({
      message: `subscription "k" filter.jsonataCondition threw on offset 5: ${jsonataMessage}`,
      subscriptionKey: 'k',
      offset: 5,
      error: `filter.jsonataCondition threw on offset 5: ${jsonataMessage}`,
    });
    expect(audits[0]?.idempotencyKey).toBe('rivulet-internal/condition:["k",2,5]');
    const error = `filter.jsonataCondition threw on offset 5: ${jsonataMessage}`;
    expect(halt).toEqual({ reason: 'delivery-failed', afterOffset: 4, attempts: 4, error });
    expect(h.sub('/s', 'k')).toMatchObject({ acknowledgedOffset: 4, attempt: 4, lastError: error });
  });

  it('a throwing condition with onFailingEvent "skip" is skipped after its confirmations, and later events flow', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 6 } });
    await h.configure('/s', itxSub('k', { eventTypes: ['app/x'], condition: '$number(payload.s) > 0', onFailingEvent: 'skip' }));
    const s = (v: string) => ({ type: 'app/x', payload: { s: v } });
    await h.append('/s', s('bad'), s('1'));
    await waitUntilDelivered(h, 'k', 4);
    const audits = h.eventsOfType('/s', EventType.errorOccurred);
    expect(audits.map((a) => a.idempotencyKey)).toEqual(['rivulet-internal/condition:["k",2,3]', 'rivulet-internal/skip:["k",2,3]']);
    expect(h.itx.offsetsFor('k')).toEqual([[4]]);
    expect(h.core('/s').subscriptions.outbound.byKey.k?.deliveryHalted).toBeUndefined();
  });

  it('a transform shapes what is delivered; a transform failure is an ordered failure after the healthy prefix', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 3 } });
    await h.configure('/s', itxSub('k', { eventTypes: ['app/x'], transform: '{"payload": {"doubled": payload.n * 2}}' }));
    await h.append('/s', x(1), x(2), { type: 'app/x', payload: { n: 'text' } }, x(4));
    const halt = await h.halted('/s', 'k');
    expect(h.itx.offsetsFor('k')).toEqual([[3, 4]]);
    expect(h.itx.calls[0]?.events.map((e) => e.shaped)).toEqual([
      { type: 'app/x', payload: { doubled: 2 } },
      { type: 'app/x', payload: { doubled: 4 } },
    ]);
    expect(halt.afterOffset).toBe(4);
    expect(halt.error).toMatch(/^jsonataTransform failed on offset 5: /);
  });
});

async function waitUntilDelivered(harness: Harness, key: string, offset: number): Promise<void> {
  await waitFor(() => harness.itx.callsFor(key).some((c) => c.offsets.includes(offset) && c.settled), `offset ${offset} delivered to "${key}"`);
}
