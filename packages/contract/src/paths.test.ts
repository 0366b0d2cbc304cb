import { describe, expect, it } from 'vitest';
import { RivuletError } from './errors.js';
import { canonicalizePath, isPathUnder } from './paths.js';

function rejects(raw: string, decode = false): RivuletError {
  try {
    canonicalizePath(raw, { decode });
  } catch (error) {
    expect(error).toBeInstanceOf(RivuletError);
    expect((error as RivuletError).code).toBe('INVALID_INPUT');
    return error as RivuletError;
  }
  throw new Error(`expected ${JSON.stringify(raw)} to be rejected`);
}

describe('canonicalizePath (protocol §2.3)', () => {
  it('canonicalises whitespace, missing slash and dot segments', () => {
    expect(canonicalizePath(' a/./b ')).toBe('/a/b');
    expect(canonicalizePath('/a/b/../c')).toBe('/a/c');
    expect(canonicalizePath('')).toBe('/');
    expect(canonicalizePath('/')).toBe('/');
    expect(canonicalizePath('/a/..')).toBe('/');
  });

  it('rejects escaping the root, forbidden characters and empty segments', () => {
    expect(rejects('/a/../..').message).toContain('escape the root');
    expect(rejects('..').message).toContain('escape the root');
    for (const bad of ['/a?b', '/a#b', '/a\\b', '/a:b', '/a\u0000b', '/a\nb']) {
      expect(rejects(bad).message).toContain('character');
    }
    expect(rejects('/a//b').message).toContain('empty segment');
    expect(rejects('/a/').message).toContain('empty segment');
  });

  it('refuses text that is not well-formed Unicode (a lone surrogate), and keeps paired ones', () => {
    for (const raw of ['/a\ud800', '/\udc00/b', '\ud83d', '/x/\ude00y', '/a\udc00\ud800']) {
      let thrown: unknown;
      try {
        canonicalizePath(raw);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(RivuletError);
      expect([(thrown as RivuletError).code, (thrown as RivuletError).message]).toEqual([
        'INVALID_INPUT',
        `stream path ${JSON.stringify(raw)} is not well-formed Unicode: it holds a lone UTF-16 surrogate`,
      ]);
    }
    expect(canonicalizePath('/emoji/\ud83d\ude00')).toBe('/emoji/😀');
    expect(canonicalizePath('/emoji/%F0%9F%98%80', { decode: true })).toBe('/emoji/😀');
  });

  it('decodes URL segments one by one and refuses an encoded slash or colon', () => {
    expect(canonicalizePath('/a%20b/c', { decode: true })).toBe('/a b/c');
    expect(rejects('/a%2Fb', true).message).toContain('"/" inside one segment');
    expect(rejects('/a%3Ab', true).message).toContain('character');
    expect(rejects('/a%E0%A4%A', true).message).toContain('percent-encoding');
    // Undecoded paths keep a literal percent sign.
    expect(canonicalizePath('/a%2Fb')).toBe('/a%2Fb');
  });

  it('bounds the length on both sides of the limit', () => {
    const ok = `/${'x'.repeat(1023)}`;
    expect(canonicalizePath(ok)).toBe(ok);
    expect(rejects(`/${'x'.repeat(1024)}`).message).toContain('longer than 1024');
  });
});

describe('isPathUnder', () => {
  it('matches segment-wise', () => {
    expect(isPathUnder('/a', '/a')).toBe(true);
    expect(isPathUnder('/a/b', '/a')).toBe(true);
    expect(isPathUnder('/ab', '/a')).toBe(false);
    expect(isPathUnder('/anything', '/')).toBe(true);
  });
});

describe('canonicalizePath with decoding', () => {
  it('trims whitespace that arrives percent-encoded around the whole path', () => {
    expect(canonicalizePath('/%20a/./b%20', { decode: true })).toBe('/a/b');
    expect(canonicalizePath('/%20', { decode: true })).toBe('/');
    // Inner whitespace is part of the name.
    expect(canonicalizePath('/a%20/%20b', { decode: true })).toBe('/a /  b'.replace('/  b', '/ b'));
  });
});
