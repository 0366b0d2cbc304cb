/**
 * One stream's page: vitals, the halted lane, subscriptions, the live feed, the composer, inbound
 * copies and live connections. `:state` is re-read every second and right after any live event,
 * so halts, lag and retries show up without a reload.
 */
import type { CommittedEvent, RivuletClient, StreamStateResponse } from '@rivulet/client';
import { errorBox, every, isAbort } from '../common.js';
import { h, mount } from '../dom.js';
import { formatDuration, shortId } from '../format.js';
import { Composer } from './composer.js';
import { EventFeed } from './feed.js';
import { DeliveryView } from './subscriptions.js';

export interface StreamViewHooks {
  /** Something was appended here (the tree may have a new stream or a new head); called often, so throttle. */
  onAppended(): void;
}

export class StreamView {
  readonly element: HTMLElement;
  private readonly vitals: HTMLElement;
  private readonly problem: HTMLElement;
  private readonly delivery: DeliveryView;
  private readonly feed: EventFeed;
  private readonly controller = new AbortController();
  private state: StreamStateResponse | undefined;
  private refreshing: Promise<void> | undefined;
  private again = false;
  private soon: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly client: RivuletClient,
    private readonly path: string,
    private readonly hooks: StreamViewHooks,
  ) {
    this.vitals = h('dl', { class: 'vitals', 'data-testid': 'vitals' });
    this.problem = h('div');
    this.delivery = new DeliveryView(client, path, { refresh: () => this.refreshSoon(0) });
    this.feed = new EventFeed(client, path, { onLiveEvent: (e) => this.onLiveEvent(e) });
    const composer = new Composer(client, path, {
      onAppended: () => {
        this.refreshSoon(0);
        this.hooks.onAppended();
      },
    });
    this.element = h(
      'div',
      { class: 'stream-view' },
      h('header', { class: 'stream-head' }, h('h1', { 'data-testid': 'stream-title' }, path), this.vitals),
      this.problem,
      this.delivery.lane,
      this.delivery.subscriptions,
      h('div', { class: 'pair' }, this.delivery.inbound, this.delivery.connections),
      h(
        'div',
        { class: 'columns' },
        h('div', { class: 'col-main' }, this.feed.element),
        h('div', { class: 'col-side' }, composer.element),
      ),
    );
    this.renderVitals();
  }

  start(): void {
    const signal = this.controller.signal;
    this.feed.start(signal);
    every(1000, signal, () => this.refresh());
  }

  stop(): void {
    clearTimeout(this.soon);
    this.controller.abort();
  }

  private onLiveEvent(_event: CommittedEvent): void {
    this.hooks.onAppended();
    this.refreshSoon(100);
  }

  private refreshSoon(ms: number): void {
    clearTimeout(this.soon);
    this.soon = setTimeout(() => void this.refresh(), ms);
  }

  /** One read at a time; a request made meanwhile runs once more right after. */
  private refresh(): Promise<void> {
    if (this.refreshing) {
      this.again = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.again = false;
        await this.readState();
      } while (this.again && !this.controller.signal.aborted);
    })().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async readState(): Promise<void> {
    const signal = this.controller.signal;
    try {
      const state = await this.client.state(this.path, { signal });
      if (signal.aborted) return;
      this.state = state;
      mount(this.problem);
      this.renderVitals();
      this.delivery.update(state);
    } catch (error) {
      if (isAbort(error, signal)) return;
      mount(this.problem, errorBox(error, 'state-error'));
    }
  }

  private renderVitals(): void {
    const core = this.state?.core;
    const runtime = this.state?.runtime;
    if (this.state === undefined) {
      mount(this.vitals, h('span', { class: 'muted' }, 'Loading…'));
      return;
    }
    if (!core) {
      mount(this.vitals, h('span', { class: 'muted' }, 'This stream does not exist yet: append an event to create it.'));
      return;
    }
    const created = Date.parse(core.createdAt);
    const item = (label: string, value: HTMLElement | string, testId: string) =>
      h('div', { class: 'vital' }, h('dt', null, label), h('dd', { 'data-testid': testId }, value));
    mount(
      this.vitals,
      item('streamId', h('code', { title: core.streamId }, shortId(core.streamId)), 'vital-stream-id'),
      item('age', h('span', { title: core.createdAt }, formatDuration(Date.now() - created)), 'vital-age'),
      item('events', String(core.eventCount), 'vital-events'),
      item('head offset', String(runtime?.streamMaxOffset ?? core.maxOffset), 'vital-head'),
      item(
        'state',
        core.paused
          ? h('span', { class: 'badge badge-halted', title: core.pauseReason ?? undefined }, core.pauseReason ? `paused: ${core.pauseReason}` : 'paused')
          : h('span', { class: 'badge badge-healthy' }, 'accepting appends'),
        'vital-paused',
      ),
    );
  }
}
