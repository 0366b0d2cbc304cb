/**
 * The info lines of subscription and lifetime facts (engine/lifecycle-log.ts), from the engine as
 * the hosts compose it: each fact is logged once, with its stream, key, offsets and error, whoever
 * committed it (the delivery engine, a raw append), and nothing else is.
 */
import { EventType, type JsonObject } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, failing, ok, PROJECT, waitFor, type Harness } from './harness.js';
import { itxSub, x } from './payloads.js';
import { settleReciprocalCopies } from './reciprocal-copies.js';

let h: Harness;
afterEach(() => h?.close());

const messages = () => h.infos.map(([message]) => message);

describe('lifecycle lines', () => {
  it('a halt, then a resume and a cursor set, each once with its stream, key, offsets and error', async () => {
    h = await createHarness();
    h.itx.script = () => failing('receiver refused the batch');
    await h.configure('/s', itxSub('k'));
    await h.append('/s', x(1));
    await h.halted('/s', 'k');
    await waitFor(() => h.infos.length > 0, 'the halt line');
    const [halt] = h.eventsOfType('/s', EventType.subscriptionDeliveryHalted);
    expect(h.infos).toEqual([
      [
        'subscription halted',
        { project: PROJECT, stream: '/s', offset: halt!.offset, subscriptionKey: 'k', afterOffset: 2, attempts: 4, error: 'receiver refused the batch' },
      ],
    ]);
    h.itx.script = () => ok();
    const [resumed] = await h.append('/s', { type: EventType.subscriptionDeliveryResumed, payload: { subscriptionKey: 'k' } });
    const [cursor] = await h.append('/s', { type: EventType.subscriptionCursorSet, payload: { subscriptionKey: 'k', afterOffset: 0 } });
    await h.caughtUp('/s', 'k');
    expect(h.infos.slice(1)).toEqual([
      ['subscription resumed', { project: PROJECT, stream: '/s', offset: resumed!.offset, subscriptionKey: 'k' }],
      ['subscription cursor set', { project: PROJECT, stream: '/s', offset: cursor!.offset, subscriptionKey: 'k', afterOffset: 0 }],
    ]);
  });

  it('a skip names the skipped offset and its error; ordinary events and other audits are not logged', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 6 } });
    h.itx.script = (call) => (call.offsets.includes(3) ? failing('bad event') : ok());
    await h.configure('/s', itxSub('k', { onFailingEvent: 'skip', eventTypes: ['app/x'] }));
    await h.append('/s', x(1), x(2), x(3), { type: EventType.errorOccurred, payload: { message: 'a caller audit' } as JsonObject });
    await h.caughtUp('/s', 'k');
    const [audit] = h.eventsOfType('/s', EventType.errorOccurred).filter((e) => e.idempotencyKey?.startsWith('rivulet-internal/skip:'));
    expect(h.infos).toEqual([
      ['subscription skipped an event', { project: PROJECT, stream: '/s', offset: audit!.offset, subscriptionKey: 'k', skippedOffset: 3, error: 'bad event' }],
    ]);
  });

  it('cycle drops on a reciprocal copy pair are logged on the receiving stream, one line per audit', async () => {
    h = await createHarness();
    await settleReciprocalCopies(h);
    const audits = ['/a', '/b'].flatMap((path) =>
      h.eventsOfType(path, EventType.errorOccurred).map((e) => ({ path, offset: e.offset, drop: (e.payload as { drop: Record<string, unknown> }).drop })),
    );
    expect(audits.length).toBeGreaterThan(0);
    expect(h.infos.map(([message, fields]) => [message, fields?.stream, fields?.offset])).toEqual(
      expect.arrayContaining(audits.map((a) => ['copied events dropped', a.path, a.offset])),
    );
    expect(messages()).toEqual(audits.map(() => 'copied events dropped'));
    const first = h.infos.find(([, fields]) => fields?.stream === audits[0]!.path && fields.offset === audits[0]!.offset)!;
    expect(first[1]).toEqual({
      project: PROJECT,
      stream: audits[0]!.path,
      offset: audits[0]!.offset,
      sourcePath: audits[0]!.drop.sourcePath,
      subscriptionKey: audits[0]!.drop.subscriptionKey,
      reason: 'cycle',
      count: audits[0]!.drop.count,
      firstOffset: audits[0]!.drop.firstOffset,
      lastOffset: audits[0]!.drop.lastOffset,
    });
  });

  it('a destroy of an existing stream is logged once; of a missing one not at all', async () => {
    h = await createHarness();
    await h.append('/gone', x(1));
    expect(await h.actor('/gone').destroy()).toBe(true);
    expect(await h.actor('/never').destroy()).toBe(false);
    expect(h.infos).toEqual([['stream destroyed', { project: PROJECT, stream: '/gone' }]]);
  });
});
