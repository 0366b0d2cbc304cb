/**
 * The subscriptions page (`#subscriptions?status=…&prefix=…`): every subscription of the project
 * across its streams from the cross-stream listing (protocol §21), halted first, filtered by status
 * and by path prefix. Halted ones also get a card with the event they failed on, their attempts
 * and the repairs; every row can be edited or removed, and "New subscription…" opens the form.
 * Re-read every few seconds; each part is re-drawn only when its rows changed.
 */
import type { CommittedEvent, RivuletClient, SubscriptionListEntry } from '@rivulet/client';
import { LISTING_STATUSES, badge, errorBox, every, isAbort, jsonBlock, streamLink, subscriptionsHref, type ListingStatus } from '../common.js';
import { openDialog } from '../dialog.js';
import { h, keepFocus, mount } from '../dom.js';
import { readUpTo } from '../listing.js';
import { haltDetails } from './halt-details.js';
import { confirmRemove, openSubscriptionForm } from './subscription-form.js';

/** Rows read per visit; more are announced, not drawn (narrow the filter). */
const MAX_ROWS = 1000;

export class SubscriptionsPage {
  readonly element: HTMLElement;
  private readonly lane: HTMLElement;
  private readonly laneCards: HTMLElement;
  private readonly body: HTMLElement;
  private readonly summary: HTMLElement;
  private readonly result: HTMLElement;
  private readonly prefixInput: HTMLInputElement;
  private readonly controller = new AbortController();
  private signatures = { lane: '', table: '' };

