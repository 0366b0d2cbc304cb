/**
 * Delivery on one stream, from its `:state` (core + runtime):
 * - the halted lane: every halted subscription in red, with afterOffset, attempts and error, and
 *   the two repairs (Resume; Set cursor and resume), each confirmed in a dialog first, the
 *   resulting events shown afterwards;
 * - the subscriptions table: one row per durable subscription on this (source) stream;
 * - inbound records (copies this stream received) and live connections.
 * Each part is rebuilt only when its slice of the state changed.
 */
import type { CommittedEvent, RivuletClient, StreamStateResponse } from '@rivulet/client';
import { badge, jsonBlock, streamLink } from '../common.js';
import { openDialog } from '../dialog.js';
import { haltDetails } from './halt-details.js';
import { confirmRemove, openSubscriptionForm } from './subscription-form.js';
import { h, keepFocus, mount, type Child } from '../dom.js';
import {
  deliverySettings,
  describeAction,
  describeFilter,
  formatClock,
  formatRelative,
  jsonPreview,
  shortId,
  subscriptionStatus,
  type ConnectionRuntime,
  type InboundRecord,
  type OutboundEntry,
  type SubscriptionRuntime,
} from '../format.js';

export interface DeliveryHooks {
  /** After a repair: re-read the state at once. */
  refresh(): void;
}

const STATUS_TEXT = {
  halted: 'halted',
  retrying: 'retrying',
  lagging: 'lagging',
  healthy: 'healthy',
  pending: 'starting',
} as const;

export class DeliveryView {
  readonly lane: HTMLElement;
  readonly subscriptions: HTMLElement;
  readonly inbound: HTMLElement;
  readonly connections: HTMLElement;
  private readonly laneBody: HTMLElement;
  private readonly actionResult: HTMLElement;
  private readonly tableBody: HTMLElement;
  private readonly inboundBody: HTMLElement;
  private readonly connectionsBody: HTMLElement;
  private readonly signatures = { lane: '', table: '', inbound: '', connections: '' };
  private head = 0;

  constructor(
    private readonly client: RivuletClient,
    private readonly path: string,
    private readonly hooks: DeliveryHooks,
  ) {
    this.laneBody = h('div', { class: 'lane-cards' });
    this.lane = h(
      'section',
      { class: 'lane-halted', 'aria-labelledby': 'lane-title', 'data-testid': 'halted-lane', hidden: true },
      h('h2', { id: 'lane-title' }, 'Halted subscriptions'),
      h('p', { class: 'small' }, 'Delivery stopped after repeated failures; new matching events are held until the subscription is resumed.'),
      this.laneBody,
    );
    this.actionResult = h('div', { class: 'action-result', 'data-testid': 'action-result', 'aria-live': 'polite' });
    this.tableBody = h('div', { class: 'table-wrap' });
    this.subscriptions = h(
      'section',
      { class: 'panel', 'aria-labelledby': 'subs-title' },
      h(
        'div',
        { class: 'panel-head' },
        h('h2', { id: 'subs-title' }, 'Subscriptions from this stream'),
        h('button', { type: 'button', class: 'btn btn-small', 'data-testid': 'new-subscription', onclick: () => this.create() }, 'New subscription…'),
      ),
      this.actionResult,
      this.tableBody,
    );
    this.inboundBody = h('div', { class: 'table-wrap' });
    this.inbound = h(
      'section',
      { class: 'panel', 'aria-labelledby': 'inbound-title' },
      h('div', { class: 'panel-head' }, h('h2', { id: 'inbound-title' }, 'Inbound copies')),
      this.inboundBody,
    );
    this.connectionsBody = h('div', { class: 'table-wrap' });
    this.connections = h(
      'section',
      { class: 'panel', 'aria-labelledby': 'connections-title' },
      h('div', { class: 'panel-head' }, h('h2', { id: 'connections-title' }, 'Live connections')),
      this.connectionsBody,
    );
  }

  update(state: StreamStateResponse): void {
    const outbound = state.core?.subscriptions.outbound.byKey ?? {};
    const runtime = state.runtime?.subscriptions ?? {};
    this.head = state.runtime?.streamMaxOffset ?? state.core?.maxOffset ?? 0;
    const entries = Object.entries(outbound).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

    const halted = entries.filter(([, e]) => e.deliveryHalted);
    this.whenChanged('lane', halted, () => {
      this.lane.hidden = halted.length === 0;
      keepFocus(this.laneBody, () => mount(this.laneBody, halted.map(([key, entry]) => this.haltedCard(key, entry))));
    });
    this.whenChanged('table', [entries, runtime], () => keepFocus(this.tableBody, () => mount(this.tableBody, this.table(entries, runtime))));

    const inbound = Object.entries(state.core?.subscriptions.inbound.bySourcePath ?? {}).flatMap(([source, byKey]) =>
      Object.entries(byKey).map(([key, record]) => ({ source, key, record })),
    );
    this.whenChanged('inbound', inbound, () => keepFocus(this.inboundBody, () => mount(this.inboundBody, this.inboundTable(inbound))));
    const connections = Object.entries(state.runtime?.connections ?? {});
    this.whenChanged('connections', connections, () => mount(this.connectionsBody, this.connectionsTable(connections)));
  }

