/**
 * Pieces every view shares: links to streams (the route is the location hash), the inline error
 * box that shows a RivuletError's code and message, JSON blocks and a polling loop.
 */
import { RivuletError } from '@rivulet/client';
import { h } from './dom.js';

/** "#/shop/orders" for "/shop/orders"; each segment percent-encoded. */
export function hrefFor(path: string): string {
  return `#${path === '/' ? '/' : path.split('/').map(encodeURIComponent).join('/')}`;
}

/** The statuses of the cross-stream listing, in its order (protocol §21.2). */
export const LISTING_STATUSES = ['halted', 'retrying', 'lagging', 'healthy'] as const;
export type ListingStatus = (typeof LISTING_STATUSES)[number];

/** What the location hash shows: the overview, one stream, or the subscriptions page with its filters. */
export type Route =
  | { kind: 'overview' }
  | { kind: 'stream'; path: string }
  | { kind: 'subscriptions'; statuses: ListingStatus[]; prefix: string };

/**
 * The subscriptions page is `#subscriptions?status=halted,retrying&prefix=/shop`: stream routes
 * always start with "/" (hrefFor), so a page name without one can never be a stream's path.
 */
const SUBSCRIPTIONS_PAGE = 'subscriptions';

export function subscriptionsHref(filters: { statuses?: readonly ListingStatus[]; prefix?: string } = {}): string {
  const query = new URLSearchParams();
  if (filters.statuses && filters.statuses.length > 0) query.set('status', filters.statuses.join(','));
  if (filters.prefix && filters.prefix !== '') query.set('prefix', filters.prefix);
  const text = query.toString().replaceAll('%2F', '/').replaceAll('%2C', ',');
  return `#${SUBSCRIPTIONS_PAGE}${text === '' ? '' : `?${text}`}`;
}

export function parseRoute(hash: string): Route {
  const raw = hash.startsWith('#') ? hash.slice(1) : hash;
  if (raw === SUBSCRIPTIONS_PAGE || raw.startsWith(`${SUBSCRIPTIONS_PAGE}?`)) {
    const query = new URLSearchParams(raw.slice(SUBSCRIPTIONS_PAGE.length + 1));
    const statuses = (query.get('status') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s): s is ListingStatus => (LISTING_STATUSES as readonly string[]).includes(s));
    return { kind: 'subscriptions', statuses: LISTING_STATUSES.filter((s) => statuses.includes(s)), prefix: (query.get('prefix') ?? '').trim() };
  }
  const path = pathFromHash(hash);
  return path === null ? { kind: 'overview' } : { kind: 'stream', path };
}

/** The stream path named by a location hash, or null for the overview. */
export function pathFromHash(hash: string): string | null {
  const raw = hash.startsWith('#') ? hash.slice(1) : hash;
  if (raw === '') return null;
  try {
    const path = raw.split('/').map(decodeURIComponent).join('/');
    return path.startsWith('/') ? path : `/${path}`;
  } catch {
    return null;
  }
}

export interface ErrorInfo {
  code: string;
  message: string;
  details?: unknown;
}

export function errorInfo(error: unknown): ErrorInfo {
  if (error instanceof RivuletError) {
    return error.details === undefined ? { code: error.code, message: error.message } : { code: error.code, message: error.message, details: error.details };
  }
  return { code: 'ERROR', message: error instanceof Error ? error.message : String(error) };
}

/** The server's error, inline: its code, its message, and its details when it sent some. */
export function errorBox(error: unknown, testId = 'error'): HTMLElement {
  const info = errorInfo(error);
  return h(
    'div',
    { class: 'error-box', role: 'alert', 'data-testid': testId },
    h('code', { class: 'error-code' }, info.code),
    ' ',
    h('span', { class: 'error-message' }, info.message),
    info.details === undefined ? null : h('pre', { class: 'json small' }, JSON.stringify(info.details, null, 2)),
  );
}

export function jsonBlock(value: unknown, attrs: Record<string, string> = {}): HTMLPreElement {
  return h('pre', { class: 'json', ...attrs }, JSON.stringify(value, null, 2));
}

export function badge(text: string, kind: string, title?: string): HTMLSpanElement {
  return h('span', { class: `badge badge-${kind}`, title }, text);
}

/** A link to a stream's page; `focusKey` lets a re-render give focus back to it (dom.ts keepFocus). */
export function streamLink(path: string, text = path, focusKey?: string): HTMLAnchorElement {
  return h('a', { href: hrefFor(path), class: 'stream-ref', 'data-focus': focusKey }, text);
}

/** Runs `task` now and then every `ms` after each run settles, until `signal` aborts. */
export function every(ms: number, signal: AbortSignal, task: () => Promise<void>): void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const run = async () => {
    if (signal.aborted) return;
    try {
      await task();
    } catch {
      // Each task reports its own failures in the page; the loop keeps going.
    }
    if (!signal.aborted) timer = setTimeout(() => void run(), ms);
  };
  signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
  void run();
}

export function isAbort(error: unknown, signal: AbortSignal): boolean {
  return signal.aborted || (error instanceof DOMException && error.name === 'AbortError');
}
