/**
 * The live event feed of one stream: the latest page is read first (ephemeral events included
 * while they are retained), then client.tail follows over SSE from the head that page saw, so
 * nothing falls between the two. Rows are built once per event and kept; the order toggle and the
 * type filter only move or hide them, so an expanded row stays expanded.
 */
import type { CommittedEvent, RivuletClient } from '@rivulet/client';
import { badge, errorBox, isAbort } from '../common.js';
import { h, mount } from '../dom.js';
import { formatClock, jsonPreview } from '../format.js';

const PAGE = 100;
/** Rows kept in the page; the oldest are dropped beyond it. */
const MAX_ROWS = 2000;
const ORDER_KEY = 'rivulet.ui.feedOrder';

type Order = 'newest' | 'oldest';

interface Row {
  event: CommittedEvent;
  element: HTMLLIElement;
}

export interface FeedHooks {
  /** Every event that arrives live (the stream view refreshes its state on them). */
  onLiveEvent(event: CommittedEvent): void;
}

export class EventFeed {
  readonly element: HTMLElement;
  private readonly list: HTMLOListElement;
  private readonly status: HTMLElement;
  private readonly count: HTMLElement;
  private readonly orderButton: HTMLButtonElement;
  private readonly filterInput: HTMLInputElement;
  private readonly typeList: HTMLDataListElement;
  private readonly olderButton: HTMLButtonElement;
  private readonly empty: HTMLElement;
  private readonly problem: HTMLElement;
  private readonly notice: HTMLElement;
  private readonly rows = new Map<number, Row>();
  private readonly types = new Set<string>();
  private order: Order;
  private oldestOffset = Number.POSITIVE_INFINITY;
  private newestOffset = 0;
  private signal: AbortSignal | undefined;

  constructor(
    private readonly client: RivuletClient,
    private readonly path: string,
    private readonly hooks: FeedHooks,
  ) {
    this.order = localStorage.getItem(ORDER_KEY) === 'oldest' ? 'oldest' : 'newest';
    this.status = h('span', { class: 'live-status', 'data-state': 'connecting', 'data-testid': 'feed-status', 'aria-live': 'polite' }, 'connecting…');
    this.count = h('span', { class: 'muted small' });
    this.orderButton = h('button', { type: 'button', class: 'btn btn-small', 'data-testid': 'feed-order', onclick: () => this.toggleOrder() });
    this.typeList = h('datalist', { id: 'feed-types' });
    this.filterInput = h('input', {
      type: 'search',
      id: 'feed-filter',
      list: 'feed-types',
      placeholder: 'Filter by type',
      autocomplete: 'off',
      oninput: () => this.applyFilter(),
    });
    this.list = h('ol', { class: 'feed', 'data-testid': 'feed', 'aria-label': 'Events' });
    this.empty = h('p', { class: 'muted feed-empty' }, 'No events yet.');
    this.problem = h('div', { class: 'feed-problem' });
    this.notice = h('div', { class: 'feed-notice' });
    this.olderButton = h('button', { type: 'button', class: 'btn btn-small', hidden: true, onclick: () => void this.loadOlder() }, 'Load older events');
    this.element = h(
      'section',
      { class: 'panel feed-panel', 'aria-labelledby': 'feed-title' },
      h(
        'div',
        { class: 'panel-head' },
        h('h2', { id: 'feed-title' }, 'Events ', this.count),
        this.status,
        h(
          'div',
          { class: 'feed-controls' },
          h('label', { for: 'feed-filter', class: 'sr-only' }, 'Filter events by type'),
          this.filterInput,
          this.typeList,
          this.orderButton,
        ),
      ),
      this.problem,
      this.notice,
      this.list,
      this.empty,
      this.olderButton,
    );
    this.renderOrderButton();
  }

  start(signal: AbortSignal): void {
    this.signal = signal;
    void this.run(signal);
  }