  private whenChanged(part: keyof DeliveryView['signatures'], value: unknown, render: () => void): void {
    const signature = JSON.stringify(value);
    if (signature === this.signatures[part]) return;
    this.signatures[part] = signature;
    render();
  }

  // ---- halted lane ----

  private haltedCard(key: string, entry: OutboundEntry): HTMLElement {
    const halt = entry.deliveryHalted!;
    const action = describeAction(entry.configuration.receiver);
    return h(
      'article',
      { class: 'halted-card', 'data-key': key, 'aria-label': `Halted subscription ${key}` },
      h('div', { class: 'halted-title' }, h('strong', { class: 'sub-key' }, key), ' ', actionView(action)),
      h(
        'dl',
        { class: 'facts' },
        h('div', null, h('dt', null, 'stopped after offset'), h('dd', { 'data-testid': 'halt-after' }, String(halt.afterOffset))),
        h('div', null, h('dt', null, 'attempts'), h('dd', null, String(halt.attempts))),
      ),
      halt.error ? h('pre', { class: 'halt-error', 'data-testid': 'halt-error' }, halt.error) : null,
      haltDetails(this.client, this.path, key, halt, entry.configuration.filter?.eventTypes),
      h(
        'div',
        { class: 'halted-actions' },
        h('button', { type: 'button', class: 'btn btn-primary', 'data-focus': `resume:${key}`, onclick: () => this.confirmResume(key, halt.afterOffset) }, 'Resume'),
        h('button', { type: 'button', class: 'btn', 'data-focus': `set-cursor:${key}`, onclick: () => void this.confirmSetCursor(key, entry) }, 'Set cursor and resume…'),
      ),
    );
  }

  private confirmResume(key: string, afterOffset: number): void {
    openDialog({
      title: `Resume “${key}”?`,
      body: [
        h('p', null, `Delivery restarts after offset ${afterOffset}, where it halted, with a fresh retry ladder: the event that failed is tried again.`),
      ],
      confirm: 'Resume',
      run: async () => {
        const { event } = await this.client.resumeSubscription(this.path, { subscriptionKey: key });
        this.showResult(event ? `Resumed “${key}”.` : `“${key}” was not halted; nothing was appended.`, event ? [event] : []);
      },
    });
  }

  private async confirmSetCursor(key: string, entry: OutboundEntry): Promise<void> {
    const halt = entry.deliveryHalted!;
    // The next candidate after the cursor (the event that most likely failed), as a hint and default.
    let next: CommittedEvent | undefined;
    try {
      const eventTypes = entry.configuration.filter?.eventTypes;
      const page = await this.client.getEvents(this.path, { afterOffset: halt.afterOffset, limit: 1, ...(eventTypes ? { eventTypes } : {}) });
      next = page.events[0];
    } catch {
      // Only a hint: the dialog works without it.
    }
    const input = h('input', {
      id: 'cursor-offset',
      type: 'number',
      min: 0,
      max: this.head,
      step: 1,
      required: true,
      value: String(next?.offset ?? halt.afterOffset),
      'data-testid': 'cursor-offset',
    });
    openDialog({
      title: `Set the cursor of “${key}” and resume`,
      body: [
        h('p', null, 'The cursor is exclusive: delivery continues with the first matching event after this offset. Events at or below it are not delivered by this subscription.'),
        h('div', { class: 'field' }, h('label', { for: 'cursor-offset' }, `Continue after offset (0–${this.head})`), input),
        next
          ? h('p', { class: 'small muted' }, `It halted after offset ${halt.afterOffset}. The next event is #${next.offset} (${next.type}); ${next.offset} skips it.`)
          : h('p', { class: 'small muted' }, `It halted after offset ${halt.afterOffset}.`),
      ],
      confirm: 'Set cursor and resume',
      focus: input,
      run: async () => {
        const afterOffset = Number(input.value);
        if (!Number.isSafeInteger(afterOffset) || afterOffset < 0) throw new Error('the offset must be a whole number, 0 or more');
        const { cursorSet, resumed } = await this.client.setSubscriptionCursorAndResume(this.path, { subscriptionKey: key, afterOffset });
        this.showResult(`Cursor of “${key}” set to ${afterOffset}${resumed ? ' and delivery resumed' : ''}.`, resumed ? [cursorSet, resumed] : [cursorSet]);
      },
    });
  }

