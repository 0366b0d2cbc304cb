/**
 * One count, three readers (issue 17, item 6): the listing's halted subscriptions
 * (`GET /v1/subscriptions?status=halted`, protocol §21), the header badge of the web UI, and
 * `/metrics` (`rivulet_subscriptions_halted` now, `rivulet_subscription_halts_total` since start,
 * protocol §15.2) agree after two subscriptions halt and one of them is resumed. Its own server, so
 * no other scenario's halts are counted.
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { uiSuite } from './ui-page.js';

const t = uiSuite();
const POLL = { timeout: 10_000 };

/** Every halted row of the listing over HTTP, following `next`. */
async function listedHalted(): Promise<string[]> {
  const keys: string[] = [];
  let after: string | undefined;
  do {
    const url = new URL('/v1/subscriptions', t.server.url);
    url.searchParams.set('status', 'halted');
    if (after) url.searchParams.set('after', after);
    const response = await fetch(url);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { subscriptions: { sourcePath: string; subscriptionKey: string; status: string }[]; next?: string };
    for (const row of body.subscriptions) {
      expect(row.status).toBe('halted');
      keys.push(`${row.sourcePath} ${row.subscriptionKey}`);
    }
    after = body.next;
  } while (after !== undefined);
  return keys.sort();
}

async function metrics(): Promise<{ gauge: number; haltsTotal: number }> {
  const response = await fetch(new URL('/metrics', t.server.url));
  expect(response.status).toBe(200);
  const text = await response.text();
  const gauge = /^rivulet_subscriptions_halted (\d+)$/m.exec(text);
  expect(gauge, 'rivulet_subscriptions_halted on /metrics').not.toBeNull();
  const totals = [...text.matchAll(/^rivulet_subscription_halts_total\{action="[^"]+"\} (\d+)$/gm)];
  expect(totals.length, 'rivulet_subscription_halts_total series').toBeGreaterThan(0);
  return { gauge: Number(gauge![1]), haltsTotal: totals.reduce((n, m) => n + Number(m[1]), 0) };
}

/** The badge's number, 0 while it is hidden. */
async function badge(p: Page): Promise<number> {
  const element = p.getByTestId('halted-count');
  if (await element.isHidden()) return 0;
  const match = /^(\d+) halted$/.exec((await element.textContent()) ?? '');
  expect(match, 'the badge reads "N halted"').not.toBeNull();
  return Number(match![1]);
}

async function readAll(p: Page): Promise<{ listed: number; badge: number; gauge: number; haltsTotal: number }> {
  const [listed, shown, m] = await Promise.all([listedHalted(), badge(p), metrics()]);
  return { listed: listed.length, badge: shown, gauge: m.gauge, haltsTotal: m.haltsTotal };
}

describe('halted count', () => {
  it('is the same in the listing, the header badge and /metrics after two halts and one resume', async () => {
    const p = await t.open('');
    await p.locator('.server-status[data-state="ok"]').waitFor();
    expect(await readAll(p)).toEqual({ listed: 0, badge: 0, gauge: 0, haltsTotal: 0 });

    // Two receivers paused: every copy is refused (unavailable) until each subscription halts.
    for (const name of ['one', 'two']) {
      await t.client.append(`/count/${name}-copy`, { type: 'events.iterate.com/stream/paused', payload: { reason: 'test' } });
      await t.client.append(`/count/${name}`, { type: 'job/run', payload: { name } });
      await t.client.subscribeToEventsFrom(`/count/${name}-copy`, { sourceStreamPath: `/count/${name}`, subscriptionKey: 'copy', delivery: { start: 'beginning' } });
    }
    await expect.poll(() => listedHalted(), POLL).toEqual(['/count/one copy', '/count/two copy']);
    await expect.poll(() => readAll(p), POLL).toEqual({ listed: 2, badge: 2, gauge: 2, haltsTotal: 2 });

    // Unpause one receiver and resume its subscription: it delivers, and only one stays halted.
    await t.client.append('/count/one-copy', { type: 'events.iterate.com/stream/resumed' });
    const { event } = await t.client.resumeSubscription('/count/one', { subscriptionKey: 'copy' });
    expect(event?.type).toBe('events.iterate.com/stream/subscription-delivery-resumed');
    await expect.poll(async () => (await t.client.getEvents('/count/one-copy', { eventTypes: ['job/run'] })).events.length, POLL).toBe(1);
    expect(await listedHalted()).toEqual(['/count/two copy']);
    // The gauge counts what is halted now; the counter every halt since start.
    await expect.poll(() => readAll(p), POLL).toEqual({ listed: 1, badge: 1, gauge: 1, haltsTotal: 2 });
    await t.shot(p, 'halted-count.png');
  });
});
