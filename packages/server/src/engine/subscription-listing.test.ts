import { describe, expect, it } from 'vitest';
import { RivuletError } from '@rivulet/contract';
import { decodeListCursor, encodeListCursor, haltedFilter } from './subscription-listing.js';

describe('the listing cursor', () => {
  it('round-trips any path and key, in URL-safe characters', () => {
    const p = { group: 1 as const, path: '/a/ü/😀', key: 'k "quoted" +/=' };
    const text = encodeListCursor(p);
    expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeListCursor(text)).toEqual(p);
  });

  it('refuses anything it did not make', () => {
    for (const bad of ['', '!!', btoa('[2,"/a","k"]'), btoa('{"a":1}'), btoa('[0,"/a"]'), btoa('\xff\xfe')]) {
      expect(() => decodeListCursor(bad)).toThrow(RivuletError);
    }
  });
});

describe('haltedFilter', () => {
  it('reads halted rows only, the others only, or both', () => {
    expect(haltedFilter(['halted'])).toBe(true);
    expect(haltedFilter(['retrying', 'healthy'])).toBe(false);
    expect(haltedFilter(['halted', 'lagging'])).toBeUndefined();
  });
});