  constructor(
    private readonly client: RivuletClient,
    private readonly statuses: readonly ListingStatus[],
    private readonly prefix: string,
  ) {
    this.prefixInput = h('input', { id: 'subs-prefix', type: 'search', value: prefix, placeholder: '/shop', autocomplete: 'off', spellcheck: 'false' });
    const boxes = LISTING_STATUSES.map((s) =>
      h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'status', value: s, checked: statuses.includes(s), 'data-testid': `status-${s}` }), ' ', badge(s, s)),
    );
    const filters = h(
      'form',
      {
        class: 'subs-filters',
        'aria-label': 'Filter subscriptions',
        onchange: (e) => {
          if ((e.target as HTMLElement).getAttribute('name') === 'status') this.navigate(filters);
        },
        onsubmit: (e) => {
          e.preventDefault();
          this.navigate(filters);
        },
      },
      h('fieldset', { class: 'status-filter' }, h('legend', { class: 'label' }, 'Status'), boxes),
      h('div', { class: 'field prefix-filter' }, h('label', { for: 'subs-prefix' }, 'Path prefix ', h('span', { class: 'muted' }, '(Enter)')), this.prefixInput),
    );
    this.summary = h('div', { class: 'muted small subs-summary', 'data-testid': 'subs-summary', 'aria-live': 'polite' }, 'Loading subscriptions…');
    this.result = h('div', { class: 'action-result', 'data-testid': 'action-result', 'aria-live': 'polite' });
    this.laneCards = h('div', { class: 'lane-cards' });
    this.lane = h(
      'section',
      { class: 'lane-halted', 'aria-labelledby': 'all-lane-title', 'data-testid': 'halted-lane', hidden: true },
      h('h2', { id: 'all-lane-title' }, 'Halted'),
      h('p', { class: 'small' }, 'Delivery stopped after repeated failures; matching events are held until the subscription is resumed.'),
      this.laneCards,
    );
    this.body = h('div', { class: 'table-wrap' });
    this.element = h(
      'div',
      { class: 'subs-page' },
      h(
        'header',
        { class: 'subs-page-head' },
        h('h1', null, 'Subscriptions'),
        h('button', { type: 'button', class: 'btn btn-primary', 'data-testid': 'new-subscription', onclick: () => openSubscriptionForm(client, {}, (t, e) => this.showResult(t, e)) }, 'New subscription…'),
      ),
      filters,
      this.result,
      this.summary,
      this.lane,
      h('section', { class: 'panel', 'aria-label': 'All subscriptions' }, this.body),
    );
  }

  start(): void {
    every(3000, this.controller.signal, () => this.refresh());
  }

  stop(): void {
    this.controller.abort();
  }

  private navigate(form: HTMLFormElement): void {
    const statuses = [...form.querySelectorAll<HTMLInputElement>('input[name="status"]:checked')].map((i) => i.value as ListingStatus);
    window.location.hash = subscriptionsHref({ statuses, prefix: this.prefixInput.value.trim() });
  }

  private async refresh(): Promise<void> {
    const signal = this.controller.signal;
    try {
      const { rows, more } = await readUpTo(
        this.client.listAllSubscriptions({
          signal,
          limit: 500,
          ...(this.statuses.length > 0 ? { status: this.statuses } : {}),
          ...(this.prefix !== '' ? { prefix: this.prefix } : {}),
        }),
        MAX_ROWS,
      );
      if (signal.aborted) return;
      this.render(rows, more);
    } catch (error) {
      if (isAbort(error, signal)) return;
      mount(this.summary, errorBox(error, 'subs-error'));
    }
  }

  private render(rows: SubscriptionListEntry[], more: boolean): void {
    const halted = rows.filter((r) => r.status === 'halted');
    const filtered = this.statuses.length > 0 || this.prefix !== '';
    this.summary.textContent =
      rows.length === 0
        ? filtered
          ? 'No subscriptions match these filters.'
          : 'No subscriptions yet. A subscription lives on its source stream: “New subscription…” configures one.'
        : `${rows.length}${more ? '+' : ''} subscription${rows.length === 1 ? '' : 's'}, ${halted.length} halted${more ? ' (the first 1000 are shown: narrow the filter)' : ''}.`;
    const laneSignature = JSON.stringify(halted);
    if (laneSignature !== this.signatures.lane) {
      this.signatures.lane = laneSignature;
      this.lane.hidden = halted.length === 0;
      keepFocus(this.laneCards, () => mount(this.laneCards, halted.map((r) => this.card(r))));
    }
    const tableSignature = JSON.stringify(rows);
    if (tableSignature !== this.signatures.table) {
      this.signatures.table = tableSignature;
      keepFocus(this.body, () => mount(this.body, rows.length === 0 ? null : this.table(rows)));
    }
  }

  private card(row: SubscriptionListEntry): HTMLElement {
    const halt = row.deliveryHalted!;
    const id = `${row.sourcePath} ${row.subscriptionKey}`;
    return h(
      'article',
      { class: 'halted-card', 'data-source': row.sourcePath, 'data-key': row.subscriptionKey, 'aria-label': `Halted subscription ${row.subscriptionKey} of ${row.sourcePath}` },
      h('div', { class: 'halted-title' }, h('strong', { class: 'sub-key' }, row.subscriptionKey), ' on ', streamLink(row.sourcePath, row.sourcePath, `card:${id}`), ' → ', targetView(row)),
      h(
        'dl',
        { class: 'facts' },
        h('div', null, h('dt', null, 'stopped after offset'), h('dd', { 'data-testid': 'halt-after' }, String(halt.afterOffset))),
        h('div', null, h('dt', null, 'attempts'), h('dd', null, String(halt.attempts))),
      ),
      halt.error ? h('pre', { class: 'halt-error', 'data-testid': 'halt-error' }, halt.error) : null,
      haltDetails(this.client, row.sourcePath, row.subscriptionKey, halt, undefined),
      h(
        'div',
        { class: 'halted-actions' },
        h('button', { type: 'button', class: 'btn btn-primary', 'data-focus': `resume:${id}`, onclick: () => this.confirmResume(row) }, 'Resume'),
        h('button', { type: 'button', class: 'btn', 'data-focus': `edit-card:${id}`, onclick: () => void this.edit(row) }, 'Edit…'),
      ),
    );
  }

  private confirmResume(row: SubscriptionListEntry): void {
    openDialog({
      title: `Resume “${row.subscriptionKey}”?`,
      body: [h('p', null, `Delivery from ${row.sourcePath} restarts after offset ${row.deliveryHalted?.afterOffset ?? row.acknowledgedOffset}, where it halted, with a fresh retry ladder.`)],
      confirm: 'Resume',
      run: async () => {
        const { event } = await this.client.resumeSubscription(row.sourcePath, { subscriptionKey: row.subscriptionKey });
        if (event) this.showResult(`Resumed “${row.subscriptionKey}” on ${row.sourcePath}.`, event);
      },
    });
  }

  /** The listing has no configuration: the form reads it from the source's state first. */
  private async edit(row: SubscriptionListEntry): Promise<void> {
    try {
      const state = await this.client.state(row.sourcePath);
      const entry = state.core?.subscriptions.outbound.byKey[row.subscriptionKey];
      if (!entry) throw new Error(`“${row.subscriptionKey}” is no longer configured on ${row.sourcePath}`);
      openSubscriptionForm(this.client, { sourcePath: row.sourcePath, key: row.subscriptionKey, configuration: entry.configuration }, (t, e) => this.showResult(t, e));
    } catch (error) {
      mount(this.result, errorBox(error, 'edit-error'));
    }
  }

  private showResult(text: string, event: CommittedEvent): void {
    mount(
      this.result,
      h(
        'div',
        { class: 'notice', role: 'status' },
        h('p', null, text, ` Appended ${event.type.replace('events.iterate.com/stream/', '')} at offset ${event.offset}.`),
        h('details', null, h('summary', null, `#${event.offset} ${event.type}`), jsonBlock(event, { 'data-testid': 'action-event' })),
        h('button', { type: 'button', class: 'btn btn-small', onclick: () => mount(this.result) }, 'Dismiss'),
      ),
    );
    void this.refresh();
  }

  private table(rows: SubscriptionListEntry[]): HTMLElement {
    const columns: [string, string][] = [
      ['Status', '8%'],
      ['Source', '15%'],
      ['Key', '13%'],
      ['Action · target', '22%'],
      ['Cursor', '6%'],
      ['Lag', '5%'],
      ['Attempt', '7%'],
      ['Last error', '24%'],
    ];
    return h(
      'table',
      { class: 'grid subs fixed', 'data-testid': 'all-subscriptions' },
      h('colgroup', null, columns.map(([, width]) => h('col', { style: `width: ${width}` }))),
      h('thead', null, h('tr', null, columns.map(([t]) => h('th', { scope: 'col', title: t }, t)))),
      h(
        'tbody',
        null,
        rows.map((r) => {
          const id = `${r.sourcePath} ${r.subscriptionKey}`;
          return h(
            'tr',
            { 'data-source': r.sourcePath, 'data-key': r.subscriptionKey, 'data-status': r.status },
            h('td', null, badge(r.status, r.status)),
            h('td', null, h('div', { class: 'clip' }, streamLink(r.sourcePath, r.sourcePath, `row:${id}`))),
            h(
              'td',
              null,
              h('div', { class: 'clip sub-key', title: r.subscriptionKey }, r.subscriptionKey),
              h(
                'div',
                { class: 'row-actions' },
                h('button', { type: 'button', class: 'link-btn', 'data-focus': `edit:${id}`, onclick: () => void this.edit(r) }, 'Edit'),
                h('button', { type: 'button', class: 'link-btn', 'data-focus': `remove:${id}`, onclick: () => confirmRemove(this.client, r.sourcePath, r.subscriptionKey, (t, e) => this.showResult(t, e)) }, 'Remove'),
              ),
            ),
            h('td', null, targetView(r)),
            h('td', { class: 'num', 'data-testid': 'cursor' }, String(r.acknowledgedOffset)),
            h('td', { class: 'num', 'data-testid': 'lag' }, String(r.lag)),
            h('td', { class: 'num' }, String(r.attempt)),
            h('td', { class: 'last-error', 'data-testid': 'last-error' }, r.lastError ? h('span', { class: 'clip', title: r.lastError }, r.lastError) : h('span', { class: 'muted' }, '—')),
          );
        }),
      ),
    );
  }
}

const ACTION_KIND = { 'copy-to-stream': 'copy', 'webhook-post': 'webhook', 'itx-call': 'itx', 'processor-wake': 'processor' } as const;

function targetView(row: SubscriptionListEntry): HTMLElement {
  const kind = ACTION_KIND[row.action];
  return h(
    'span',
    { class: 'action clip', title: `${row.action} ${row.target}` },
    badge(kind, `action-${kind}`),
    ' ',
    row.action === 'copy-to-stream' ? streamLink(row.target) : h('code', null, row.target),
  );
}
