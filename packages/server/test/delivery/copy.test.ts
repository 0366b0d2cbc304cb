/**
 * copy-to-stream through the real copy receiver (protocol §3.5, §10.3, §13.1–13.6): copies with
 * their hop and per-run identity, the fence against superseded runs, a paused receiver being
 * unavailable, and a reciprocal wildcard pair that converges through cycle drops.
 */
import { EventType, RivuletError, type CommittedEvent } from '@rivulet/contract';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CopyBatch } from '../../src/core/copy-builder.js';
import { subscribeToEventsFrom } from '../../src/engine/commands.js';
import { createHarness, PROJECT, waitFor, type Harness } from './harness.js';
import { copySub, x } from './payloads.js';
import { settleReciprocalCopies } from './reciprocal-copies.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

const hopsOf = (e: CommittedEvent) => e.source?.copiedFrom ?? [];

describe('copies', () => {
  it('appends each matching event on the receiver with its hop, identity and the inbound record', async () => {
    h = await createHarness();
    await h.append('/a', x(1));
    const { subscriptionKey, subscriptionConfiguredEvent } = await subscribeToEventsFrom((path) => h.actor(path), '/r', {
      sourceStreamPath: '/a',
      subscriptionKey: 'k',
      filter: { eventTypes: ['app/x'] },
      jsonataTransform: '{"type": "copied/x", "payload": {"m": payload.n * 10}}',
      delivery: { start: 'beginning' },
    });
    expect(subscriptionKey).toBe('k');
    await h.append('/a', x(2));
    await h.caughtUp('/a', 'k');

    const source = h.core('/a');
    const copies = h.events('/r').filter((e) => e.type === 'copied/x');
    expect(copies.map((c) => c.payload)).toEqual([{ m: 10 }, { m: 20 }]);
    const originals = h.events('/a').filter((e) => e.type === 'app/x');
    copies.forEach((copy, i) => {
      const original = originals[i]!;
      expect(hopsOf(copy)).toEqual([
        {
          projectId: PROJECT,
          path: '/a',
          streamId: source.streamId,
          streamCreatedAt: source.createdAt,
          offset: original.offset,
          type: 'app/x',
          createdAt: original.createdAt,
          subscriptionKey: 'k',
          cursorChangedAtSourceOffset: subscriptionConfiguredEvent.offset,
        },
      ]);
      expect(copy.idempotencyKey).toBe(
        `rivulet-internal/copy:${JSON.stringify(['k', subscriptionConfiguredEvent.offset, PROJECT, '/a', source.streamId, original.offset])}`,
      );
    });
    expect(h.core('/r').subscriptions.inbound.bySourcePath['/a']?.k).toEqual({
      streamId: source.streamId,
      streamCreatedAt: source.createdAt,
      cursorChangedAtSourceOffset: subscriptionConfiguredEvent.offset,
      numEventsReceived: 2,
      lastEventReceivedAt: copies[1]!.createdAt,
    });
    // the receiver stores no configuration of the source's subscription
    expect(h.core('/r').subscriptions.outbound.byKey).toEqual({});
  });

  it('untransformed copies of a batch a condition thins out are stored as parts, each with its own source event', async () => {
    h = await createHarness();
    for (let n = 1; n <= 40; n++) await h.append('/a', x(n));
    await subscribeToEventsFrom((path) => h.actor(path), '/r', {
      sourceStreamPath: '/a',
      subscriptionKey: 'odd',
      filter: { eventTypes: ['app/x'], jsonataCondition: 'payload.n % 2 = 1' },
      delivery: { start: 'beginning' },
    });
    await h.caughtUp('/a', 'odd');
    const copies = h.events('/r').filter((e) => e.type === 'app/x');
    expect(copies.map((c) => c.payload)).toEqual(Array.from({ length: 20 }, (_, i) => ({ n: 2 * i + 1 })));
    expect(copies.map((c) => hopsOf(c)[0]!.offset)).toEqual(h.events('/a').filter((e) => e.type === 'app/x' && (e.payload as { n: number }).n % 2 === 1).map((e) => e.offset));
    // Stored as parts (engine/copy-rows.ts): the copy was spliced from its own source event's text.
    const parts = h.storage.exec<{ n: number }>(`SELECT count(*) AS n FROM events WHERE copy_run IS NOT NULL`)[0]!.n;
    expect(parts).toBe(20);
  });

  it('a redelivered batch of the same run collapses; an older run is fenced off; a newer one copies again', async () => {
    h = await createHarness();
    const first = await h.configure('/a', copySub('k', '/r', { eventTypes: ['app/x'] }));
    await h.append('/a', x(1));
    await h.caughtUp('/a', 'k');
    const source = h.core('/a');
    const head = h.head('/r');
    const batch = (cursorChangedAtSourceOffset: number): CopyBatch => ({
      projectId: PROJECT,
      path: '/a',
      streamId: source.streamId,
      streamCreatedAt: source.createdAt,
      cursorChangedAtSourceOffset,
      subscriptionKey: 'k',
      receivingStreamPath: '/r',
      events: [{ offset: 3, type: 'app/x', createdAt: source.createdAt, shaped: { type: 'app/x', payload: { n: 1 } } }],
    });
    await h.actor('/r').receiveCopies(batch(first.offset));
    expect(h.head('/r')).toBe(head);

    const second = await h.configure('/a', copySub('k', '/r', { eventTypes: ['app/x'] }));
    await h.caughtUp('/a', 'k');
    expect(h.events('/r').filter((e) => e.type === 'app/x')).toHaveLength(2);
    expect(h.core('/r').subscriptions.inbound.bySourcePath['/a']?.k?.cursorChangedAtSourceOffset).toBe(second.offset);

    let refused: unknown;
    try {
      await h.actor('/r').receiveCopies(batch(first.offset));
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(RivuletError);
    expect((refused as RivuletError).code).toBe('CONFLICT');
    expect((refused as RivuletError).message).toMatch(/already accepted a newer delivery/);
  });

  it('a batch looks up its identities in one statement: a partly stored batch appends only what is new', async () => {
    h = await createHarness({ withoutDelivery: true });
    await h.append('/a', x(1));
    const source = h.core('/a');
    const ev = (offset: number) => ({ offset, type: 'app/x', createdAt: source.createdAt, shaped: { type: 'app/x', payload: { n: offset } } });
    const batch = (offsets: number[]): CopyBatch => ({
      projectId: PROJECT,
      path: '/a',
      streamId: source.streamId,
      streamCreatedAt: source.createdAt,
      cursorChangedAtSourceOffset: 1,
      subscriptionKey: 'k',
      receivingStreamPath: '/r',
      events: offsets.map(ev),
    });
    // The first batch creates /r: no stream yet, nothing to look up.
    await h.actor('/r').receiveCopies(batch([3, 4]));
    const stored = h.events('/r').filter((e) => e.type === 'app/x');
    expect(stored).toHaveLength(2);
    const before = h.head('/r');
    const one = vi.spyOn(h.store.events, 'byKey');
    const many = vi.spyOn(h.store.events, 'byKeys');
    await h.actor('/r').receiveCopies(batch([3, 4, 5, 6]));
    expect(h.head('/r')).toBe(before + 2);
    expect(one).not.toHaveBeenCalled();
    expect(many).toHaveBeenCalledTimes(1);
    expect(many.mock.calls[0]![1]).toHaveLength(4);
    const copies = h.events('/r').filter((e) => e.type === 'app/x');
    expect(copies.map((c) => c.payload)).toEqual([{ n: 3 }, { n: 4 }, { n: 5 }, { n: 6 }]);
    expect(copies.slice(0, 2)).toEqual(stored);
    const head = h.head('/r');
    await h.actor('/r').receiveCopies(batch([3, 4, 5, 6]));
    expect(h.head('/r')).toBe(head);
    // Outside a copy batch, keys are looked up one by one again: the batch's answers are gone. A
    // fresh key is not looked up at all (its insert finds no stored key); its repeat is.
    const [repeat] = await h.append('/r', { type: 'app/y', idempotencyKey: 'user-key', payload: {} });
    expect(one).not.toHaveBeenCalled();
    const [again] = await h.append('/r', { type: 'app/y', idempotencyKey: 'user-key', payload: {} });
    expect(one).toHaveBeenCalledWith(h.actor('/r').sid, 'user-key');
    expect(again).toEqual(repeat);
    expect(h.head('/r')).toBe(head + 1);
    // A batch of new identities is not looked up at all: its inserts find no stored key.
    const lookups = many.mock.calls.length;
    expect(await h.actor('/r').receiveCopies(batch([7, 8]))).toEqual({ appended: 2, dropped: 0 });
    expect(many).toHaveBeenCalledTimes(lookups);
    expect(h.head('/r')).toBe(head + 3);
    expect(
      h
        .events('/r')
        .filter((e) => e.type === 'app/x')
        .map((c) => c.payload),
    ).toEqual([3, 4, 5, 6, 7, 8].map((n) => ({ n })));
  });

  it('a paused receiver is unavailable: backoff, never a skip, and the copy lands after resume', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 50, retryBaseMs: 5, retryMaxMs: 20 } });
    await h.append('/r', { type: EventType.paused, payload: { reason: 'maintenance' } });
    await h.configure('/a', copySub('k', '/r', { eventTypes: ['app/x'] }));
    await h.append('/a', x(1));
    const view = await waitFor(() => (h.sub('/a', 'k').attempt >= 2 ? h.sub('/a', 'k') : undefined), 'retries against the paused receiver');
    expect(view.lastError).toMatch(/^receiving stream \/r: .*paused/);
    expect(h.events('/r').filter((e) => e.type === 'app/x')).toEqual([]);

    await h.append('/r', { type: EventType.resumed });
    await h.caughtUp('/a', 'k');
    expect(h.events('/r').filter((e) => e.type === 'app/x')).toHaveLength(1);
    expect(h.sub('/a', 'k')).toMatchObject({ attempt: 0, lastError: null });
    expect(h.eventsOfType('/a', EventType.errorOccurred)).toEqual([]);
  });

  it('a reciprocal wildcard pair converges: cycles are dropped with one audit per batch, audits are not copied onward', async () => {
    h = await createHarness();
    await settleReciprocalCopies(h);

    for (const [path, other] of [
      ['/a', '/b'],
      ['/b', '/a'],
    ] as const) {
      const events = h.events(path);
      // no stored chain ever holds its own stream
      for (const e of events) expect(hopsOf(e).some((hop) => hop.path === path)).toBe(false);
      const audits = events.filter((e) => e.type === EventType.errorOccurred);
      expect(audits.length).toBeGreaterThan(0);
      for (const audit of audits) {
        expect(audit.idempotencyKey?.startsWith('rivulet-internal/drop:')).toBe(true);
        expect(audit.payload).toMatchObject({ drop: { reason: 'cycle', sourcePath: other } });
        expect(hopsOf(audit)).toEqual([]);
      }
      // copied control facts are data: the copy of the other side's configure created nothing here
      const copiedConfigure = events.filter((e) => e.type === EventType.subscriptionConfigured && hopsOf(e).length > 0);
      expect(copiedConfigure.length).toBeGreaterThan(0);
      expect(Object.keys(h.core(path).subscriptions.outbound.byKey)).toEqual([path === '/a' ? 'ab' : 'ba']);
    }
    // drop audits of one stream never arrive on the other
    for (const e of h.events('/b')) {
      if (hopsOf(e).length > 0) expect(e.type === EventType.errorOccurred && e.idempotencyKey?.startsWith('rivulet-internal/drop:')).toBe(false);
    }
    const quiet = h.head('/a') + h.head('/b');
    await h.append('/a', x(3));
    await waitFor(() => h.sub('/b', 'ba').acknowledgedOffset === h.head('/b') && h.sub('/a', 'ab').acknowledgedOffset === h.head('/a') && h.head('/a') + h.head('/b') > quiet + 1, 'the next round');
    // x(3) on /a, its copy on /b, and one drop audit on /a for the copy coming back
    await waitFor(() => h.alarms.armed.length === 0 && h.head('/a') + h.head('/b') === quiet + 3, 'converged again');
  });
});