  private showResult(text: string, events: readonly CommittedEvent[]): void {
    mount(
      this.actionResult,
      h(
        'div',
        { class: 'notice', role: 'status' },
        h('p', null, text, ' ', events.map((e) => `Appended ${e.type.replace('events.iterate.com/stream/', '')} at offset ${e.offset}.`).join(' ')),
        events.map((e) => h('details', { open: true }, h('summary', null, `#${e.offset} ${e.type}`), jsonBlock(e, { 'data-testid': 'action-event' }))),
        h('button', { type: 'button', class: 'btn btn-small', onclick: () => mount(this.actionResult) }, 'Dismiss'),
      ),
    );
    this.hooks.refresh();
  }

  // ---- tables ----

  private table(entries: [string, OutboundEntry][], runtime: Record<string, SubscriptionRuntime>): Child {
    if (entries.length === 0) {
      return h('p', { class: 'muted small' }, 'No subscriptions read from this stream. A subscription lives on its source stream: it copies or sends matching events to a receiver.');
    }
    const now = Date.now();
    // Fixed layout: the columns share the panel's width, so the last one never leaves the screen;
    // long cells are cut to two lines with the whole text in their title.
    const columns: [string, string][] = [
      ['Status', '8%'],
      ['Key', '13%'],
      ['Action', '17%'],
      ['Filter · transform', '17%'],
      ['Delivery', '9%'],
      ['Cursor', '6%'],
      ['Lag', '5%'],
      ['Attempt', '9%'],
      ['Last error', '16%'],
    ];
    return h(
      'table',
      { class: 'grid subs fixed', 'data-testid': 'subscriptions' },
      h('colgroup', null, columns.map(([, width]) => h('col', { style: `width: ${width}` }))),
      h('thead', null, h('tr', null, columns.map(([t]) => h('th', { scope: 'col', title: t }, t)))),
      h(
        'tbody',
        null,
        entries.map(([key, entry]) => {
          const run = runtime[key];
          const status = subscriptionStatus(entry, run);
          const settings = deliverySettings(entry.configuration.receiver);
          const lastError = entry.deliveryHalted?.error ?? run?.lastError ?? null;
          const filter = describeFilter(entry.configuration.filter);
          const delivery = settings.start === null ? null : `${settings.start} · ${settings.onFailingEvent ?? 'halt'}`;
          return h(
            'tr',
            { 'data-key': key, 'data-status': status },
            h('td', null, badge(STATUS_TEXT[status], status)),
            h(
              'td',
              null,
              h('div', { class: 'clip sub-key', title: key }, key),
              entry.configuration.description ? h('div', { class: 'clip small muted', title: entry.configuration.description }, entry.configuration.description) : null,
              h(
                'div',
                { class: 'row-actions' },
                h('button', { type: 'button', class: 'link-btn', 'data-focus': `edit:${key}`, onclick: () => this.edit(key, entry) }, 'Edit'),
                h('button', { type: 'button', class: 'link-btn', 'data-focus': `remove:${key}`, onclick: () => this.remove(key) }, 'Remove'),
              ),
            ),
            h('td', null, h('div', { class: 'clip', title: describeAction(entry.configuration.receiver).text }, actionView(describeAction(entry.configuration.receiver), `action:${key}`))),
            h(
              'td',
              null,
              h('code', { class: 'clip', title: filter }, filter),
              settings.transform ? h('code', { class: 'clip transform', title: `transform: ${settings.transform}` }, '→ ', settings.transform) : null,
            ),
            h('td', { class: 'small' }, delivery === null ? dash('a processor keeps its own checkpoint') : h('span', { class: 'clip', title: `start: ${settings.start}; on a failing event: ${settings.onFailingEvent ?? 'halt'}` }, delivery)),
            h('td', { class: 'num', 'data-testid': 'cursor', title: 'acknowledgedOffset: every event up to here is done' }, run ? String(run.acknowledgedOffset) : dash()),
            h('td', { class: 'num', 'data-testid': 'lag' }, run ? String(run.lag) : dash()),
            h('td', { class: 'small' }, retryText(run, now)),
            h('td', { class: 'last-error', 'data-testid': 'last-error' }, lastError ? h('span', { class: 'clip', title: lastError }, lastError) : dash()),
          );
        }),
      ),
    );
  }

