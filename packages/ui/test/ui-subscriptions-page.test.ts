/**
 * The subscriptions UI across streams in a real browser (packages/ui/README "Pages"): the
 * subscriptions page (halted first, status and prefix filters), the status dots of the stream tree,
 * a halted card's failed event and attempt history, the create/edit/remove form with its live dry
 * run, and the stream page's subscriptions table at 1280 × 800. The page helpers are ui-page.ts's.
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { uiSuite } from './ui-page.js';

const t = uiSuite();
const { shot } = t;
const POLL = { timeout: 10_000 };

/** A page at the laptop size the layout must fit (1280 × 800). */
async function openAt1280(hash: string): Promise<Page> {
  const p = await t.newPage();
  await p.setViewportSize({ width: 1280, height: 800 });
  await p.goto(`${t.server.url}/${hash}`);
  return p;
}

/** Configures a copy whose condition throws on events with `bad` in their payload, so it halts on them. */
async function haltingCopy(source: string, receiver: string, key: string, message = 'bad job'): Promise<void> {
  await t.client.subscribeToEventsFrom(receiver, {
    sourceStreamPath: source,
    subscriptionKey: key,
    filter: { eventTypes: ['job/run'], jsonataCondition: `payload.bad ? $error("${message}") : true` },
    delivery: { start: 'beginning' },
  });
}

async function waitForHalt(source: string, key: string): Promise<void> {
  await expect
    .poll(async () => (await t.client.state(source)).core?.subscriptions.outbound.byKey[key]?.deliveryHalted !== undefined, POLL)
    .toBe(true);
}

