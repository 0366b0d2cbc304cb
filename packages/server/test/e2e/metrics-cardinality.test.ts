/**
 * End-to-end over real HTTP: the number of series /metrics answers does not grow with the number
 * of streams (protocol §15.2). The only family labelled by stream, the subscription lag gauge,
 * shows the 100 largest lags; every other family is labelled by enumerations and route templates.
 *
 * 10 000 streams are created through the service in one process (HTTP round trips would only make
 * it slow), 300 of them with a copy subscription that halts on a paused receiver, so that 300
 * subscriptions lag behind their source. Node host only: on the Worker host each stream's object
 * keeps its own delivery metrics (docs/cloudflare.md §4.2).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Api, EventInput } from '../helpers/http.js';
import { TEST_HOST, startTestServer, type TestServer } from '../helpers/server.js';
import { EventType, configured, copyTo, eventually, sampleOf, scrape } from '../helpers/subscriptions.js';

const STREAMS = 10_000;
const LAGGING = 300;
/** Series of a scrape, whatever the number of streams: the families' label sets plus 100 lags. */
const BOUND = 1_500;
const RECEIVER = '/card/paused';

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer({ retryBaseMs: 5, retryMaxMs: 20, maxDeliveryAttempts: 2, deliveryTimeoutMs: 5_000 });
  api = server.api;
});

afterAll(async () => {
  await server?.close();
});

/** Sample lines by family: the name before `{` or the space, histogram suffixes folded in. */
function seriesByFamily(text: string): Map<string, string[]> {
  const families = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)![0].replace(/_(bucket|sum|count)$/, '');
    const lines = families.get(name) ?? [];
    lines.push(line);
    families.set(name, lines);
  }
  return families;
}

const total = (families: Map<string, string[]>) => [...families.values()].reduce((n, lines) => n + lines.length, 0);

/** Appends to streams first…first+count-1 through the service, `parallel` at a time (they share group commits). */
async function createStreams(first: number, count: number, events: (i: number) => EventInput[], parallel = 500): Promise<void> {
  const { service } = server.server;
  for (let start = first; start < first + count; start += parallel) {
    const end = Math.min(start + parallel, first + count);
    // The service takes the contract's inputs; these are the same shapes the HTTP helpers send.
    await Promise.all(Array.from({ length: end - start }, (_, k) => service.append(null, `/card/s/${start + k}`, events(start + k) as Parameters<typeof service.append>[2])));
  }
}

const lagging = (): EventInput[] => [{ type: 'x' }, configured({ subscriptionKey: 'k', receiver: copyTo(RECEIVER, { start: 'beginning' }) })];
const plain = (): EventInput[] => [{ type: 'x' }];

/** The same requests before each scrape, so that the request series are the same set. */
async function sameRequests(): Promise<void> {
  await api.append('/card/http', { type: 'x' });
  expect((await api.request('GET', '/v1/streams/card/http:state')).status).toBe(200);
  expect((await api.request('GET', '/v1/streams?prefix=/card&limit=5')).status).toBe(200);
}

describe.skipIf(TEST_HOST === 'worker')('/metrics cardinality', () => {
  it(`stays under ${BOUND} series with ${STREAMS} streams and ${LAGGING} lagging subscriptions; only the lag gauge names streams, capped at 100`, async () => {
    await api.append(RECEIVER, { type: EventType.paused, payload: { reason: 'cardinality test' } });
    await createStreams(0, 3, lagging);
    await createStreams(3, 7, plain);
    await eventually(async () => sampleOf(await scrape(api), 'rivulet_subscriptions_halted') === 3, '3 halted subscriptions');
    await sameRequests();
    const few = seriesByFamily(await scrape(api));

    await createStreams(10, LAGGING - 3, lagging);
    await createStreams(LAGGING + 7, STREAMS - LAGGING - 7, plain);
    await eventually(async () => sampleOf(await scrape(api), 'rivulet_subscriptions_halted') === LAGGING, `${LAGGING} halted subscriptions`, 15_000);
    const listed = await api.request<{ streams: unknown[]; next?: string }>('GET', '/v1/streams?prefix=/card/s&limit=1');
    expect(listed.status).toBe(200);
    await sameRequests();
    const text = await scrape(api);
    const many = seriesByFamily(text);

    expect(few.get('rivulet_subscription_lag_events')).toHaveLength(3);
    expect(many.get('rivulet_subscription_lag_events')).toHaveLength(100);
    const labelSets = (ls: string[] | undefined) => (ls ?? []).map((l) => l.slice(0, l.lastIndexOf(' '))).sort();
    for (const [family, lines] of many) {
      if (family === 'rivulet_subscription_lag_events') continue;
      for (const line of lines) expect(line, family).not.toContain('/card/');
      // Values move; the label sets of Rivulet's own families stay the same. (The process
      // families' label sets are prom-client's: GC kinds and handle types, bounded, but one may
      // appear between two scrapes.)
      if (family.startsWith('rivulet_')) expect(labelSets(lines), family).toEqual(labelSets(few.get(family)));
    }
    const own = (families: Map<string, string[]>) => total(new Map([...families].filter(([family]) => family.startsWith('rivulet_'))));
    expect(own(many) - own(few)).toBe(97);
    expect(total(many)).toBeLessThan(BOUND);
  });
});