  private async run(signal: AbortSignal): Promise<void> {
    try {
      // The head first, then the latest page below it, then live from that page's head.
      const probe = await this.client.getEvents(this.path, { limit: 1, signal });
      const page = await this.client.getEvents(this.path, {
        afterOffset: Math.max(0, probe.streamMaxOffset - PAGE),
        includeEphemeral: true,
        signal,
      });
      for (const event of page.events) this.add(event);
      this.oldestOffset = page.events[0]?.offset ?? page.streamMaxOffset + 1;
      this.olderButton.hidden = this.oldestOffset <= 1 || page.streamMaxOffset === 0;
      this.updateEmpty();
      await this.follow(page.streamMaxOffset, signal);
    } catch (error) {
      if (isAbort(error, signal)) return;
      this.setStatus('error', 'stopped');
      mount(this.problem, errorBox(error, 'feed-error'));
    }
  }

  private async follow(afterOffset: number, signal: AbortSignal): Promise<void> {
    let destroyed = false;
    const events = this.client.tail(this.path, {
      afterOffset,
      signal,
      onOpen: () => {
        this.setStatus('live', 'live');
        mount(this.problem);
      },
      onReconnect: (info) => this.setStatus('reconnecting', `reconnecting (attempt ${info.attempt})…`),
      onDestroyed: () => {
        destroyed = true;
      },
    });
    for await (const event of events) {
      this.add(event);
      this.updateEmpty();
      this.hooks.onLiveEvent(event);
    }
    if (destroyed && !signal.aborted) {
      // The stream's lifetime ended: start over on the next one (offsets restart at 1).
      this.clear();
      mount(this.notice, h('p', { class: 'notice', role: 'status' }, `This stream was destroyed at ${formatClock(Date.now())}; showing its next lifetime.`));
      this.setStatus('connecting', 'connecting…');
      await this.follow(0, signal);
    }
  }

  private async loadOlder(): Promise<void> {
    const signal = this.signal;
    if (!signal || this.oldestOffset <= 1) return;
    this.olderButton.disabled = true;
    try {
      const page = await this.client.getEvents(this.path, {
        afterOffset: Math.max(0, this.oldestOffset - 1 - PAGE),
        beforeOffset: this.oldestOffset,
        includeEphemeral: true,
        signal,
      });
      for (const event of page.events) this.add(event);
      this.oldestOffset = Math.max(0, this.oldestOffset - PAGE);
      this.olderButton.hidden = this.oldestOffset <= 1;
      this.updateEmpty();
    } catch (error) {
      if (!isAbort(error, signal)) mount(this.problem, errorBox(error, 'feed-error'));
    } finally {
      this.olderButton.disabled = false;
    }
  }

  private clear(): void {
    this.rows.clear();
    this.list.replaceChildren();
    this.oldestOffset = Number.POSITIVE_INFINITY;
    this.newestOffset = 0;
    this.olderButton.hidden = true;
    this.updateEmpty();
  }

  private add(event: CommittedEvent): void {
    if (this.rows.has(event.offset)) return;
    const element = this.row(event);
    const row = { event, element };
    this.rows.set(event.offset, row);
    if (!this.types.has(event.type)) {
      this.types.add(event.type);
      this.typeList.appendChild(h('option', { value: event.type }));
    }
    element.hidden = !this.matches(event);
    // Place the row by offset: live events land at the newest end, older pages at the other.
    if (event.offset > this.newestOffset) {
      if (this.order === 'newest') this.list.prepend(element);
      else this.list.appendChild(element);
    } else {
      const sibling = this.neighbour(event.offset);
      if (sibling) this.list.insertBefore(element, sibling);
      else this.list.appendChild(element);
    }
    this.newestOffset = Math.max(this.newestOffset, event.offset);
    this.trim();
  }

  /** The row this one goes before in the current order, or undefined for the end. */
  private neighbour(offset: number): HTMLLIElement | undefined {
    let best: Row | undefined;
    for (const row of this.rows.values()) {
      if (row.event.offset === offset || !row.element.isConnected) continue;
      const after = this.order === 'newest' ? row.event.offset < offset : row.event.offset > offset;
      if (!after) continue;
      if (!best || (this.order === 'newest' ? row.event.offset > best.event.offset : row.event.offset < best.event.offset)) best = row;
    }
    return best?.element;
  }

