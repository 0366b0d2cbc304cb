import { RivuletError } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { apiUrl, encodeStreamPath, queryString, streamUrl } from './urls.js';

const base = 'http://127.0.0.1:7420';

describe('stream URLs', () => {
  it('canonicalises the path, with or without a leading "/"', () => {
    expect(streamUrl(base, 'a/b')).toBe(`${base}/v1/streams/a/b`);
    expect(streamUrl(base, '/a/b')).toBe(`${base}/v1/streams/a/b`);
    expect(streamUrl(base, ' /a/./c/../b ')).toBe(`${base}/v1/streams/a/b`);
  });

  it('addresses the root stream as /v1/streams/', () => {
    expect(streamUrl(base, '/')).toBe(`${base}/v1/streams/`);
    expect(streamUrl(base, '')).toBe(`${base}/v1/streams/`);
    expect(streamUrl(base, '/', { method: 'state' })).toBe(`${base}/v1/streams/:state`);
  });

  it('percent-encodes each segment on its own', () => {
    expect(encodeStreamPath('/a b/%2F/caf\u00e9/x+y&z')).toBe('/a%20b/%252F/caf%C3%A9/x%2By%26z');
  });

  it('appends a custom method after the path', () => {
    expect(streamUrl(base, 'shop/orders', { method: 'state' })).toBe(`${base}/v1/streams/shop/orders:state`);
  });

  it('keeps a path prefix of the base URL and ignores its trailing slash', () => {
    expect(streamUrl('https://example.com/rivulet/', 'a')).toBe('https://example.com/rivulet/v1/streams/a');
    expect(apiUrl('https://example.com/', '/healthz')).toBe('https://example.com/healthz');
  });

  it('refuses a path the server would refuse, as INVALID_INPUT', () => {
    for (const bad of ['a//b', '/a:b', '/..', 'a?b', 'a#b', 'a\\b']) {
      let caught: unknown;
      try {
        encodeStreamPath(bad);
      } catch (error) {
        caught = error;
      }
      expect(caught, bad).toBeInstanceOf(RivuletError);
      expect((caught as RivuletError).code).toBe('INVALID_INPUT');
    }
  });
});

describe('query strings', () => {
  it('drops undefined and false, joins lists with commas, encodes values', () => {
    expect(
      queryString({ afterOffset: 3, beforeOffset: undefined, includeEphemeral: false, eventTypes: ['a/b', 'c d'], live: 'sse' }),
    ).toBe('?afterOffset=3&eventTypes=a%2Fb%2Cc+d&live=sse');
    expect(queryString({ includeEphemeral: true, eventTypes: [] })).toBe('?includeEphemeral=true');
    expect(queryString({})).toBe('');
  });

  it('puts the query after the stream path', () => {
    expect(streamUrl(base, '/a', { query: { limit: 2 } })).toBe(`${base}/v1/streams/a?limit=2`);
  });
});
