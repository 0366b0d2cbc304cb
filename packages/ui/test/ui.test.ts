/**
 * The web UI in a real browser (issue 6 part 5): Debian's Chromium driven by playwright-core,
 * against a real server started in-process on a fresh data folder that serves the built UI
 * (packages/ui/dist, built by `npm run build`, which `npm test` runs first). Every scenario waits
 * for elements and conditions (Playwright's auto-waiting, expect.poll), never for fixed times, and
 * fails on any console error or uncaught page error other than the failed requests it provokes on
 * purpose. Screenshots land in test-output/ui/ at the repository root (git-ignored).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, createClient, watch, type AppendEvent, type RivuletClient } from '@rivulet/client';
import { startNodeServer, type RunningServer } from '@rivulet/server/node';

// No trailing slash: the server's asset handler appends its own separator.
const UI_DIR = fileURLToPath(new URL('../dist', import.meta.url));
const SHOTS = fileURLToPath(new URL('../../../test-output/ui/', import.meta.url));
const CHROMIUM = process.env.RIVULET_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
];

let server: RunningServer;
let client: RivuletClient;
let context: BrowserContext;
let data: string;
let profile: string;
let page: Page;
let problems: string[] = [];
/** Statuses of requests the current scenario provokes on purpose: Chromium logs every non-2xx fetch as a console error. */
let expectedStatuses: number[] = [];

