/**
 * End-to-end over real HTTP: chains of copy subscriptions, the cycle and hop guards and their drop
 * audits (protocol §13.2–§13.4).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Limits, type CommittedEvent } from '@rivulet/contract';
import type { Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import {
  EventType,
  allEvents,
  caughtUp,
  copiesOn,
  eventually,
  expectedHop,
  lastHop,
  lifetimeOf,
  subscribe,
} from '../helpers/subscriptions.js';

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer({ retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 3, deliveryTimeoutMs: 5_000 });
  api = server.api;
});

afterAll(async () => {
  await server?.close();
});

/**
 * Links streams[i] → streams[i+1] with wildcard "now" copy subscriptions (configured on the source,
 * so no configure event is ever copied). Answers the key and generation of each link.
 */
async function chain(streams: string[], keyOf: (i: number) => string): Promise<{ key: string; gen: number }[]> {
  const links: { key: string; gen: number }[] = [];
  for (let i = 0; i + 1 < streams.length; i++) {
    const answer = await subscribe(api, streams[i + 1]!, { sourceStreamPath: streams[i]!, subscriptionKey: keyOf(i) });
    links.push({ key: answer.subscriptionKey, gen: answer.subscriptionConfiguredEvent.offset });
  }
  return links;
}

const audits = (events: CommittedEvent[]) => events.filter((e) => e.type === EventType.errorOccurred);

