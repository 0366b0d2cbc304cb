/**
 * Passing caught-up subscriptions over events their types cannot match (pass-over.ts, protocol
 * §12.3), through the whole engine: the cursors still pass the events, a matching subscription
 * beside them is still delivered, a reconfigured filter is judged on its new types, and the quiet
 * cursors of a stream are stored together, never more than 1000 offsets behind.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../../../test/delivery/harness.js';
import { itxSub, x } from '../../../test/delivery/payloads.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const NEVER = 'app/never';
const keys = (n: number) => Array.from({ length: n }, (_, i) => `never-${i}`);
const stored = (h: Harness) =>
  new Map(h.storage.exec<{ key: string; cursor: number }>(`SELECT key, cursor FROM subscription_runtime`).map((r) => [r.key, r.cursor]));

describe('passing over events no subscription matches', () => {
  it('ten non-matching subscriptions move past every event without a call; one that matches is delivered beside them', async () => {
    h = await createHarness();
    for (const key of keys(10)) await h.configure('/s', itxSub(key, { eventTypes: [NEVER] }));
    await h.configure('/s', itxSub('match', { eventTypes: ['app/x'] }));
    await h.append('/s', { type: 'app/other' }, { type: 'app/other' });
    for (const key of keys(10)) expect(h.sub('/s', key).acknowledgedOffset).toBe(h.head('/s'));
    const [matching] = await h.append('/s', { type: 'app/other' }, x(1), { type: NEVER, ephemeral: true });
    await h.caughtUp('/s', 'match');
    expect(h.itx.offsetsFor('match')).toEqual([[matching!.offset + 1]]);
    for (const key of keys(10)) {
      expect(h.sub('/s', key).acknowledgedOffset).toBe(h.head('/s'));
      expect(h.itx.callsFor(key)).toEqual([]);
    }
  });

  it('an event of a type one subscription names is delivered to it, and only it is left behind for the check', async () => {
    h = await createHarness();
    for (const key of keys(3)) await h.configure('/s', itxSub(key, { eventTypes: [NEVER] }));
    const [never] = await h.append('/s', { type: NEVER }, { type: 'app/other' });
    for (const key of keys(3)) await h.caughtUp('/s', key);
    for (const key of keys(3)) expect(h.itx.offsetsFor(key)).toEqual([[never!.offset]]);
  });

  it('a reconfigured filter that starts matching sees the events after it, and from the beginning all of them', async () => {
    h = await createHarness();
    await h.configure('/s', itxSub('k', { eventTypes: [NEVER] }));
    const early = await h.append('/s', x(1), x(2));
    expect(h.sub('/s', 'k').acknowledgedOffset).toBe(h.head('/s'));
    expect(h.itx.calls).toEqual([]);

    await h.configure('/s', itxSub('k', { eventTypes: ['app/x'] }));
    const [later] = await h.append('/s', x(3));
    await h.caughtUp('/s', 'k');
    expect(h.itx.offsetsFor('k').flat()).toEqual([later!.offset]);

    await h.configure('/s', itxSub('k', { eventTypes: ['app/x'], start: 'beginning' }));
    await h.append('/s', { type: 'app/other' });
    await h.caughtUp('/s', 'k');
    expect(h.itx.offsetsFor('k').flat()).toEqual([later!.offset, ...early.map((e) => e.offset), later!.offset]);

    // And back to a type nothing has: passed over again, from the new configuration on.
    await h.configure('/s', itxSub('k', { eventTypes: [NEVER] }));
    const calls = h.itx.calls.length;
    await h.append('/s', x(4));
    expect(h.sub('/s', 'k').acknowledgedOffset).toBe(h.head('/s'));
    expect(h.itx.calls).toHaveLength(calls);
  });

  it("stores a stream's quiet cursors together, each at most 1000 offsets behind what it passed", async () => {
    h = await createHarness();
    for (const key of keys(10)) await h.configure('/s', itxSub(key, { eventTypes: [NEVER] }));
    const configured = stored(h);
    // The ten rows were stored at ten different offsets, one configuration each.
    expect(new Set(configured.values()).size).toBe(10);
    let writes = 0;
    let previous = configured;
    for (let i = 0; i < 1100; i++) {
      await h.append('/s', { type: 'app/other' });
      const now = stored(h);
      const head = h.head('/s');
      for (const key of keys(10)) {
        expect(h.sub('/s', key).acknowledgedOffset).toBe(head);
        expect(head - now.get(key)!).toBeLessThanOrEqual(1000);
      }
      if ([...now].some(([key, cursor]) => previous.get(key) !== cursor)) {
        writes++;
        // Every row that moved in memory is stored with the one that was due.
        expect(new Set(now.values())).toEqual(new Set([head]));
      }
      previous = now;
    }
    expect(writes).toBe(1);
  });
});