  private trim(): void {
    while (this.rows.size > MAX_ROWS) {
      const oldest = Math.min(...this.rows.keys());
      this.rows.get(oldest)?.element.remove();
      this.rows.delete(oldest);
      this.oldestOffset = oldest + 1;
      this.olderButton.hidden = false;
    }
  }

  private row(event: CommittedEvent): HTMLLIElement {
    const hop = event.source?.copiedFrom.at(-1);
    const platform = event.type.startsWith('events.iterate.com/stream/');
    const alarming = /\/stream\/(subscription-delivery-halted|error-occurred)$/.test(event.type);
    let json: HTMLPreElement | undefined;
    const head: HTMLButtonElement = h(
      'button',
      {
        type: 'button',
        class: 'event-head',
        'aria-expanded': 'false',
        onclick: () => {
          const open = head.getAttribute('aria-expanded') !== 'true';
          head.setAttribute('aria-expanded', String(open));
          if (open && !json) {
            json = h('pre', { class: 'json event-json', 'data-testid': 'event-json' }, JSON.stringify(event, null, 2));
            li.appendChild(json);
          }
          if (json) json.hidden = !open;
        },
      },
      h('span', { class: 'event-offset' }, `#${event.offset}`),
      h('time', { class: 'event-time', datetime: event.createdAt, title: event.createdAt }, formatClock(event.createdAt)),
      h('span', { class: `event-type${platform ? ' event-type-platform' : ''}${alarming ? ' event-type-alarm' : ''}` }, event.type),
      event.ephemeral ? badge('ephemeral', 'ephemeral', 'Ephemeral: live only, never delivered by subscriptions, pruned after 10 minutes') : null,
      hop ? badge(`copied from ${hop.path} #${hop.offset}`, 'copy', `copied by subscription "${hop.subscriptionKey}" of ${hop.path}`) : null,
      h('span', { class: 'event-preview' }, jsonPreview(event.payload)),
    );
    const li = h(
      'li',
      { class: `event${event.ephemeral ? ' event-ephemeral' : ''}`, 'data-offset': event.offset, 'data-type': event.type },
      head,
    );
    return li;
  }

  private matches(event: CommittedEvent): boolean {
    const needle = this.filterInput.value.trim().toLowerCase();
    return needle === '' || event.type.toLowerCase().includes(needle);
  }

  private applyFilter(): void {
    for (const row of this.rows.values()) row.element.hidden = !this.matches(row.event);
    this.updateEmpty();
  }

  private toggleOrder(): void {
    this.order = this.order === 'newest' ? 'oldest' : 'newest';
    localStorage.setItem(ORDER_KEY, this.order);
    const sorted = [...this.rows.values()].sort((a, b) =>
      this.order === 'newest' ? b.event.offset - a.event.offset : a.event.offset - b.event.offset,
    );
    this.list.replaceChildren(...sorted.map((r) => r.element));
    this.renderOrderButton();
  }

  private renderOrderButton(): void {
    this.list.dataset.order = this.order;
    this.orderButton.textContent = this.order === 'newest' ? 'Newest first ↓' : 'Oldest first ↑';
    this.orderButton.title = 'Switch the order of the feed';
    this.orderButton.setAttribute('aria-label', `Order: ${this.order} first. Switch order`);
  }

  private updateEmpty(): void {
    const visible = [...this.rows.values()].filter((r) => !r.element.hidden).length;
    this.count.textContent = this.rows.size === 0 ? '' : visible === this.rows.size ? `(${this.rows.size})` : `(${visible} of ${this.rows.size})`;
    this.empty.hidden = visible > 0;
    this.empty.textContent = this.rows.size === 0 ? 'No events yet. Append one below or through the API.' : 'No event matches the filter.';
  }

  private setStatus(state: string, text: string): void {
    this.status.dataset.state = state;
    this.status.textContent = text;
  }
}