beforeAll(async () => {
  if (!existsSync(join(UI_DIR, 'index.html'))) {
    throw new Error(`the built UI is missing (${join(UI_DIR, "index.html")}): run \`npm run build\` first (npm test does)`);
  }
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is missing at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (.ci/run does)`);
  }
  mkdirSync(SHOTS, { recursive: true });
  data = mkdtempSync(join(tmpdir(), 'rivulet-ui-test-'));
  profile = mkdtempSync(join(tmpdir(), 'rivulet-ui-chromium-'));
  server = await startNodeServer({
    port: 0,
    data,
    uiDir: UI_DIR,
    retryBaseMs: 10,
    retryMaxMs: 50,
    maxDeliveryAttempts: 3,
    logger: { error: () => undefined },
  });
  client = createClient({ url: server.url });
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1440, height: 900 },
  });
  context.setDefaultTimeout(10_000);
}, 30_000);

afterAll(async () => {
  // The browser first, so no page is left reconnecting to a stopped server.
  await context?.close();
  await server?.close();
  if (data) rmSync(data, { recursive: true, force: true });
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/** A new page whose console errors and uncaught errors are collected (checked after each test). */
async function newPage(): Promise<Page> {
  page = await context.newPage();
  problems = [];
  expectedStatuses = [];
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const failed = /^Failed to load resource: the server responded with a status of (\d+)/.exec(message.text());
    if (failed && expectedStatuses.includes(Number(failed[1]))) return;
    problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return page;
}

async function open(hash = ''): Promise<Page> {
  const p = await newPage();
  await p.goto(`${server.url}/${hash}`);
  return p;
}

afterEach(async () => {
  await page?.close();
  expect(problems).toEqual([]);
});

const shot = (p: Page, name: string) => p.screenshot({ path: join(SHOTS, name), fullPage: true });
const row = (p: Page, offset: number) => p.locator(`[data-testid="feed"] li[data-offset="${offset}"]`);

describe('web UI', () => {
  it('opens a stream from the tree and follows appends live, in either order, with a type filter', async () => {
    await client.append('/shop/orders', [
      { type: 'shop.example/order-created', payload: { id: 7, total: 42 } },
      { type: 'shop.example/order-paid', payload: { id: 7 } },
    ]);
    await client.append('/shop/invoices', { type: 'shop.example/invoice-sent', payload: { id: 1 } });
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

    await client.append('/shop/orders', { type: 'shop.example/order-shipped', payload: { id: 7, carrier: 'post' } });
    await client.append('/shop/orders', { type: 'shop.example/cursor-moved', payload: { x: 1 }, ephemeral: true });
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
    await client.append('/watched/a', { type: 'test/seed' });
    const p = await open('#/watched/a');
    await p.getByText('No live connections.').waitFor();
    const itx = await connect(server.url, { reconnect: false });
    try {
      const seen: number[] = [];
      const w = watch(itx, '/watched/a', { connectionKey: 'ui-watch', replayAfterOffset: 0 }, (batch) => {
        for (const e of batch.events) seen.push(e.offset);
      });
      await w.ready;
      const [live] = await client.append('/watched/a', { type: 'test/live', payload: { n: 1 } });
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
    await client.append('/composer/a', { type: 'test/seed' });
    const p = await open('#/composer/a');
    expectedStatuses = [403, 409];
    await row(p, 2).waitFor();
    await p.locator('[data-testid="feed-status"][data-state="live"]').waitFor();

    await p.getByLabel('Type', { exact: true }).fill('shop.example/order-created');
    await p.getByLabel(/^Payload/).fill('{"id": 8}');
    await p.getByLabel('Idempotency key').fill('order-8');
    await p.getByRole('button', { name: 'Append', exact: true }).click();
    await expect.poll(() => p.getByTestId('composer-ok').textContent()).toBe('Appended at offset 3.');
    await row(p, 3).waitFor();
    const stored = await client.getEvents('/composer/a', { afterOffset: 2 });
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
    expect((await client.getEvents('/composer/a')).streamMaxOffset).toBe(3);

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

  it('shows a halted copy in the red lane, and Resume delivers the held events', async () => {
    // The receiver is paused, so every copy is refused ("unavailable") until it halts (3 attempts).
    await client.append('/lane/paid', { type: 'events.iterate.com/stream/paused', payload: { reason: 'maintenance' } });
    await client.append('/lane/orders', [
      { type: 'shop.example/order-paid', payload: { id: 1 } },
      { type: 'shop.example/order-paid', payload: { id: 2 } },
    ]);
    await client.subscribeToEventsFrom('/lane/paid', {
      sourceStreamPath: '/lane/orders',
      subscriptionKey: 'paid',
      filter: { eventTypes: ['shop.example/order-paid'] },
      delivery: { start: 'beginning' },
    });

    const p = await open('#/lane/orders');
    const card = p.getByTestId('halted-lane').locator('article[data-key="paid"]');
    await card.waitFor();
    expect(await card.getByTestId('halt-after').textContent()).toBe('0');
    await expect.poll(() => card.getByTestId('halt-error').textContent()).toMatch(/\S/);
    await p.locator('[data-testid="subscriptions"] tr[data-key="paid"][data-status="halted"]').waitFor();
    const subscriptionRow = p.locator('[data-testid="subscriptions"] tr[data-key="paid"]');
    expect(await subscriptionRow.textContent()).toContain('copy to /lane/paid');
    expect(await subscriptionRow.textContent()).toContain('types: shop.example/order-paid');
    await p.getByTestId('halted-count').waitFor();
    await shot(p, 'halted-lane.png');

    // Unpause the receiver, then Resume — with the keyboard, confirmed in a dialog first.
    await client.append('/lane/paid', { type: 'events.iterate.com/stream/resumed' });
    await card.getByRole('button', { name: 'Resume', exact: true }).focus();
    await p.keyboard.press('Enter');
    const dialog = p.getByRole('dialog');
    await dialog.waitFor();
    await shot(p, 'resume-confirm.png');
    // The dialog's confirm button has the focus: Enter confirms.
    await expect.poll(() => p.evaluate(() => document.activeElement?.textContent)).toBe('Resume');
    await p.keyboard.press('Enter');

    await expect.poll(() => p.getByTestId('action-event').first().textContent()).toContain('events.iterate.com/stream/subscription-delivery-resumed');
    await expect.poll(() => p.getByTestId('halted-lane').isHidden()).toBe(true);
    await p.locator('[data-testid="subscriptions"] tr[data-key="paid"][data-status="healthy"]').waitFor();
    await expect.poll(() => subscriptionRow.getByTestId('lag').textContent()).toBe('0');
    const copies = await client.getEvents('/lane/paid', { eventTypes: ['shop.example/order-paid'] });
    expect(copies.events.map((e) => e.payload)).toEqual([{ id: 1 }, { id: 2 }]);
    await shot(p, 'resumed.png');

    // The receiving stream shows its inbound record and the copies.
    await p.getByTestId('stream-tree').locator('a[data-path="/lane/paid"]').click();
    const inbound = p.getByTestId('inbound');
    await inbound.waitFor();
    expect(await inbound.textContent()).toContain('/lane/orders');
    await expect.poll(() => inbound.locator('tbody tr td.num').textContent()).toBe('2');
    await p.locator('[data-testid="feed"] .badge-copy').first().waitFor();
    await shot(p, 'receiver-inbound.png');
  });

  it('Set cursor and resume skips an event whose filter condition fails', async () => {
    await client.append('/poison/src', [
      { type: 'job/run', payload: { n: 1 } },
      { type: 'job/run', payload: { n: 2, bad: true } },
      { type: 'job/run', payload: { n: 3 } },
    ]);
    await client.subscribeToEventsFrom('/poison/dst', {
      sourceStreamPath: '/poison/src',
      subscriptionKey: 'jobs',
      filter: { eventTypes: ['job/run'], jsonataCondition: 'payload.bad ? $error("bad job") : true' },
      delivery: { start: 'beginning' },
    });

    const p = await open('#/poison/src');
    const card = p.getByTestId('halted-lane').locator('article[data-key="jobs"]');
    await card.waitFor();
    expect(await card.getByTestId('halt-after').textContent()).toBe('2');
    await expect.poll(() => card.getByTestId('halt-error').textContent()).toContain('bad job');

    await card.getByRole('button', { name: 'Set cursor and resume…' }).click();
    const dialog = p.getByRole('dialog');
    const offset = dialog.getByTestId('cursor-offset');
    // Defaults to the next event after the cursor: the failing one, offset 3.
    await expect.poll(() => offset.inputValue()).toBe('3');
    expect(await dialog.textContent()).toContain('The next event is #3 (job/run)');
    await shot(p, 'set-cursor-dialog.png');
    await dialog.getByTestId('dialog-confirm').click();

    const events = p.getByTestId('action-event');
    await expect.poll(() => events.count()).toBe(2);
    expect(await events.nth(0).textContent()).toContain('subscription-cursor-set');
    expect(await events.nth(1).textContent()).toContain('subscription-delivery-resumed');
    await expect.poll(() => p.getByTestId('halted-lane').isHidden()).toBe(true);
    await p.locator('[data-testid="subscriptions"] tr[data-key="jobs"][data-status="healthy"]').waitFor();
    const copied = await client.getEvents('/poison/dst', { eventTypes: ['job/run'] });
    expect(copied.events.map((e) => e.payload)).toEqual([{ n: 1 }, { n: 3 }]);
    await shot(p, 'set-cursor-done.png');
  });

  it('keeps a repair dialog open with the server’s error when the command is refused', async () => {
    await client.append('/refuse/src', { type: 'a' });
    await client.append('/refuse/dst', { type: 'events.iterate.com/stream/paused' });
    await client.subscribeToEventsFrom('/refuse/dst', { sourceStreamPath: '/refuse/src', subscriptionKey: 'k', delivery: { start: 'beginning' } });
    const p = await open('#/refuse/src');
    expectedStatuses = [404];
    const card = p.getByTestId('halted-lane').locator('article[data-key="k"]');
    await card.waitFor();
    await card.getByRole('button', { name: 'Resume', exact: true }).click();
    const dialog = p.getByRole('dialog');
    await dialog.waitFor();
    // Remove the subscription behind the page's back while it asks: the command answers NOT_FOUND.
    await client.unsubscribeFromEvents('/refuse/dst', { sourceStreamPath: '/refuse/src', subscriptionKey: 'k' });
    await dialog.getByRole('button', { name: 'Resume', exact: true }).click();
    await expect.poll(() => dialog.getByTestId('dialog-error').locator('.error-code').textContent()).toBe('NOT_FOUND');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => p.getByRole('dialog').count()).toBe(0);
    // The next state read no longer has the subscription: the lane empties.
    await expect.poll(() => p.getByTestId('halted-lane').isHidden()).toBe(true);
  });

  it('describes every kind of receiver in the subscriptions table', async () => {
    const configure = (payload: NonNullable<AppendEvent['payload']>) =>
      client.append('/kinds/src', { type: 'events.iterate.com/stream/subscription-configured', payload });
    // Filters that match nothing appended here, so no receiver is ever called (the webhook URL is
    // on loopback all the same: a test never sends traffic off the machine).
    await configure({
      subscriptionKey: 'hook',
      description: 'notify the shop',
      filter: { eventTypes: ['shop.example/order-created'] },
      receiver: { action: 'webhook-post', url: 'http://127.0.0.1:9/hooks/orders', jsonataTransform: '{"type": type}', delivery: { start: 'now', onFailingEvent: 'skip' } },
    });
    await configure({
      subscriptionKey: 'billing',
      filter: { eventTypes: ['shop.example/order-paid'] },
      receiver: { action: 'itx-call', expression: ['workers', ['get', 'billing'], 'processEventBatch'], delivery: { start: 'now', onFailingEvent: 'halt' } },
    });
    await configure({ subscriptionKey: 'agent', receiver: { action: 'processor-wake', expression: ['processors', ['get', 'agents'], 'wakeStreamProcessor'] } });
    await client.subscribeToEventsFrom('/kinds/copy', { sourceStreamPath: '/kinds/src', subscriptionKey: 'mirror', jsonataTransform: '{"payload": {"n": 1}}' });

    const p = await open('#/kinds/src');
    const text = (key: string) => p.locator(`[data-testid="subscriptions"] tr[data-key="${key}"]`).textContent();
    await p.locator('[data-testid="subscriptions"] tr[data-key="mirror"]').waitFor();
    expect(await text('hook')).toContain('POST http://127.0.0.1:9/hooks/orders');
    expect(await text('hook')).toContain('notify the shop');
    expect(await text('hook')).toContain('{"type": type}');
    expect(await text('hook')).toContain('skip');
    expect(await text('billing')).toContain('workers.get("billing").processEventBatch');
    expect(await text('billing')).toContain('types: shop.example/order-paid');
    expect(await text('agent')).toContain('processors.get("agents").wakeStreamProcessor');
    expect(await text('mirror')).toContain('copy to /kinds/copy');
    expect(await text('mirror')).toContain('{"payload": {"n": 1}}');
    expect(await text('mirror')).toContain('all events');
    await shot(p, 'receivers.png');
  });

  it('pages back through older events and follows a stream across its destruction', async () => {
    await client.append(
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
    await client.destroy('/long/log');
    await p.getByText(/^This stream was destroyed at .*; showing its next lifetime\.$/).waitFor();
    await expect.poll(() => p.locator('[data-testid="feed"] li').count()).toBe(0);
    await expect.poll(() => p.getByTestId('vitals').textContent()).toContain('does not exist yet');
    await client.append('/long/log', { type: 'log/reborn' });
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
      expectedStatuses = [401];
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
      await page.close();
      await secured.close();
      rmSync(secured.dataDir, { recursive: true, force: true });
    }
  });
});
