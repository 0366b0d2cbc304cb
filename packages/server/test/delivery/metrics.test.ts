/**
 * The delivery engine's metrics (protocol §15.2), for the actions the end-to-end tests cannot
 * reach cheaply: itx-call and processor-wake against scripted receivers (harness.ts,
 * fake-processor-host.ts). Halts and skips are counters by action that only go up; the halted
 * gauge follows the stored rows; latency is observed once per acknowledged delivery.
 */
import type { ItxExpression, SubscriptionConfiguredPayload } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { resumeSubscription } from '../../src/engine/commands.js';
import { createHarness, failing, ok, unavailable, waitFor, type Harness, type HarnessOptions } from './harness.js';
import { FakeProcessorHost } from './fake-processor-host.js';
import { itxSub, x } from './payloads.js';

let h: Harness;
let host: FakeProcessorHost | undefined;

async function setup(options: HarnessOptions = {}): Promise<Harness> {
  h = await createHarness(options);
  return h;
}

afterEach(async () => {
  host?.breakAll();
  host = undefined;
  h?.itx.releaseAll();
  await h?.close();
});

const halts = (action: string) => h.metrics.subscriptionHalts.get({ action });
const skips = (action: string) => h.metrics.subscriptionSkips.get({ action });
const latency = (action: string) => h.metrics.deliveryLatency.series.get(`action="${action}"`);
const haltedGauge = () => h.metrics.subscriptionsHalted.collect!()[0]!.value;

describe('itx-call', () => {
  it('a halt counts 1 for its action and none for the others; the gauge goes back to 0 on resume, the counter stays', async () => {
    await setup({ config: { maxDeliveryAttempts: 3 } });
    h.itx.script = () => unavailable();
    await h.configure('/s', itxSub('k'));
    await h.append('/s', x(1));
    await h.halted('/s', 'k');
    expect(halts('itx-call')).toBe(1);
    for (const other of ['copy-to-stream', 'webhook-post', 'processor-wake']) expect(halts(other)).toBe(0);
    expect(haltedGauge()).toBe(1);
    expect(skips('itx-call')).toBe(0);
    expect(latency('itx-call')).toBeUndefined();

    h.itx.script = () => ok();
    await resumeSubscription(h.actor('/s'), { subscriptionKey: 'k' });
    await h.caughtUp('/s', 'k');
    expect(haltedGauge()).toBe(0);
    expect(halts('itx-call')).toBe(1);
    expect(latency('itx-call')?.count).toBe(1);
  });

  it('a skip counts once per skipped event, and each acknowledged batch adds one latency observation in seconds', async () => {
    await setup();
    h.itx.script = (call) => (call.events.some((e) => (e.event.payload as { n?: number }).n === 2) ? failing() : ok());
    await h.configure('/s', itxSub('k', { onFailingEvent: 'skip' }));
    await h.append('/s', x(1));
    await h.caughtUp('/s', 'k');
    expect(latency('itx-call')?.count).toBe(1);
    await h.append('/s', x(2));
    await h.append('/s', x(3));
    await h.caughtUp('/s', 'k');
    expect(skips('itx-call')).toBe(1);
    expect(halts('itx-call')).toBe(0);
    const observed = latency('itx-call')!;
    const acknowledged = h.itx.calls.filter((c) => !c.events.some((e) => (e.event.payload as { n?: number }).n === 2)).length;
    expect(observed.count).toBe(acknowledged);
    // Seconds: in-process deliveries of events just appended are acknowledged within a second.
    expect(observed.sum / observed.count).toBeLessThan(1);
  });
});

describe('processor-wake', () => {
  const EXPRESSION: ItxExpression = ['processors', ['get', 'h'], 'wakeStreamProcessor'];
  const wakeSub = (key: string): SubscriptionConfiguredPayload => ({ subscriptionKey: key, receiver: { action: 'processor-wake', expression: EXPRESSION } });

  it('every folded event is one latency observation; a host that stays away halts it, counted under processor-wake', async () => {
    host = new FakeProcessorHost();
    await setup({ processorWaker: host, config: { processorIdleMs: 60_000, deliveryTimeoutMs: 2_000, maxDeliveryAttempts: 2 } });
    await h.configure('/s', wakeSub('p'));
    await h.append('/s', x(1), x(2));
    await h.caughtUp('/s', 'p');
    expect(latency('processor-wake')?.count).toBe(host.folded.length);
    expect(host.folded.length).toBeGreaterThanOrEqual(2);

    host.wakeScript = () => ({ ok: false, kind: 'unavailable', error: 'no processor "h" is connected in this project' });
    host.breakAll();
    await waitFor(() => Object.keys(h.runtime('/s').connections).length === 0, 'the hosted connection to end');
    await h.append('/s', x(3));
    await h.halted('/s', 'p');
    expect(halts('processor-wake')).toBe(1);
    expect(halts('itx-call')).toBe(0);
    expect(haltedGauge()).toBe(1);
  });
});
