/**
 * Events just written, delivered from memory (engine/written-events.ts, docs/architecture.md
 * "Events just written"): a live subscription takes them from the actor instead of reading their
 * rows back, delivers exactly what the SQL read delivers (ephemeral events left out, types and
 * conditions judged), and the actor lets them go once nothing is in flight.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createHarness, settle, waitFor, type Harness } from './harness.js';
import { copySub, itxSub, x } from './payloads.js';

let h: Harness | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await h?.close();
  h = undefined;
});

/** Reads of `path`'s rows by delivery (EventRows.range with the source's sid). */
function rowReads(h: Harness, path: string) {
  const sid = h.actor(path).sid;
  const spy = vi.spyOn(h.store.events, 'range');
  return () => spy.mock.calls.filter(([readSid]) => readSid === sid).length;
}

describe('events just written, delivered from memory', () => {
  it('lone appends reach a webhook-like call and a copy without a read of their rows, the ephemeral ones and other types left out', async () => {
    h = await createHarness();
    await h.configure('/s', itxSub('k', { eventTypes: ['app/x'] }));
    await h.configure('/s', copySub('c', '/d', { start: 'now' }));
    await h.caughtUp('/s', 'k');
    await h.caughtUp('/s', 'c');
    const reads = rowReads(h, '/s');
    const appended = [];
    for (const input of [x(1), { type: 'app/other' }, x(2, { ephemeral: true }), x(3), { type: 'app/y', payload: { n: 4 } }]) {
      appended.push(...(await h.append('/s', input)));
      await h.caughtUp('/s', 'k');
      await h.caughtUp('/s', 'c');
    }
    const kept = appended.filter((e) => e.ephemeral !== true);
    expect(h.itx.offsetsFor('k').flat()).toEqual(kept.filter((e) => e.type === 'app/x').map((e) => e.offset));
    expect(h.events('/d').filter((e) => e.source !== undefined).map((e) => e.source!.copiedFrom[0]!.offset)).toEqual(kept.map((e) => e.offset));
    expect(reads()).toBe(0);
  });

  it('judges a condition on the events it holds as on those it reads', async () => {
    h = await createHarness();
    await h.configure('/s', itxSub('k', { condition: 'payload.n > 1' }));
    await h.caughtUp('/s', 'k');
    const reads = rowReads(h, '/s');
    const [one, two] = await h.append('/s', x(1), x(2));
    await h.caughtUp('/s', 'k');
    expect(h.itx.offsetsFor('k')).toEqual([[two!.offset]]);
    expect(one!.offset).toBe(two!.offset - 1);
    expect(reads()).toBe(0);
  });

  it('reads with SQL what it does not hold: events written before the subscription existed', async () => {
    h = await createHarness();
    const early = await h.append('/s', x(1), x(2), x(3));
    await h.configure('/s', itxSub('k', { start: 'beginning', eventTypes: ['app/x'] }));
    const reads = rowReads(h, '/s');
    await h.caughtUp('/s', 'k');
    expect(h.itx.offsetsFor('k').flat()).toEqual(early.map((e) => e.offset));
    expect(reads()).toBeGreaterThan(0);
  });

  it('lets the events go once nothing is in flight, and holds none after a destroy', async () => {
    h = await createHarness();
    await h.configure('/s', itxSub('k'));
    let release!: () => void;
    h.itx.script = (call) => {
      release = () => call.release({ ok: true });
      return 'hang';
    };
    const [event] = await h.append('/s', x(1));
    await waitFor(() => h!.itx.calls.length === 1, 'the call');
    // In flight: the event is still held.
    expect(h.actor('/s').writtenEvents(event!.offset - 1, event!.offset)?.map((e) => e.event.offset)).toEqual([event!.offset]);
    release();
    await h.caughtUp('/s', 'k');
    await settle();
    expect(h.actor('/s').writtenEvents(event!.offset - 1, event!.offset)).toBeUndefined();

    h.itx.script = () => 'hang';
    const [held] = await h.append('/s', x(2));
    await waitFor(() => h!.itx.calls.length === 2, 'the second call');
    expect(h.actor('/s').writtenEvents(held!.offset - 1, held!.offset)).toBeDefined();
    await h.actor('/s').destroy();
    expect(h.actor('/s').writtenEvents(held!.offset - 1, held!.offset)).toBeUndefined();
    h.itx.releaseAll();
  });
});
