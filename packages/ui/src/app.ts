/**
 * The page: a header (server, throughput, connection settings), the stream tree on the left and
 * either the overview or one stream's view on the right. The route is the location hash
 * (`#/shop/orders`), so any path works, including ones with dots in them.
 */
import type { RivuletClient, StreamListEntry } from '@rivulet/client';
import { errorBox, errorInfo, every, hrefFor, parseRoute, subscriptionsHref } from './common.js';
import { h, keepFocus, mount } from './dom.js';
import { formatDuration, worstStatusByStream } from './format.js';
import { haltedBadge, readUpTo } from './listing.js';
import { clientFor, loadSettings, saveSettings, serverUrl, type Settings } from './settings.js';
import { StreamTree } from './views/stream-tree.js';
import { StreamView } from './views/stream-view.js';
import { SubscriptionsPage } from './views/subscriptions-page.js';
import { ThroughputChart } from './views/throughput.js';

/** Subscriptions read for the badge and the tree's dots every 2 s; streams past them get no dot. */
const MAX_LISTED = 5000;

export class App {
  private readonly settings: Settings;
  private readonly client: RivuletClient;
  private readonly tree: StreamTree;
  private readonly content: HTMLElement;
  private readonly status: HTMLElement;
  private readonly controller = new AbortController();
  private view: StreamView | SubscriptionsPage | undefined;
  private readonly halted: HTMLAnchorElement;
  private settingsProblem: unknown;
  private treeTimer: ReturnType<typeof setTimeout> | undefined;
  private overviewController: AbortController | undefined;

  constructor(private readonly root: HTMLElement) {
    this.settings = loadSettings();
    let client: RivuletClient;
    try {
      client = clientFor(this.settings);
    } catch (error) {
      // A bad saved URL: fall back to this page's server and say so.
      this.settingsProblem = error;
      client = clientFor({ ...this.settings, url: '' });
    }
    this.client = client;
    this.status = h('span', { class: 'server-status', 'data-state': 'unknown', 'aria-live': 'polite' }, 'connecting…');
    this.tree = new StreamTree(client, {
      onStatus: (error) => this.setServerStatus(error),
      onOpen: (path) => {
        window.location.hash = hrefFor(path);
      },
    });
    this.content = h('main', { class: 'content', id: 'content', tabindex: '-1' });
    this.halted = h('a', { class: 'halted-count', href: subscriptionsHref({ statuses: ['halted'] }), 'data-testid': 'halted-count', hidden: true });
  }

