/**
 * The web UI in a real browser: a stream's subscriptions, their receivers, a halted copy and its
 * repair (Resume, Set cursor and resume). Debian's Chromium driven by playwright-core,
 * against a real server started in-process on a fresh data folder that serves the built UI
 * (packages/ui/dist, built by `npm run build`, which `npm test` runs first); browser.ts starts both.
 * Every scenario waits for elements and conditions (Playwright's auto-waiting, expect.poll), never
 * for fixed times, and fails on any console error or uncaught page error other than the failed
 * requests it provokes on purpose. Screenshots land in test-output/ui/ at the repository root.
 */
import { describe, expect, it } from 'vitest';
import type { AppendEvent } from '@rivulet/client';
import { uiSuite } from './ui-page.js';

const t = uiSuite();
const { open, shot } = t;

describe('web UI', () => {
  it('shows a halted copy in the red lane, and Resume delivers the held events', async () => {
    // The receiver is paused, so every copy is refused ("unavailable") until it halts (3 attempts).
    await t.client.append('/lane/paid', { type: 'events.iterate.com/stream/paused', payload: { reason: 'maintenance' } });
    await t.client.append('/lane/orders', [
      { type: 'shop.example/order-paid', payload: { id: 1 } },
      { type: 'shop.example/order-paid', payload: { id: 2 } },
    ]);
    await t.client.subscribeToEventsFrom('/lane/paid', {
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
    // The receiver refused every attempt: the card names the first event of the failed batch.
    await expect.poll(() => card.getByTestId('failed-label').textContent(), { timeout: 10_000 }).toBe('Failed delivering the events from #2 shop.example/order-paid');
    expect(await card.getByTestId('failed-payload').textContent()).toBe('{"id":1}');
    await expect.poll(() => card.locator('[data-testid="attempts-table"] tbody tr[data-outcome="unavailable"]').count()).toBe(3);
    await shot(p, 'halted-lane.png');

    // Unpause the receiver, then Resume — with the keyboard, confirmed in a dialog first.
    await t.client.append('/lane/paid', { type: 'events.iterate.com/stream/resumed' });
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
    const copies = await t.client.getEvents('/lane/paid', { eventTypes: ['shop.example/order-paid'] });
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
    await t.client.append('/poison/src', [
      { type: 'job/run', payload: { n: 1 } },
      { type: 'job/run', payload: { n: 2, bad: true } },
      { type: 'job/run', payload: { n: 3 } },
    ]);
    await t.client.subscribeToEventsFrom('/poison/dst', {
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
    const copied = await t.client.getEvents('/poison/dst', { eventTypes: ['job/run'] });
    expect(copied.events.map((e) => e.payload)).toEqual([{ n: 1 }, { n: 3 }]);
    await shot(p, 'set-cursor-done.png');
  });

  it('keeps a repair dialog open with the server’s error when the command is refused', async () => {
    await t.client.append('/refuse/src', { type: 'a' });
    await t.client.append('/refuse/dst', { type: 'events.iterate.com/stream/paused' });
    await t.client.subscribeToEventsFrom('/refuse/dst', { sourceStreamPath: '/refuse/src', subscriptionKey: 'k', delivery: { start: 'beginning' } });
    const p = await open('#/refuse/src');
    t.expectStatuses(404);
    const card = p.getByTestId('halted-lane').locator('article[data-key="k"]');
    await card.waitFor();
    await card.getByRole('button', { name: 'Resume', exact: true }).click();
    const dialog = p.getByRole('dialog');
    await dialog.waitFor();
    // Remove the subscription behind the page's back while it asks: the command answers NOT_FOUND.
    await t.client.unsubscribeFromEvents('/refuse/dst', { sourceStreamPath: '/refuse/src', subscriptionKey: 'k' });
    await dialog.getByRole('button', { name: 'Resume', exact: true }).click();
    await expect.poll(() => dialog.getByTestId('dialog-error').locator('.error-code').textContent()).toBe('NOT_FOUND');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => p.getByRole('dialog').count()).toBe(0);
    // The next state read no longer has the subscription: the lane empties.
    await expect.poll(() => p.getByTestId('halted-lane').isHidden()).toBe(true);
  });

  it('describes every kind of receiver in the subscriptions table', async () => {
    const configure = (payload: NonNullable<AppendEvent['payload']>) =>
      t.client.append('/kinds/src', { type: 'events.iterate.com/stream/subscription-configured', payload });
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
    await t.client.subscribeToEventsFrom('/kinds/copy', { sourceStreamPath: '/kinds/src', subscriptionKey: 'mirror', jsonataTransform: '{"payload": {"n": 1}}' });

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
    // No processor host is connected, so the wake halts; each failed wake is an attempt at the event
    // it was for (protocol §22.2), so its card names that event and lists the attempts.
    const agent = p.getByTestId('halted-lane').locator('article[data-key="agent"]');
    await expect.poll(() => agent.getByTestId('failed-label').textContent(), { timeout: 10_000 }).toBe('Failed delivering the events from #1 events.iterate.com/stream/created');
    const rows = agent.locator('[data-testid="attempts-table"] tbody tr');
    await expect.poll(() => rows.count()).toBeGreaterThan(0);
    expect(await agent.locator('[data-testid="attempts-table"] tbody tr:not([data-outcome="unavailable"])').count()).toBe(0);
    await shot(p, 'receivers.png');
  });
});
