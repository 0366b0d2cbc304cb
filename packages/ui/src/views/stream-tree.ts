/**
 * The sidebar: every stream of the project as a tree of path segments, with a search box. The list
 * is re-read every few seconds (client.listAll) and re-drawn only when it changed.
 */
import type { RivuletClient, StreamListEntry } from '@rivulet/client';
import { canonicalizePath } from '@rivulet/client';
import { every, hrefFor } from '../common.js';
import { h, keepFocus, mount } from '../dom.js';
import { buildTree, countStreams, type TreeNode } from '../tree.js';

export interface StreamTreeHooks {
  /** Called with each successful listing, or with the error of a failed one. */
  onStatus(error: unknown): void;
  /** Enter in the search box opens a stream (an existing match, or the typed path). */
  onOpen(path: string): void;
}

export class StreamTree {
  readonly element: HTMLElement;
  private readonly list: HTMLElement;
  private readonly summary: HTMLElement;
  private readonly search: HTMLInputElement;
  private streams: StreamListEntry[] = [];
  private signature = '';
  private selected: string | null = null;
  private readonly collapsed = new Set<string>();
  /** The worst status of each source stream's subscriptions (App reads the listing). */
  private statuses = new Map<string, string>();
  private statusSignature = '';

  constructor(
    private readonly client: RivuletClient,
    private readonly hooks: StreamTreeHooks,
  ) {
    this.search = h('input', {
      type: 'search',
      id: 'stream-search',
      placeholder: 'Filter, or Enter to open a path',
      autocomplete: 'off',
      spellcheck: 'false',
      oninput: () => this.render(),
    });
    const form = h(
      'form',
      { class: 'tree-search', role: 'search', onsubmit: (e) => this.submit(e) },
      h('label', { for: 'stream-search', class: 'label' }, 'Streams'),
      this.search,
    );
    this.summary = h('p', { class: 'muted small tree-summary', 'aria-live': 'polite' }, 'Loading…');
    this.list = h('div', { class: 'tree', 'data-testid': 'stream-tree' });
    this.element = h('nav', { class: 'sidebar', 'aria-label': 'Streams' }, form, this.summary, this.list);
  }

  start(signal: AbortSignal): void {
    every(3000, signal, () => this.refresh(signal));
  }

  async refresh(signal?: AbortSignal): Promise<void> {
    try {
      const streams: StreamListEntry[] = [];
      for await (const s of this.client.listAll({ signal })) streams.push(s);
      this.hooks.onStatus(null);
      const signature = JSON.stringify(streams);
      if (signature === this.signature) return;
      this.signature = signature;
      this.streams = streams;
      this.render();
    } catch (error) {
      if (signal?.aborted) return;
      this.hooks.onStatus(error);
    }
  }

  /** The worst subscription status per source stream: a dot beside each stream that has subscriptions. */
  setStatuses(statuses: ReadonlyMap<string, string>): void {
    const signature = JSON.stringify([...statuses]);
    if (signature === this.statusSignature) return;
    this.statusSignature = signature;
    this.statuses = new Map(statuses);
    this.render();
  }

  select(path: string | null): void {
    this.selected = path;
    // Open every folder on the way to the selected stream.
    if (path) for (const folder of this.collapsed) if (path.startsWith(`${folder}/`)) this.collapsed.delete(folder);
    this.render();
  }

  private submit(event: Event): void {
    event.preventDefault();
    const query = this.search.value.trim();
    if (query === '') return;
    let typed: string | undefined;
    try {
      typed = canonicalizePath(query);
    } catch {
      typed = undefined;
    }
    // An exact path wins; a query starting with "/" is a path (perhaps a new stream); otherwise
    // the first stream that matches the filter.
    const exact = typed !== undefined && this.streams.some((s) => s.path === typed);
    const match = this.streams.find((s) => s.path.toLowerCase().includes(query.toLowerCase()));
    const path = exact || query.startsWith('/') ? typed : (match?.path ?? typed);
    if (path === undefined) {
      this.summary.textContent = `"${query}" is not a stream path`;
      return;
    }
    this.hooks.onOpen(path);
  }

  private render(): void {
    const query = this.search.value;
    const root = buildTree(this.streams, query);
    const shown = countStreams(root);
    this.summary.textContent =
      this.streams.length === 0
        ? 'No streams yet. Append an event to create one.'
        : query.trim() === ''
          ? `${this.streams.length} stream${this.streams.length === 1 ? '' : 's'}`
          : `${shown} of ${this.streams.length} streams match`;
    const items: HTMLElement[] = [];
    if (root.stream) items.push(this.item(root, query !== ''));
    else for (const child of root.children) items.push(this.item(child, query !== ''));
    keepFocus(this.list, () => mount(this.list, items.length > 0 ? h('ul', { class: 'tree-level' }, items) : null));
  }

  private item(node: TreeNode, searching: boolean): HTMLElement {
    const hasChildren = node.children.length > 0;
    const open = searching || !this.collapsed.has(node.path);
    const toggle = hasChildren
      ? h(
          'button',
          {
            type: 'button',
            class: 'twisty',
            'data-focus': `twisty:${node.path}`,
            'aria-expanded': String(open),
            'aria-label': `${open ? 'Collapse' : 'Expand'} ${node.path}`,
            onclick: () => {
              if (this.collapsed.has(node.path)) this.collapsed.delete(node.path);
              else this.collapsed.add(node.path);
              this.render();
            },
          },
          open ? '▾' : '▸',
        )
      : h('span', { class: 'twisty-space', 'aria-hidden': 'true' });
    const status = node.stream ? this.statuses.get(node.path) : undefined;
    const dot =
      status === undefined
        ? null
        : h('span', { class: `dot dot-${status}`, 'data-testid': 'tree-dot', 'data-status': status, title: `subscriptions: ${status}` }, h('span', { class: 'sr-only' }, `, subscriptions ${status}`));
    const label = node.stream
      ? h(
          'a',
          {
            href: hrefFor(node.path),
            class: 'tree-stream',
            'data-path': node.path,
            'data-focus': `stream:${node.path}`,
            'aria-current': this.selected === node.path ? 'page' : null,
            title: `${node.path} · head offset ${node.stream.maxOffset}${status ? ` · subscriptions ${status}` : ''}`,
          },
          h('span', { class: 'tree-name' }, node.name),
          dot,
          h('span', { class: 'tree-count' }, h('span', { class: 'sr-only' }, ', head offset '), String(node.stream.maxOffset)),
        )
      : h('span', { class: 'tree-folder', title: node.path }, node.name);
    return h(
      'li',
      null,
      h('div', { class: 'tree-row' }, toggle, label),
      hasChildren && open ? h('ul', { class: 'tree-level' }, node.children.map((c) => this.item(c, searching))) : null,
    );
  }
}