describe('subscriptions UI', () => {
  it('keeps the Last error column on screen at 1280 px and a halted row short, with the failed event and attempts on its card', async () => {
    const longError = `the receiver refused the order because ${'its reference is not known to the ledger and '.repeat(6)}that is final`;
    await t.client.append('/layout/orders', [
      { type: 'job/run', payload: { n: 1 } },
      { type: 'job/run', payload: { n: 2, bad: true, customer: 'ada@example.com', lines: [1, 2, 3] } },
    ]);
    await haltingCopy('/layout/orders', '/layout/receiving-stream-with-a-rather-long-name/for-the-ledger', 'ledger-sync-with-a-long-key', longError);
    await t.client.subscribeToEventsFrom('/layout/mirror', { sourceStreamPath: '/layout/orders', subscriptionKey: 'mirror', jsonataTransform: '{"type": type, "payload": {"n": payload.n, "copied": true}}' });
    await waitForHalt('/layout/orders', 'ledger-sync-with-a-long-key');

    const p = await openAt1280('#/layout/orders');
    const table = p.getByTestId('subscriptions');
    const halted = table.locator('tr[data-status="halted"]');
    await halted.waitFor();
    await expect.poll(() => halted.getByTestId('last-error').textContent(), POLL).toContain('the receiver refused the order');
    await table.locator('tr[data-key="mirror"][data-status="healthy"]').waitFor();

    // Every header cell, the Last error one included, lies within the 1280 px viewport, and the
    // table does not scroll sideways.
    const headers = table.locator('th');
    const count = await headers.count();
    expect(count).toBe(9);
    for (let i = 0; i < count; i++) {
      const box = await headers.nth(i).boundingBox();
      expect(box, `header ${i}`).not.toBeNull();
      expect(box!.x + box!.width, `right edge of header ${await headers.nth(i).textContent()}`).toBeLessThanOrEqual(1280);
    }
    expect(await headers.last().textContent()).toBe('Last error');
    const errorCell = await halted.getByTestId('last-error').boundingBox();
    expect(errorCell!.x + errorCell!.width).toBeLessThanOrEqual(1280);
    expect(errorCell!.width).toBeGreaterThan(100);
    expect(await table.evaluate((el) => el.parentElement!.scrollWidth <= el.parentElement!.clientWidth)).toBe(true);
    // The whole error stays reachable: in the cell's title (and on the card below).
    expect(await halted.getByTestId('last-error').locator('span').getAttribute('title')).toContain('that is final');
    // Two lines of text and the Edit/Remove links, not 200 px of empty cells.
    const rowBox = await halted.boundingBox();
    expect(rowBox!.height).toBeLessThanOrEqual(90);
    expect(rowBox!.height).toBeGreaterThan(20);

    // The card: the event that failed (offset 3: stream/created is 1) and its attempts, newest
    // first: three failures after the copy of offset 2 went through.
    const card = p.getByTestId('halted-lane').locator('article[data-key="ledger-sync-with-a-long-key"]');
    await expect.poll(() => card.getByTestId('failed-offset').textContent(), POLL).toBe('#3');
    expect(await card.getByTestId('failed-label').textContent()).toBe('Failed on #3 job/run');
    expect(await card.getByTestId('failed-type').textContent()).toBe('job/run');
    expect(await card.getByTestId('failed-payload').textContent()).toContain('"customer":"ada@example.com"');
    const attempts = card.getByTestId('attempts-table');
    await expect.poll(() => attempts.locator('tbody tr').count(), POLL).toBe(4);
    expect(await attempts.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-outcome')))).toEqual(['failed', 'failed', 'failed', 'ok']);
    expect(await attempts.locator('tbody tr').first().locator('td').nth(1).textContent()).toBe('3');
    expect(await attempts.locator('tbody tr').first().locator('td').nth(2).textContent()).toBe('3');
    expect(await attempts.locator('tbody tr').first().textContent()).toContain('that is final');
    await shot(p, 'subscriptions-1280.png');
  });

  it('lists halted subscriptions first across streams, filters by status and prefix, and is linked from the badge and marked in the tree', async () => {
    await t.client.append('/across/a', [{ type: 'job/run', payload: { n: 1 } }]);
    await t.client.append('/across/b', [{ type: 'job/run', payload: { bad: true } }]);
    await t.client.append('/elsewhere/c', [{ type: 'job/run', payload: { bad: true } }]);
    await t.client.subscribeToEventsFrom('/across/a-copy', { sourceStreamPath: '/across/a', subscriptionKey: 'fine' });
    await haltingCopy('/across/b', '/across/b-copy', 'broken');
    await haltingCopy('/elsewhere/c', '/elsewhere/c-copy', 'broken-too');
    await waitForHalt('/across/b', 'broken');
    await waitForHalt('/elsewhere/c', 'broken-too');

    const p = await openAt1280('');
    // The tree's dots: each source stream's worst status; a stream without subscriptions has none.
    const tree = p.getByTestId('stream-tree');
    await expect.poll(() => tree.locator('a[data-path="/across/b"] [data-testid="tree-dot"]').getAttribute('data-status'), POLL).toBe('halted');
    await expect.poll(() => tree.locator('a[data-path="/across/a"] [data-testid="tree-dot"]').getAttribute('data-status'), POLL).toBe('healthy');
    expect(await tree.locator('a[data-path="/across/a-copy"] [data-testid="tree-dot"]').count()).toBe(0);

    // The badge counts the halted ones and opens the page filtered to them.
    const badge = p.getByTestId('halted-count');
    await expect.poll(() => badge.textContent(), POLL).toMatch(/^\d+ halted$/);
    const halted = Number((await badge.textContent())!.split(' ')[0]);
    expect(halted).toBeGreaterThanOrEqual(2);
    await badge.click();
    await expect.poll(() => p.evaluate(() => window.location.hash)).toBe('#subscriptions?status=halted');
    const rows = p.getByTestId('all-subscriptions').locator('tbody tr');
    await expect.poll(() => rows.count(), POLL).toBe(halted);
    expect(new Set(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-status'))))).toEqual(new Set(['halted']));
    expect(await p.getByTestId('status-halted').isChecked()).toBe(true);
    expect(await p.getByTestId('status-healthy').isChecked()).toBe(false);
    await p.getByTestId('halted-lane').locator('article[data-key="broken-too"]').waitFor();
    await shot(p, 'subscriptions-page-halted.png');

    // Every status, narrowed to /across: halted first, then the rest.
    await p.getByTestId('status-halted').uncheck();
    await expect.poll(() => p.evaluate(() => window.location.hash)).toBe('#subscriptions');
    await p.getByLabel(/^Path prefix/).fill('/across');
    await p.getByLabel(/^Path prefix/).press('Enter');
    await expect.poll(() => p.evaluate(() => window.location.hash)).toBe('#subscriptions?prefix=/across');
    await expect
      .poll(() => rows.evaluateAll((trs) => trs.map((tr) => `${tr.getAttribute('data-status')} ${tr.getAttribute('data-source')} ${tr.getAttribute('data-key')}`)), POLL)
      .toEqual(['halted /across/b broken', 'healthy /across/a fine']);
    expect(await p.getByTestId('subs-summary').textContent()).toBe('2 subscriptions, 1 halted.');

    // Healthy only under /across.
    await p.getByTestId('status-healthy').check();
    await expect.poll(() => p.evaluate(() => window.location.hash)).toBe('#subscriptions?status=healthy&prefix=/across');
    await expect.poll(() => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-key'))), POLL).toEqual(['fine']);
    await expect.poll(() => p.getByTestId('halted-lane').isHidden()).toBe(true);

    // A prefix with nothing under it says so.
    await p.getByLabel(/^Path prefix/).fill('/nothing-here');
    await p.getByLabel(/^Path prefix/).press('Enter');
    await expect.poll(() => p.getByTestId('subs-summary').textContent(), POLL).toBe('No subscriptions match these filters.');

    // A prefix the server refuses: its code and message in place of the summary, no stack trace.
    t.expectStatuses(400);
    await p.getByLabel(/^Path prefix/).fill('/a/../..');
    await p.getByLabel(/^Path prefix/).press('Enter');
    const refused = p.getByTestId('subs-error');
    await expect.poll(() => refused.locator('.error-code').textContent(), POLL).toBe('INVALID_INPUT');
    expect(await refused.locator('.error-message').textContent()).toBe('stream path "/a/../.." uses ".." to escape the root');

    // The card's Edit opens the form on the subscription's configuration, read from its source.
    await p.goto(`${t.server.url}/#subscriptions?status=halted&prefix=/elsewhere`);
    const card = p.getByTestId('halted-lane').locator('article[data-key="broken-too"]');
    await expect.poll(() => card.getByTestId('failed-type').textContent(), POLL).toBe('job/run');
    await card.getByRole('button', { name: 'Edit…' }).click();
    const form = p.getByRole('dialog');
    expect(await form.getByLabel('Source stream').inputValue()).toBe('/elsewhere/c');
    expect(await form.getByLabel('Key').inputValue()).toBe('broken-too');
    expect(await form.getByLabel(/^Condition/).inputValue()).toBe('payload.bad ? $error("bad job") : true');
    await expect.poll(() => form.getByTestId('preview-errors').textContent(), POLL).toContain('bad job');
    await form.getByRole('button', { name: 'Cancel' }).click();

    // Resume from the page's card: the listing then has the subscription no longer halted.
    await card.getByRole('button', { name: 'Resume', exact: true }).click();
    await p.getByRole('dialog').getByTestId('dialog-confirm').click();
    await expect.poll(() => p.getByTestId('action-result').textContent(), POLL).toContain('Resumed “broken-too” on /elsewhere/c.');
  });

  it('creates, edits and removes a subscription, with the dry run following the filter and transform as they are typed', async () => {
    await t.client.append('/form/orders', [
      { type: 'shop/order', payload: { id: 1, total: 40 } },
      { type: 'shop/order', payload: { id: 2, total: 250 } },
      { type: 'shop/refund', payload: { id: 1 } },
    ]);
    const p = await openAt1280('#/form/orders');
    t.expectStatuses(400);
    await p.getByTestId('new-subscription').click();
    const dialog = p.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.getByLabel('Source stream').inputValue()).toBe('/form/orders');
    const preview = dialog.getByTestId('preview');
    // No key yet: the form says what is missing, without asking the server.
    await expect.poll(() => preview.getByTestId('preview-incomplete').textContent()).toBe('Not yet: a subscription key is needed.');

    await dialog.getByLabel('Key').fill('big-orders');
    await dialog.getByLabel('Receiving stream').fill('/form/big');
    await expect.poll(() => preview.getByTestId('preview-summary').textContent(), POLL).toBe('4 of 4 recent events match; 4 would be delivered, 0 would fail.');
    await dialog.getByLabel(/^Event types/).fill('shop/order');
    await expect.poll(() => preview.getByTestId('preview-summary').textContent(), POLL).toBe('2 of 4 recent events match; 2 would be delivered, 0 would fail.');
    await dialog.getByLabel(/^Condition/).fill('payload.total > 100');
    await expect.poll(() => preview.getByTestId('preview-summary').textContent(), POLL).toBe('1 of 4 recent events match; 1 would be delivered, 0 would fail.');
    await dialog.getByLabel(/^Transform/).fill('{"type": "shop/big-order", "payload": {"id": payload.id}}');
    const delivery = preview.locator('[data-testid="preview-deliveries"] li');
    await expect.poll(() => delivery.locator('.event-type').textContent(), POLL).toBe('shop/big-order');
    expect(await delivery.getAttribute('data-offset')).toBe('3');
    expect(await delivery.getByTestId('preview-payload').textContent()).toBe('{"id":2}');

    // A transform that does not compile: the server's code and message, inline.
    await dialog.getByLabel(/^Transform/).fill('{"type": ');
    await expect.poll(() => preview.getByTestId('preview-error').locator('.error-code').textContent(), POLL).toBe('INVALID_INPUT');
    expect(await preview.getByTestId('preview-error').locator('.error-message').textContent()).toMatch(/jsonataTransform/);
    expect(await preview.textContent()).not.toMatch(/\bat .*\.(js|ts):\d+/);
    await shot(p, 'subscription-form-error.png');
    // A transform that fails on an event: listed under errors with the offset.
    await dialog.getByLabel(/^Transform/).fill('$error("no " & payload.id)');
    await expect.poll(() => preview.getByTestId('preview-errors').textContent(), POLL).toContain('#3 jsonataTransform failed on offset 3');
    await dialog.getByLabel(/^Transform/).fill('{"type": "shop/big-order", "payload": {"id": payload.id}}');
    await expect.poll(() => preview.getByTestId('preview-summary').textContent(), POLL).toBe('1 of 4 recent events match; 1 would be delivered, 0 would fail.');
    await shot(p, 'subscription-form.png');

    await dialog.getByTestId('dialog-confirm').click();
    await expect.poll(() => p.getByRole('dialog').count()).toBe(0);
    await expect.poll(() => p.getByTestId('action-result').textContent(), POLL).toContain('Created “big-orders” on /form/orders.');
    await expect.poll(async () => (await t.client.getEvents('/form/big', { eventTypes: ['shop/big-order'] })).events.map((e) => e.payload), POLL).toEqual([{ id: 2 }]);

    // Edit: the form opens filled in; a new event type list takes effect as a new run.
    const row = p.locator('[data-testid="subscriptions"] tr[data-key="big-orders"]');
    await row.getByRole('button', { name: 'Edit' }).click();
    await dialog.waitFor();
    expect(await dialog.getByLabel('Key').inputValue()).toBe('big-orders');
    expect(await dialog.getByLabel(/^Condition/).inputValue()).toBe('payload.total > 100');
    expect(await dialog.getByLabel(/^Transform/).inputValue()).toBe('{"type": "shop/big-order", "payload": {"id": payload.id}}');
    await dialog.getByLabel(/^Description/).fill('orders above 100');
    await expect.poll(() => preview.getByTestId('preview-summary').textContent(), POLL).toBe('1 of 5 recent events match; 1 would be delivered, 0 would fail.');
    await dialog.getByTestId('dialog-confirm').click();
    await expect.poll(() => p.getByTestId('action-result').textContent(), POLL).toContain('Saved “big-orders” on /form/orders.');
    await expect.poll(async () => (await t.client.state('/form/orders')).core?.subscriptions.outbound.byKey['big-orders']?.configuration.description, POLL).toBe('orders above 100');
    await expect.poll(() => row.textContent(), POLL).toContain('orders above 100');

    // A configure the server refuses (a copy to itself) keeps the dialog open with its error.
    await p.getByTestId('new-subscription').click();
    await dialog.getByLabel('Key').fill('loop');
    await dialog.getByLabel('Receiving stream').fill('/form/orders');
    await dialog.getByTestId('dialog-confirm').click();
    await expect.poll(() => dialog.getByTestId('dialog-error').locator('.error-code').textContent(), POLL).toBe('INVALID_INPUT');
    await dialog.getByRole('button', { name: 'Cancel' }).click();

    // Remove, confirmed first.
    await row.getByRole('button', { name: 'Remove' }).click();
    await dialog.getByTestId('dialog-confirm').click();
    await expect.poll(() => p.getByTestId('action-result').textContent(), POLL).toContain('Removed “big-orders” from /form/orders.');
    await expect.poll(() => row.count(), POLL).toBe(0);
    expect((await t.client.state('/form/orders')).core?.subscriptions.outbound.byKey['big-orders']).toBeUndefined();
  });
});
