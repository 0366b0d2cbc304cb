/**
 * A copy drain of several batches (protocol §12.3, §13.2): the sender reads each next batch while
 * the receiving stream syncs the one before (engine/delivery/sender.ts `copyAhead`). What is read
 * ahead is used only after the batch before it succeeded from where it ends; a condition that
 * throws, a failing or unavailable receiver still settle as when every batch is read after the one
 * before: every copy exactly once, in source order.
 */
import { EventType, type EventInput, type JsonObject, type SubscriptionConfiguredPayload } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './harness.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

const copyWhere = (condition: string): SubscriptionConfiguredPayload => ({
  subscriptionKey: 'k',
  filter: { eventTypes: ['app/x'], jsonataCondition: condition },
  receiver: { action: 'copy-to-stream', receivingStreamPath: '/r', delivery: { start: 'beginning', onFailingEvent: 'halt' } },
});

async function appendMany(count: number, payload: (i: number) => JsonObject): Promise<void> {
  for (let first = 0; first < count; first += 500) {
    const events: EventInput[] = Array.from({ length: Math.min(500, count - first) }, (_, i) => ({ type: 'app/x', payload: payload(first + i) }));
    await h.append('/a', ...events);
  }
}

const copiedNs = () => h.events('/r').filter((e) => e.type === 'app/x').map((e) => (e.payload as { n: number }).n);

describe('a copy drain of several batches, each read while the one before syncs', () => {
  it('copies every matching event once, in order, across several batches (COPY_BATCH_EVENTS each)', async () => {
    h = await createHarness();
    await appendMany(3500, (n) => ({ n }));
    await h.configure('/a', copyWhere('payload.n % 3 != 1'));
    await h.caughtUp('/a', 'k', 20_000);
    const expected = Array.from({ length: 3500 }, (_, n) => n).filter((n) => n % 3 !== 1);
    expect(copiedNs()).toEqual(expected);
    expect(h.core('/r').subscriptions.inbound.bySourcePath['/a']?.k?.numEventsReceived).toBe(expected.length);
  });

  it('a condition that throws in a later batch: the batches before it copy once, then it fails in order', async () => {
    h = await createHarness({ config: { maxDeliveryAttempts: 2 } });
    // n 2600 has no number `s`: the condition throws there, inside the third batch.
    await appendMany(3000, (n) => (n === 2600 ? { n, s: 'bad' } : { n, s: String(n + 1) }));
    await h.configure('/a', copyWhere('$number(payload.s) > 0'));
    const halt = await h.halted('/a', 'k', 20_000);
    expect(copiedNs()).toEqual(Array.from({ length: 2600 }, (_, n) => n));
    const failing = h.events('/a').find((e) => (e.payload as { n?: number } | undefined)?.n === 2600)!;
    expect(halt).toMatchObject({ reason: 'delivery-failed', afterOffset: failing.offset - 1 });
    expect(h.sub('/a', 'k').acknowledgedOffset).toBe(failing.offset - 1);
    expect(h.eventsOfType('/a', EventType.errorOccurred)).toHaveLength(1);
  });
});
