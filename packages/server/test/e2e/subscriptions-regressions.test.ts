/**
 * End-to-end regressions of subscriptions: each pins a deviation from protocol §9–§14
 * found while writing test/e2e/subscriptions-*.test.ts, fixed since.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import type { Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { EventType, allEvents, halted, subscribe } from '../helpers/subscriptions.js';

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer({ retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 3, deliveryTimeoutMs: 5_000 });
  api = server.api;
});

afterAll(async () => {
  // close() fails when the server logged an internal error (the second test's symptom).
  await server?.close();
});

/**
 * Fixed: the condition audit's `message` embeds the whole, uncut JSONata error text.
 *
 * packages/server/src/engine/delivery/sender.ts (deliverOnce, the `condition-error` branch):
 *   message: `subscription "${key}" filter.jsonataCondition threw on offset ${…}: ${collected.error}`,
 * cuts `error` (cut(collected.error)) but not the text inside `message`. Protocol §12.3: error
 * text the engine writes into an event is cut at 4096 characters. With a 5000-character error the
 * audit's message is 5060 characters; with an error larger than an event (1 MiB) the audit cannot
 * be appended at all (PAYLOAD_TOO_LARGE, logged as an internal error on every attempt), so the one
 * error-occurred audit of protocol §12.3 is missing. Fix: use the cut text in the message too (and
 * cut the message as a whole).
 */
describe('BUG: the condition audit message carries the uncut error', () => {
  const quiet = () => {
    const spy = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    onTestFinished(() => spy.mockRestore());
  };

  it('a 5000-character error: the audit persists at most 4096 characters of it', async () => {
    quiet();
    const src = '/pending/long-src';
    await subscribe(api, '/pending/long-recv', {
      sourceStreamPath: src,
      subscriptionKey: 'long',
      filter: { jsonataCondition: 'payload.bad ? $error($pad("", 5000, "x")) : true' },
    });
    await api.append(src, { type: 'job', payload: { bad: true } });
    await halted(api, src, 'long');
    const audits = (await allEvents(api, src)).filter((e) => e.type === EventType.errorOccurred);
    expect(audits).toHaveLength(1);
    const { message, error } = audits[0]!.payload as { message: string; error: string };
    expect(error.length).toBeLessThanOrEqual(4096);
    // Actual: the message holds all 5000 "x" (5060 characters in total).
    expect(/x+/.exec(message)![0].length).toBeLessThanOrEqual(4096);
  });

  it('an error larger than an event: the one audit is still appended and nothing is logged as internal', async () => {
    quiet();
    const src = '/pending/huge-src';
    await subscribe(api, '/pending/huge-recv', {
      sourceStreamPath: src,
      subscriptionKey: 'huge',
      filter: { jsonataCondition: 'payload.bad ? $error($pad("", 1100000, "x")) : true' },
    });
    const [, bad] = await api.append(src, [{ type: 'job' }, { type: 'job', payload: { bad: true } }]);
    await halted(api, src, 'huge');
    const audits = (await allEvents(api, src)).filter((e) => e.type === EventType.errorOccurred);
    // Actual: no audit at all (the append was refused: "an event is 1104402 bytes as JSON; the limit
    // is 1048576 bytes"), and server.internalErrors holds "could not append the condition audit" ×3.
    expect(audits.map((a) => (a.payload as { offset: number }).offset)).toEqual([bad!.offset]);
    expect(server.internalErrors).toEqual([]);
  });
});
