/**
 * Stream addresses in URLs (protocol §2.4): the canonical stream path follows `/v1/streams`
 * directly, each segment percent-encoded on its own, so a segment may hold any character the path
 * rules allow ("%", "/"-free unicode, spaces) without changing the address; the root stream is
 * `/v1/streams/`. `:method` after the path selects a custom method — unambiguous because ":" is
 * never part of a canonical path. The base URL may carry a path prefix (a reverse proxy mount).
 */
import { canonicalizePath } from '@rivulet/contract';

export type QueryValue = string | number | boolean | readonly string[] | undefined;

/** "/a/b c" → "/a/b%20c"; accepts "a/b" or "/a/b" and canonicalises (throws INVALID_INPUT). */
export function encodeStreamPath(path: string): string {
  const canonical = canonicalizePath(path);
  if (canonical === '/') return '/';
  return canonical
    .split('/')
    .map((segment) => encodeURIComponent(segment))
    .join('/');
}

/** Query string of the defined values; arrays become comma lists, `false` and empty lists vanish. */
export function queryString(query: Readonly<Record<string, QueryValue>>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === false) continue;
    if (Array.isArray(value)) {
      if (value.length > 0) params.set(key, value.join(','));
      continue;
    }
    params.set(key, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** Joins the base URL (its own path kept, trailing "/" ignored) with an absolute API path. */
export function apiUrl(baseUrl: string, apiPath: string, query: Readonly<Record<string, QueryValue>> = {}): string {
  const base = new URL(baseUrl);
  const prefix = base.pathname.replace(/\/+$/, '');
  return `${base.origin}${prefix}${apiPath}${queryString(query)}`;
}

/** The URL of one stream, or of one of its custom methods (`method` without the ":"). */
export function streamUrl(
  baseUrl: string,
  path: string,
  options: { method?: string; query?: Readonly<Record<string, QueryValue>> } = {},
): string {
  const suffix = options.method === undefined ? '' : `:${options.method}`;
  return apiUrl(baseUrl, `/v1/streams${encodeStreamPath(path)}${suffix}`, options.query);
}
