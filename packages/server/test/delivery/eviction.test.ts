/**
 * The registry evicts idle actors beyond `maxActors` (engine/registry.ts), also those of source
 * streams with subscriptions, as long as their delivery needs nothing of them (Sender.busy): their
 * progress is persisted when they go, and the stream's next commit brings them back with a new
 * sender. A source with a call in flight, a retry armed or an owed event stays in memory.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { StreamActor } from '../../src/engine/actor.js';
import { resumeSubscription } from '../../src/engine/commands.js';
import { createHarness, ok, settle, unavailable, waitFor, type Harness } from './harness.js';
import { copySub, itxSub, x } from './payloads.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

const inMemory = (actor: StreamActor) => [...h.registry.loaded()].includes(actor);

describe('eviction of source streams', () => {
  it('a caught-up source is evicted with its progress stored, and its next append loads it and delivers once', async () => {
    h = await createHarness({ maxActors: 2 });
    await h.configure('/s1', copySub('k', '/r1'));
    await h.append('/s1', x(1), x(2));
    await h.caughtUp('/s1', 'k');
    const first = h.actor('/s1');
    const head = first.durableHead;

    // Other streams push it out of the registry.
    for (const path of ['/a', '/b', '/c']) await h.append(path, x(0));
    expect(inMemory(first)).toBe(false);

    // A fresh actor reads the progress that was stored when it left (no redelivery owed).
    const again = h.actor('/s1');
    expect(again).not.toBe(first);
    expect(h.sub('/s1', 'k').acknowledgedOffset).toBe(head);

    await h.append('/s1', x(3));
    await h.caughtUp('/s1', 'k');
    const copies = h.eventsOfType('/r1', 'app/x').map((e) => (e.payload as { n: number }).n);
    expect(copies).toEqual([1, 2, 3]);
  });

  it('a source that owes a retry stays in memory until it delivered, then may go', async () => {
    // A backoff long enough that the retry cannot have happened before the check below, however
    // slow the machine (with the harness's 10 ms it sometimes had: nothing was owed any more).
    h = await createHarness({ maxActors: 1, config: { retryBaseMs: 1_000, retryMaxMs: 1_000 } });
    let calls = 0;
    h.itx.script = () => (++calls === 1 ? unavailable() : ok());
    await h.configure('/s2', itxSub('k'));
    await h.append('/s2', x(1));
    await waitFor(() => h.sub('/s2', 'k').nextAttemptAt !== null, 'the first attempt recorded as failed');
    const source = h.actor('/s2');
    // Backing off: the sender's retry timer needs this very actor.
    await h.append('/other', x(0));
    expect(calls).toBe(1);
    expect(inMemory(source)).toBe(true);

    await waitFor(() => calls >= 2, 'the retry', 5_000);
    await h.caughtUp('/s2', 'k');
    const event = h.eventsOfType('/s2', 'app/x')[0]!.offset;
    expect(h.itx.offsetsFor('k')).toEqual([[event], [event]]);
    // Caught up and nothing armed: the next stream touched evicts it.
    await settle();
    await h.append('/other-2', x(0));
    expect(inMemory(source)).toBe(false);
  });

  it('a source with a call in flight stays in memory', async () => {
    h = await createHarness({ maxActors: 1 });
    h.itx.script = () => 'hang';
    await h.configure('/s3', itxSub('k'));
    await h.append('/s3', x(1));
    await waitFor(() => h.itx.calls.length === 1, 'the call');
    const source = h.actor('/s3');
    await h.append('/other', x(0));
    expect(inMemory(source)).toBe(true);
    h.itx.releaseAll(ok());
    await h.caughtUp('/s3', 'k');
  });

  it('a halted subscription does not keep its source in memory; resuming it after eviction delivers', async () => {
    h = await createHarness({ maxActors: 1, config: { maxDeliveryAttempts: 2 } });
    let failingNow = true;
    h.itx.script = () => (failingNow ? { ok: false, kind: 'failing', error: 'no' } : ok());
    await h.configure('/s4', itxSub('k'));
    await h.append('/s4', x(1));
    await h.halted('/s4', 'k');
    const source = h.actor('/s4');
    await settle();
    await h.append('/other', x(0));
    expect(inMemory(source)).toBe(false);

    failingNow = false;
    await resumeSubscription(h.actor('/s4'), { subscriptionKey: 'k' });
    await h.caughtUp('/s4', 'k');
    // Redelivery starts again at the event it halted on.
    expect(h.itx.callsFor('k').at(-1)!.offsets[0]).toBe(h.eventsOfType('/s4', 'app/x')[0]!.offset);
  });

  it('with an idle sweep, a quiet source leaves memory with its progress stored, whatever the number of actors', async () => {
    h = await createHarness({ actorIdleSweepMs: 20 });
    await h.configure('/s5', copySub('k', '/r5'));
    await h.append('/s5', x(1));
    await h.caughtUp('/s5', 'k');
    const first = h.actor('/s5');
    const head = first.durableHead;
    // Far below maxActors: only the sweep can drop it, one to two periods after its last use.
    await waitFor(() => !inMemory(first), 'the quiet source swept out', 5_000);
    const again = h.actor('/s5');
    expect(again).not.toBe(first);
    expect(h.sub('/s5', 'k').acknowledgedOffset).toBe(head);
    await h.append('/s5', x(2));
    await h.caughtUp('/s5', 'k');
    expect(h.eventsOfType('/r5', 'app/x').map((e) => (e.payload as { n: number }).n)).toEqual([1, 2]);
  });

  it('with an idle sweep, a source that owes a retry stays until it delivered', async () => {
    h = await createHarness({ actorIdleSweepMs: 20, config: { retryBaseMs: 1_000, retryMaxMs: 1_000 } });
    let calls = 0;
    h.itx.script = () => (++calls === 1 ? unavailable() : ok());
    await h.configure('/s6', itxSub('k'));
    await h.append('/s6', x(1));
    await waitFor(() => h.sub('/s6', 'k').nextAttemptAt !== null, 'the first attempt recorded as failed');
    const source = h.actor('/s6');
    // Several sweep periods pass while it backs off: it is busy, so it stays.
    await settle(200);
    expect(calls).toBe(1);
    expect(inMemory(source)).toBe(true);
    await waitFor(() => calls >= 2, 'the retry', 5_000);
    await h.caughtUp('/s6', 'k');
    await waitFor(() => !inMemory(source), 'the delivered source swept out', 5_000);
  });
});

