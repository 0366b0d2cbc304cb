/**
 * The web UI in a real browser (README "Web UI"): streams, their feed, live connections, the
 * composer, paging and tokens. Debian's Chromium driven by playwright-core,
 * against a real server started in-process on a fresh data folder that serves the built UI
 * (packages/ui/dist, built by `npm run build`, which `npm test` runs first); browser.ts starts both.
 * Every scenario waits for elements and conditions (Playwright's auto-waiting, expect.poll), never
 * for fixed times, and fails on any console error or uncaught page error other than the failed
 * requests it provokes on purpose. Screenshots land in test-output/ui/ at the repository root.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { connect, createClient, watch } from '@rivulet/client';
import { startNodeServer } from '@rivulet/server/node';
import { UI_DIR } from './browser.js';
import { uiSuite } from './ui-page.js';

const t = uiSuite();
const { open, newPage, shot } = t;
const row = (p: Page, offset: number) => p.locator(`[data-testid="feed"] li[data-offset="${offset}"]`);

describe('web UI', () => {
  it('opens a stream from the tree and follows appends live, in either order, with a type filter', async () => {
    await t.client.append('/shop/orders', [
      { type: 'shop.example/order-created', payload: { id: 7, total: 42 } },
      { type: 'shop.example/order-paid', payload: { id: 7 } },
    ]);
    await t.client.append('/shop/invoices', { type: 'shop.example/invoice-sent', payload: { id: 1 } });
    const p = await open();

    // The overview lists the streams; the tree too, and its search narrows it down.
    await p.getByRole('heading', { name: 'Streams' }).waitFor();
    await p.getByRole('main').getByRole('link', { name: '/shop/invoices' }).waitFor();
    await shot(p, 'overview.png');
    const tree = p.getByTestId('stream-tree');
    await tree.locator('a[data-path="/shop/invoices"]').waitFor();
    await p.getByRole('searchbox', { name: 'Streams' }).fill('orders');
    await expect.poll(() => tree.locator('a[data-path="/shop/invoices"]').count()).toBe(0);
    await tree.locator('a[data-path="/shop/orders"]').click();

    // The latest page, then live.
    await expect.poll(() => p.getByTestId('stream-title').textContent()).toBe('/shop/orders');
    await row(p, 3).waitFor();
    await p.locator('[data-testid="feed-status"][data-state="live"]').waitFor();
    await expect.poll(() => p.getByTestId('vital-head').textContent()).toBe('3');
    await expect.poll(() => p.getByTestId('vital-events').textContent()).toBe('3');
    await expect.poll(() => p.getByTestId('vital-paused').textContent()).toBe('accepting appends');

    await t.client.append('/shop/orders', { type: 'shop.example/order-shipped', payload: { id: 7, carrier: 'post' } });
    await t.client.append('/shop/orders', { type: 'shop.example/cursor-moved', payload: { x: 1 }, ephemeral: true });
    await row(p, 4).waitFor();
    await row(p, 5).locator('.badge-ephemeral').waitFor();
    await expect.poll(() => p.getByTestId('vital-head').textContent()).toBe('5');

    // Newest first (the default in a fresh browser; the choice is remembered); the toggle flips it.
    if ((await p.getByTestId('feed').getAttribute('data-order')) !== 'newest') await p.getByTestId('feed-order').click();
    await expect.poll(() => p.locator('[data-testid="feed"] li').first().getAttribute('data-offset')).toBe('5');
    await p.getByTestId('feed-order').click();
    await expect.poll(() => p.getByTestId('feed').getAttribute('data-order')).toBe('oldest');
    await expect.poll(() => p.locator('[data-testid="feed"] li').first().getAttribute('data-offset')).toBe('1');

    // JSON on click.
    await row(p, 4).getByRole('button').click();
    const json = row(p, 4).getByTestId('event-json');
    await expect.poll(() => json.textContent()).toContain('"carrier": "post"');
    expect(await row(p, 4).getByRole('button').getAttribute('aria-expanded')).toBe('true');

    // Type filter.
    await p.getByLabel('Filter events by type').fill('order-paid');
    await expect.poll(() => p.locator('[data-testid="feed"] li:not([hidden])').count()).toBe(1);
    await expect.poll(() => row(p, 3).isVisible()).toBe(true);
    await p.getByLabel('Filter events by type').fill('');
    await expect.poll(() => p.locator('[data-testid="feed"] li:not([hidden])').count()).toBe(5);

    // No connections yet, and the throughput chart has samples.
    await p.getByText('No live connections.').waitFor();
    await expect.poll(() => p.locator('polyline.spark-appends').getAttribute('points')).not.toBe('');
    await shot(p, 'stream-feed.png');
  });

  it('lists a live connection with its counters while it is open, and drops it when it closes', async () => {
    await t.client.append('/watched/a', { type: 'test/seed' });
    const p = await open('#/watched/a');
    await p.getByText('No live connections.').waitFor();
    const itx = await connect(t.server.url, { reconnect: false });
    try {
      const seen: number[] = [];
      const w = watch(itx, '/watched/a', { connectionKey: 'ui-watch', replayAfterOffset: 0 }, (batch) => {
        for (const e of batch.events) seen.push(e.offset);
      });
      await w.ready;
      const [live] = await t.client.append('/watched/a', { type: 'test/live', payload: { n: 1 } });
      await expect.poll(() => seen.includes(live!.offset)).toBe(true);
      const table = p.getByTestId('connections');
      const entry = table.locator('tr', { hasText: 'ui-watch' });
      await entry.waitFor();
      await expect.poll(() => entry.textContent()).toContain('live');
      // The replay (stream/created and the seed), then the live event; its own opened fact is not sent.
      const cells = async () => (await entry.locator('td').allTextContents()).map((t) => t.trim());
      const header = (await table.locator('th').allTextContents()).map((t) => t.trim());
      await expect.poll(async () => Number((await cells())[header.indexOf('eventsSent')])).toBe(3);
      await expect.poll(async () => Number((await cells())[header.indexOf('lag')])).toBe(0);
      await shot(p, 'live-connection.png');
      await w.close();
      await p.getByText('No live connections.').waitFor();
    } finally {
      itx.close();
    }
  });

  it('appends through the composer and shows the server’s error inline when it is rejected', async () => {
    await t.client.append('/composer/a', { type: 'test/seed' });
    const p = await open('#/composer/a');
    t.expectStatuses(403, 409);
    await row(p, 2).waitFor();
    await p.locator('[data-testid="feed-status"][data-state="live"]').waitFor();

    await p.getByLabel('Type', { exact: true }).fill('shop.example/order-created');
    await p.getByLabel(/^Payload/).fill('{"id": 8}');
    await p.getByLabel('Idempotency key').fill('order-8');
    await p.getByRole('button', { name: 'Append', exact: true }).click();
    await expect.poll(() => p.getByTestId('composer-ok').textContent()).toBe('Appended at offset 3.');
    await row(p, 3).waitFor();
    const stored = await t.client.getEvents('/composer/a', { afterOffset: 2 });
    expect(stored.events.map((e) => [e.type, e.payload, e.idempotencyKey])).toEqual([['shop.example/order-created', { id: 8 }, 'order-8']]);

    // The same idempotency key with another payload: CONFLICT, shown inline.
    await p.getByLabel(/^Payload/).fill('{"id": 9}');
    await p.getByRole('button', { name: 'Append', exact: true }).click();
    const error = p.getByTestId('composer-error');
    await expect.poll(() => error.locator('.error-code').textContent()).toBe('CONFLICT');
    expect(await error.locator('.error-message').textContent()).toContain('order-8');
    await shot(p, 'composer-conflict.png');

    // A platform-authored type: FORBIDDEN.
    await p.getByLabel('Idempotency key').fill('');
    await p.getByLabel('Type', { exact: true }).fill('events.iterate.com/stream/subscription-delivery-halted');
    await p.getByLabel(/^Payload/).fill('{"subscriptionKey": "x", "reason": "delivery-failed", "afterOffset": 0, "attempts": 1}');
    await p.getByRole('button', { name: 'Append', exact: true }).click();
    await expect.poll(() => error.locator('.error-code').textContent()).toBe('FORBIDDEN');

    // A payload that is not a JSON object never leaves the page.
    await p.getByLabel(/^Payload/).fill('[1, 2]');
    await p.getByRole('button', { name: 'Append', exact: true }).click();
    await expect.poll(() => error.textContent()).toContain('payload must be a JSON object');
    expect((await t.client.getEvents('/composer/a')).streamMaxOffset).toBe(3);

    // Enter in the stream search opens a path that does not exist yet; the first append creates it.
    await p.getByRole('searchbox', { name: 'Streams' }).fill('/composer/new');
    await p.getByRole('searchbox', { name: 'Streams' }).press('Enter');
    await expect.poll(() => p.getByTestId('stream-title').textContent()).toBe('/composer/new');
    await expect.poll(() => p.getByTestId('vitals').textContent()).toContain('does not exist yet');
    await p.getByLabel('Type', { exact: true }).fill('test/first');
    await p.getByLabel(/^Payload/).fill('');
    await p.getByRole('button', { name: 'Append', exact: true }).click();
    await expect.poll(() => p.getByTestId('composer-ok').textContent()).toBe('Appended at offset 2.');
    await row(p, 2).waitFor();
    await p.getByTestId('stream-tree').locator('a[data-path="/composer/new"][aria-current="page"]').waitFor();
    await expect.poll(() => p.getByTestId('vital-head').textContent()).toBe('2');
  });

  it('pages back through older events and follows a stream across its destruction', async () => {
    await t.client.append(
      '/long/log',
      Array.from({ length: 150 }, (_, i) => ({ type: 'log/line', payload: { i } })),
    );
    const p = await open('#/long/log');
    // The latest page only: offsets 52–151 of 151.
    await row(p, 151).waitFor();
    await p.locator('[data-testid="feed-status"][data-state="live"]').waitFor();
    await expect.poll(() => p.locator('[data-testid="feed"] li').count()).toBe(100);
    expect(await row(p, 51).count()).toBe(0);
    await p.getByRole('button', { name: 'Load older events' }).click();
    await row(p, 1).waitFor();
    await expect.poll(() => p.locator('[data-testid="feed"] li').count()).toBe(151);
    await expect.poll(() => p.getByRole('button', { name: 'Load older events' }).isHidden()).toBe(true);

    // Destroyed: the feed says so and follows the next lifetime from offset 1.
    await t.client.destroy('/long/log');
    await p.getByText(/^This stream was destroyed at .*; showing its next lifetime\.$/).waitFor();
    await expect.poll(() => p.locator('[data-testid="feed"] li').count()).toBe(0);
    await expect.poll(() => p.getByTestId('vitals').textContent()).toContain('does not exist yet');
    await t.client.append('/long/log', { type: 'log/reborn' });
    await row(p, 2).waitFor();
    expect(await row(p, 2).getAttribute('data-type')).toBe('log/reborn');
    await expect.poll(() => p.getByTestId('vital-head').textContent()).toBe('2');
  });

  it('asks for a token when the server has tokens, and keeps token and project in the browser', async () => {
    const token = 'ui-test-admin-token-0123456789';
    const secured = await startNodeServer({
      port: 0,
      data: mkdtempSync(join(tmpdir(), 'rivulet-ui-test-tokens-')),
      uiDir: UI_DIR,
      tokens: new Map([[token, '*']]),
      logger: { error: () => undefined },
    });
    try {
      await createClient({ url: secured.url, token, projectId: 'acme' }).append('/acme/orders', { type: 'acme/order' });
      const p = await newPage();
      t.expectStatuses(401);
      await p.goto(`${secured.url}/`);
      await expect.poll(() => p.locator('.server-status').textContent()).toBe('token needed: open Connection…');

      await p.getByRole('button', { name: 'Connection…' }).click();
      const dialog = p.getByRole('dialog');
      await dialog.getByLabel(/^Token/).fill(token);
      await dialog.getByLabel(/^Project/).fill('acme');
      await dialog.getByRole('button', { name: 'Save and reconnect' }).click();
      await p.getByTestId('stream-tree').locator('a[data-path="/acme/orders"]').waitFor();
      await expect.poll(() => p.locator('.server-status').textContent()).toBe('connected');
      expect(await p.locator('.topbar .server').textContent()).toContain('project acme');
      await shot(p, 'connection-token.png');
    } finally {
      await t.page.close();
      await secured.close();
      rmSync(secured.dataDir, { recursive: true, force: true });
    }
  });
});
