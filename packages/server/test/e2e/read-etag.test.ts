/**
 * End-to-end: entity tags of read pages (protocol §5.3). A page that can no longer change (full, or
 * closed by a `beforeOffset` at or below the head) carries a weak ETag and is answered 304 on
 * `If-None-Match`; the head page, pages with ephemeral events and streams that do not exist carry
 * none; a new lifetime never matches an old tag. Runs against both hosts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamRoute, queryString, type Api, type ApiResponse } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer();
  api = server.api;
});

afterAll(async () => {
  await server?.close();
});

function page(path: string, query: Record<string, string | number>, ifNoneMatch?: string): Promise<ApiResponse> {
  return api.request('GET', `${streamRoute(path)}${queryString(query)}`, ifNoneMatch === undefined ? {} : { headers: { 'if-none-match': ifNoneMatch } });
}

const TAG = /^W\/"[0-9a-f-]{36}\.\d+\.\d+\.\d+"$/;

describe('ETag of read pages', () => {
  it('a full page has a weak tag, is answered 304 with no body, and keeps its tag as the stream grows', async () => {
    await api.append('/t/full', [{ type: 'a' }, { type: 'b' }, { type: 'c' }, { type: 'd' }]);
    const first = await page('/t/full', { limit: 2 });
    expect(first.status).toBe(200);
    const tag = first.headers.get('etag');
    expect(tag).toMatch(TAG);
    const again = await page('/t/full', { limit: 2 }, tag!);
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers.get('etag')).toBe(tag);
    await api.append('/t/full', { type: 'e' });
    const grown = await page('/t/full', { limit: 2 }, tag!);
    expect(grown.status).toBe(304);
    // Without the header the body is there, with the new head: why the tag is weak.
    const fresh = await page('/t/full', { limit: 2 });
    expect(fresh.headers.get('etag')).toBe(tag);
    expect((fresh.body as { streamMaxOffset: number }).streamMaxOffset).toBe(6);
    expect((first.body as { streamMaxOffset: number }).streamMaxOffset).toBe(5);
  });

  it('the head page (fewer than limit events) has none and ignores If-None-Match', async () => {
    await api.append('/t/head', [{ type: 'a' }, { type: 'b' }]);
    const head = await page('/t/head', { limit: 4 });
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toBeNull();
    const starred = await page('/t/head', { limit: 4 }, '*');
    expect(starred.status).toBe(200);
    expect((starred.body as { events: unknown[] }).events).toHaveLength(3);
    // One more event fills it: from then on it is fixed.
    await api.append('/t/head', { type: 'c' });
    expect((await page('/t/head', { limit: 4 })).headers.get('etag')).toMatch(TAG);
  });

  it('beforeOffset fixes a page when it lies at most one past the head, not two', async () => {
    await api.append('/t/before', [{ type: 'a' }, { type: 'b' }]); // head 3
    const atHead = await page('/t/before', { beforeOffset: 4 });
    expect(atHead.headers.get('etag')).toMatch(TAG);
    expect((await page('/t/before', { beforeOffset: 4 }, atHead.headers.get('etag')!)).status).toBe(304);
    expect((await page('/t/before', { beforeOffset: 2 })).headers.get('etag')).toMatch(TAG);
    expect((await page('/t/before', { beforeOffset: 5 })).headers.get('etag')).toBeNull();
    // An empty closed range is fixed too.
    expect((await page('/t/before', { afterOffset: 3, beforeOffset: 4 })).headers.get('etag')).toMatch(TAG);
  });

  it('filtered full pages have tags; pages with ephemeral events and absent streams have none', async () => {
    await api.append('/t/mixed', [{ type: 'a' }, { type: 'b', ephemeral: true }, { type: 'a' }, { type: 'c' }]);
    expect((await page('/t/mixed', { eventTypes: 'a', limit: 2 })).headers.get('etag')).toMatch(TAG);
    const ephemeral = await page('/t/mixed', { includeEphemeral: 'true', limit: 2 });
    expect((ephemeral.body as { events: unknown[] }).events).toHaveLength(2);
    expect(ephemeral.headers.get('etag')).toBeNull();
    const absent = await page('/t/absent', { beforeOffset: 1 });
    expect(absent.body).toEqual({ streamId: null, streamMaxOffset: 0, events: [] });
    expect(absent.headers.get('etag')).toBeNull();
  });

  it('compares weakly, takes a list, and answers 200 to another tag', async () => {
    await api.append('/t/compare', [{ type: 'a' }, { type: 'b' }]);
    const tag = (await page('/t/compare', { limit: 1 })).headers.get('etag')!;
    const strongForm = tag.slice(2);
    expect((await page('/t/compare', { limit: 1 }, strongForm)).status).toBe(304);
    expect((await page('/t/compare', { limit: 1 }, `W/"other", ${tag}`)).status).toBe(304);
    expect((await page('/t/compare', { limit: 1 }, 'W/"other"')).status).toBe(200);
    // Another page of the same stream has another tag.
    expect((await page('/t/compare', { limit: 2 }, tag)).status).toBe(200);
  });

  it('a destroyed and recreated stream never matches a tag of its old lifetime', async () => {
    await api.append('/t/life', [{ type: 'a' }]);
    const old = (await page('/t/life', { limit: 2 })).headers.get('etag')!;
    await api.destroy('/t/life');
    await api.append('/t/life', [{ type: 'a' }]);
    const renewed = await page('/t/life', { limit: 2 }, old);
    expect(renewed.status).toBe(200);
    expect(renewed.headers.get('etag')).toMatch(TAG);
    expect(renewed.headers.get('etag')).not.toBe(old);
  });
});