  start(): void {
    const chart = new ThroughputChart(this.client);
    const header = h(
      'header',
      { class: 'topbar' },
      h('a', { href: '#', class: 'brand' }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }, '≈'), 'Rivulet'),
      h('span', { class: 'server muted small', title: 'Server' }, serverUrl(this.settings), this.settings.projectId ? ` · project ${this.settings.projectId}` : ''),
      this.status,
      h('span', { class: 'spacer' }),
      h('a', { href: subscriptionsHref(), class: 'nav-link', 'data-testid': 'subscriptions-link' }, 'Subscriptions'),
      this.halted,
      chart.element,
      h('button', { type: 'button', class: 'btn', onclick: () => this.openSettings() }, 'Connection…'),
    );
    mount(
      this.root,
      h('a', { href: '#content', class: 'skip-link' }, 'Skip to content'),
      header,
      h('div', { class: 'layout' }, this.tree.element, this.content),
    );
    chart.start(this.controller.signal);
    this.tree.start(this.controller.signal);
    every(2000, this.controller.signal, () => this.readSubscriptions(this.controller.signal));
    window.addEventListener('hashchange', () => this.route());
    this.route();
  }

  private route(): void {
    const route = parseRoute(window.location.hash);
    this.view?.stop();
    this.view = undefined;
    this.overviewController?.abort();
    this.overviewController = undefined;
    this.tree.select(route.kind === 'stream' ? route.path : null);
    if (route.kind === 'overview') {
      document.title = 'Rivulet';
      this.overviewController = new AbortController();
      this.overview(this.overviewController.signal);
      return;
    }
    if (route.kind === 'subscriptions') {
      document.title = 'Subscriptions · Rivulet';
      this.view = new SubscriptionsPage(this.client, route.statuses, route.prefix);
    } else {
      document.title = `${route.path} · Rivulet`;
      this.view = new StreamView(this.client, route.path, { onAppended: () => this.refreshTreeSoon() });
    }
    mount(this.content, this.view.element);
    this.view.start();
  }

  /**
   * Every subscription of the project (the cross-stream listing, protocol §21): the worst status
   * of each source stream becomes its dot in the tree, and the halted ones the header's badge,
   * which links to the subscriptions page showing exactly those.
   */
  private async readSubscriptions(signal: AbortSignal): Promise<void> {
    try {
      const { rows, more } = await readUpTo(this.client.listAllSubscriptions({ signal, limit: 1000 }), MAX_LISTED);
      if (signal.aborted) return;
      this.tree.setStatuses(worstStatusByStream(rows));
      const text = haltedBadge(rows, more);
      const halted = rows.filter((r) => r.status === 'halted').length;
      this.halted.hidden = text === null;
      this.halted.textContent = text ?? '';
      this.halted.title = `${halted} subscription${halted === 1 ? '' : 's'} halted: open the subscriptions page`;
    } catch {
      // The tree and the server status already say when the server cannot be reached.
      this.halted.hidden = true;
    }
  }

  /** At most one tree refresh per half second, however fast events arrive. */
  private refreshTreeSoon(): void {
    if (this.treeTimer !== undefined) return;
    this.treeTimer = setTimeout(() => {
      this.treeTimer = undefined;
      void this.tree.refresh(this.controller.signal);
    }, 500);
  }

  /** The landing page: what Rivulet shows, and every stream with its head, re-read every few seconds. */
  private overview(signal: AbortSignal): void {
    const body = h('div', null, h('p', { class: 'muted' }, 'Loading streams…'));
    mount(
      this.content,
      h(
        'div',
        { class: 'overview' },
        this.settingsProblem ? errorBox(this.settingsProblem) : null,
        h('h1', null, 'Streams'),
        h(
          'p',
          null,
          'Each stream is an append-only log of events. Pick one on the left to watch its events live, append to it, and see its subscriptions: ',
          h('span', { class: 'badge badge-healthy' }, 'healthy'),
          ' ',
          h('span', { class: 'badge badge-lagging' }, 'lagging'),
          ' ',
          h('span', { class: 'badge badge-retrying' }, 'retrying'),
          ' or ',
          h('span', { class: 'badge badge-halted' }, 'halted'),
          ' — a halted one can be repaired from its source stream.',
        ),
        body,
      ),
    );
    every(3000, signal, () => this.listStreams(body, signal));
  }

  private async listStreams(body: HTMLElement, signal: AbortSignal): Promise<void> {
    try {
      const streams: StreamListEntry[] = [];
      for await (const s of this.client.listAll({ signal })) streams.push(s);
      if (signal.aborted) return;
      if (streams.length === 0) {
        mount(
          body,
          h('p', null, 'No streams yet. Type a path such as ', h('code', null, '/shop/orders'), ' in the box on the left and press Enter, then append an event.'),
        );
        return;
      }
      const now = Date.now();
      const table = h(
        'table',
        { class: 'grid' },
        h('thead', null, h('tr', null, ['Path', 'Head offset', 'Age', 'streamId'].map((t) => h('th', { scope: 'col' }, t)))),
        h(
          'tbody',
          null,
          streams.map((s) =>
            h(
              'tr',
              null,
              h('td', null, h('a', { href: hrefFor(s.path), 'data-focus': `overview:${s.path}` }, s.path)),
              h('td', { class: 'num' }, String(s.maxOffset)),
              h('td', { title: s.createdAt }, formatDuration(now - Date.parse(s.createdAt))),
              h('td', null, h('code', { class: 'small' }, s.streamId)),
            ),
          ),
        ),
      );
      keepFocus(body, () => mount(body, table));
    } catch (error) {
      if (!signal.aborted) mount(body, errorBox(error));
    }
  }

  private setServerStatus(error: unknown): void {
    if (error === null) {
      this.status.dataset.state = 'ok';
      this.status.textContent = 'connected';
      this.status.title = '';
      return;
    }
    const info = errorInfo(error);
    this.status.dataset.state = 'error';
    this.status.textContent =
      info.code === 'UNAUTHENTICATED' ? 'token needed: open Connection…' : info.code === 'FORBIDDEN' ? 'forbidden: check the project' : `${info.code}: ${info.message}`;
    this.status.title = info.message;
  }

  private openSettings(): void {
    const url = h('input', { id: 'settings-url', type: 'url', value: this.settings.url, placeholder: window.location.origin, autocomplete: 'off' });
    const token = h('input', { id: 'settings-token', type: 'password', value: this.settings.token, autocomplete: 'off' });
    const project = h('input', { id: 'settings-project', value: this.settings.projectId, autocomplete: 'off', placeholder: 'deployment-wide streams' });
    const dialog = h(
      'dialog',
      { class: 'confirm', 'aria-labelledby': 'settings-title' },
      h(
        'form',
        {
          method: 'dialog',
          onsubmit: (e) => {
            e.preventDefault();
            saveSettings({ url: url.value.trim(), token: token.value.trim(), projectId: project.value.trim() });
            window.location.reload();
          },
        },
        h('h2', { id: 'settings-title' }, 'Connection'),
        h('p', { class: 'small muted' }, 'Kept in this browser (localStorage) and sent with every request.'),
        h('div', { class: 'field' }, h('label', { for: 'settings-url' }, 'Server URL ', h('span', { class: 'muted' }, '(empty: this page’s server)')), url),
        h('div', { class: 'field' }, h('label', { for: 'settings-token' }, 'Token ', h('span', { class: 'muted' }, '(Authorization: Bearer)')), token),
        h('div', { class: 'field' }, h('label', { for: 'settings-project' }, 'Project ', h('span', { class: 'muted' }, '(X-Project-Id, admin tokens)')), project),
        h(
          'div',
          { class: 'dialog-actions' },
          h('button', { type: 'button', class: 'btn', onclick: () => dialog.close() }, 'Cancel'),
          h('button', { type: 'submit', class: 'btn btn-primary' }, 'Save and reconnect'),
        ),
      ),
    );
    dialog.addEventListener('close', () => dialog.remove());
    document.body.appendChild(dialog);
    dialog.showModal();
    url.focus();
  }
}