  private edit(key: string, entry: OutboundEntry): void {
    openSubscriptionForm(this.client, { sourcePath: this.path, key, configuration: entry.configuration }, (text, event) => this.showResult(text, [event]));
  }

  private remove(key: string): void {
    confirmRemove(this.client, this.path, key, (text, event) => this.showResult(text, [event]));
  }

  /** "New subscription…": the form, with this stream as the source. */
  create(): void {
    openSubscriptionForm(this.client, { sourcePath: this.path }, (text, event) => this.showResult(text, [event]));
  }

  private inboundTable(rows: { source: string; key: string; record: InboundRecord }[]): Child {
    if (rows.length === 0) return h('p', { class: 'muted small' }, 'No copies received from other streams.');
    return h(
      'table',
      { class: 'grid', 'data-testid': 'inbound' },
      h('thead', null, h('tr', null, ['Source', 'Key', 'Stamp', 'Received', 'Last received'].map((t) => h('th', { scope: 'col' }, t)))),
      h(
        'tbody',
        null,
        rows.map(({ source, key, record }) =>
          h(
            'tr',
            null,
            h('td', null, streamLink(source, source, `from:${source}:${key}`)),
            h('td', null, h('span', { class: 'sub-key' }, key)),
            h(
              'td',
              { class: 'small', title: `streamId ${record.streamId}\nstreamCreatedAt ${record.streamCreatedAt}\ncursorChangedAtSourceOffset ${record.cursorChangedAtSourceOffset}` },
              h('code', null, shortId(record.streamId)),
              ` · created ${formatClock(record.streamCreatedAt)} · run @${record.cursorChangedAtSourceOffset}`,
            ),
            h('td', { class: 'num' }, String(record.numEventsReceived)),
            h('td', null, record.lastEventReceivedAt ? timeView(record.lastEventReceivedAt) : dash()),
          ),
        ),
      ),
    );
  }

  private connectionsTable(rows: [string, ConnectionRuntime][]): Child {
    if (rows.length === 0) return h('p', { class: 'muted small' }, 'No live connections.');
    // Known fields first, then whatever else the server reports, so new counters show up as they land.
    const known = ['kind', 'startedAt', 'deliveredThroughOffset', 'lag', 'batchesSent', 'eventsSent'];
    const extra = [...new Set(rows.flatMap(([, c]) => Object.keys(c)))].filter((k) => !known.includes(k));
    const columns = [...known, ...extra];
    return h(
      'table',
      { class: 'grid', 'data-testid': 'connections' },
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Key'), columns.map((c) => h('th', { scope: 'col' }, c)))),
      h(
        'tbody',
        null,
        rows.map(([key, connection]) =>
          h(
            'tr',
            null,
            h('td', null, h('span', { class: 'sub-key' }, key)),
            columns.map((c) => {
              const value = (connection as unknown as Record<string, unknown>)[c];
              if (value === undefined || value === null) return h('td', null, dash());
              if (c.endsWith('At') && typeof value === 'string') return h('td', null, timeView(value));
              return h('td', { class: typeof value === 'number' ? 'num' : null }, typeof value === 'object' ? jsonPreview(value, 60) : String(value));
            }),
          ),
        ),
      ),
    );
  }
}

function actionView(action: ReturnType<typeof describeAction>, focusKey?: string): HTMLElement {
  return h(
    'span',
    { class: 'action' },
    badge(action.kind, `action-${action.kind}`),
    ' ',
    action.streamPath ? h('span', null, 'copy to ', streamLink(action.streamPath, action.streamPath, focusKey)) : h('code', { class: 'wrap' }, action.text.replace(/^(itx|processor) /, '')),
  );
}

function retryText(run: SubscriptionRuntime | undefined, now: number): Child {
  if (!run) return dash();
  const parts: Child[] = [String(run.attempt)];
  if (run.inFlightDeadlineAt !== null) parts.push(' · in flight');
  else if (run.nextAttemptAt !== null) {
    parts.push(' · ', h('time', { datetime: new Date(run.nextAttemptAt).toISOString(), title: new Date(run.nextAttemptAt).toISOString() }, `${formatClock(run.nextAttemptAt)} (${formatRelative(run.nextAttemptAt, now)})`));
  }
  return h('span', null, parts);
}

function timeView(iso: string): HTMLElement {
  return h('time', { datetime: iso, title: iso }, formatClock(iso));
}

function dash(title?: string): HTMLElement {
  return h('span', { class: 'muted', title }, '—');
}