describe('chains of copies', () => {
  it('a chain of seven streams keeps every hop in order; closing the loop drops the event as a cycle with one audit', async () => {
    const streams = Array.from({ length: 7 }, (_, i) => `/s26/c${i + 1}`);
    const links = await chain(streams, (i) => `next-${i + 1}`);
    // The six sources exist (each configure created its source); the seventh appears with its first copy.
    const lifetimes = [];
    for (const s of streams.slice(0, 6)) lifetimes.push(await lifetimeOf(api, s));
    expect(await api.state(streams[6]!)).toEqual({ core: null, runtime: null });

    const [original] = await api.append(streams[0]!, { type: 'travel', payload: { trip: 1 }, metadata: { m: 'x' } });
    const last = await eventually(async () => (await copiesOn(api, streams[6]!))[0], 'the copy to reach the seventh stream');
    // Every hop in order: the first source, then each relay with its own offset and the original type.
    const hops = last.source!.copiedFrom;
    expect(hops.map((h) => h.path)).toEqual(streams.slice(0, 6));
    expect(hops[0]).toEqual(expectedHop(original!, { ...lifetimes[0]!, subscriptionKey: links[0]!.key, cursorChangedAtSourceOffset: links[0]!.gen }));
    for (let i = 1; i < 6; i++) {
      const relay = (await copiesOn(api, streams[i]!))[0]!;
      expect(relay.source!.copiedFrom).toEqual(hops.slice(0, i));
      expect(hops[i]).toEqual(expectedHop(relay, { ...lifetimes[i]!, subscriptionKey: links[i]!.key, cursorChangedAtSourceOffset: links[i]!.gen }));
      expect(hops[i]!.type).toBe('travel');
    }
    expect({ type: last.type, payload: last.payload, metadata: last.metadata }).toEqual({ type: 'travel', payload: { trip: 1 }, metadata: { m: 'x' } });

    // Close the loop: the first stream receives from the seventh.
    await subscribe(api, streams[0]!, { sourceStreamPath: streams[6]!, subscriptionKey: 'close' });
    const [second] = await api.append(streams[0]!, { type: 'travel', payload: { trip: 2 } });
    const audit = await eventually(async () => audits(await allEvents(api, streams[0]!))[0], 'the cycle audit on the first stream');
    const arriving = (await copiesOn(api, streams[6]!)).find((c) => c.payload?.trip === 2)!;
    expect(audit.payload).toEqual({
      message: `dropped 1 copied event(s) from "${streams[6]}" subscription "close" (source offsets ${arriving.offset}-${arriving.offset}): cycle`,
      drop: { reason: 'cycle', sourcePath: streams[6], subscriptionKey: 'close', count: 1, firstOffset: arriving.offset, lastOffset: arriving.offset },
    });
    expect(audit.idempotencyKey).toMatch(/^rivulet-internal\/drop:/);
    expect(audit.source).toBeUndefined();

    // The closing subscription's cursor passed the dropped event; every link has caught up past the audit.
    expect((await caughtUp(api, streams[6]!, 'close')).acknowledgedOffset).toBe(arriving.offset);
    for (let i = 0; i < 6; i++) await caughtUp(api, streams[i]!, links[i]!.key);
    const firstRow = await caughtUp(api, streams[0]!, links[0]!.key);
    expect(firstRow.acknowledgedOffset).toBeGreaterThanOrEqual(audit.offset);

    // Nothing duplicated, nothing copied back, and the audit line never went onward.
    const firstLog = await allEvents(api, streams[0]!);
    expect(firstLog.filter((e) => e.type === 'travel').map((e) => [e.offset, e.source])).toEqual([
      [original!.offset, undefined],
      [second!.offset, undefined],
    ]);
    expect(audits(firstLog)).toHaveLength(1);
    for (let i = 1; i < 7; i++) {
      const log = await allEvents(api, streams[i]!);
      expect(log.filter((e) => e.type === 'travel').map((e) => e.payload)).toEqual([{ trip: 1 }, { trip: 2 }]);
      expect(audits(log), `an audit line reached ${streams[i]}`).toEqual([]);
    }
  });

  it('a reciprocal wildcard pair drops the returning copy once and cannot manufacture audits', async () => {
    const a = '/s26/pair-a';
    const b = '/s26/pair-b';
    await subscribe(api, b, { sourceStreamPath: a, subscriptionKey: 'a-to-b' });
    await subscribe(api, a, { sourceStreamPath: b, subscriptionKey: 'b-to-a' });
    const [event] = await api.append(a, { type: 'ping' });
    await eventually(async () => audits(await allEvents(api, a)).length === 1, 'the cycle audit on a');
    // Both directions are settled: a's audit was scanned by a→b and excluded, b's copy was dropped on a.
    const ab = await caughtUp(api, a, 'a-to-b');
    await caughtUp(api, b, 'b-to-a');
    expect(ab.acknowledgedOffset).toBe((await allEvents(api, a)).length);
    const logA = await allEvents(api, a);
    const logB = await allEvents(api, b);
    expect(logA.filter((e) => e.type === 'ping').map((e) => e.offset)).toEqual([event!.offset]);
    expect(logB.filter((e) => e.type === 'ping').map((e) => lastHop(e).offset)).toEqual([event!.offset]);
    expect(audits(logA)).toHaveLength(1);
    expect(audits(logB)).toEqual([]);
    expect((audits(logA)[0]!.payload as { drop: { reason: string } }).drop.reason).toBe('cycle');
  });

  it('a copy whose chain already holds 32 hops is dropped as hop-limit; a stored chain never exceeds 32', async () => {
    expect(Limits.maxHops).toBe(32);
    // /s26/h0 → … → /s26/h33: the copy on h32 carries 32 hops; the next link must drop it.
    const streams = Array.from({ length: 34 }, (_, i) => `/s26/h${i}`);
    const links = await chain(streams, (i) => `hop-${i}`);
    await api.append(streams[0]!, { type: 'far', payload: { go: true } });
    const tail = streams[33]!;
    const audit = await eventually(async () => audits(await allEvents(api, tail))[0], `the hop-limit audit on ${tail}`, 15_000);

    const at32 = (await copiesOn(api, streams[32]!)).find((c) => c.type === 'far')!;
    expect(at32.source!.copiedFrom).toHaveLength(32);
    expect(at32.source!.copiedFrom.map((h) => h.path)).toEqual(streams.slice(0, 32));
    expect(audit.payload).toEqual({
      message: `dropped 1 copied event(s) from "${streams[32]}" subscription "hop-32" (source offsets ${at32.offset}-${at32.offset}): hop-limit`,
      drop: { reason: 'hop-limit', sourcePath: streams[32], subscriptionKey: 'hop-32', count: 1, firstOffset: at32.offset, lastOffset: at32.offset },
    });
    // The last stream holds its created event and the audit, nothing else; the link passed the event.
    expect((await allEvents(api, tail)).map((e) => e.type)).toEqual([EventType.created, EventType.errorOccurred]);
    expect((await caughtUp(api, streams[32]!, links[32]!.key)).acknowledgedOffset).toBe(at32.offset);
    let longest = 0;
    for (const s of streams) {
      for (const copy of await copiesOn(api, s)) longest = Math.max(longest, copy.source!.copiedFrom.length);
    }
    expect(longest).toBe(32);
  }, 30_000);
});
