import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { UTF8_STEP_BYTES, utf8Length } from './sizes.js';

/** Any UTF-16 code unit, lone surrogates included, biased towards the encoding boundaries. */
const codeUnit = fc.oneof(
  fc.integer({ min: 0, max: 0xffff }),
  fc.constantFrom(0x00, 0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xe000, 0xfffd, 0xffff),
).map((code) => String.fromCharCode(code));

describe('utf8Length', () => {
  it('counts 1, 2, 3 and 4 byte characters', () => {
    expect(utf8Length('')).toBe(0);
    expect(utf8Length('a')).toBe(1);
    expect(utf8Length('é')).toBe(2);
    expect(utf8Length('€')).toBe(3);
    expect(utf8Length('😀')).toBe(4);
    expect(utf8Length('a😀é€')).toBe(10);
  });

  it('counts a lone surrogate as the 3 bytes of its replacement character, like the encoder', () => {
    for (const lone of ['\ud83d', '\ude00', 'a\ud83db', '\ude00\ud83d', 'x\ud83d']) {
      expect(utf8Length(lone)).toBe(Buffer.byteLength(lone, 'utf8'));
      expect(utf8Length(lone)).toBe(new TextEncoder().encode(lone).length);
    }
  });

  it('equals Buffer.byteLength on arbitrary strings of code units (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: codeUnit, maxLength: 64 }), (text) => {
        expect(utf8Length(text)).toBe(Buffer.byteLength(text, 'utf8'));
      }),
      { numRuns: 2000 },
    );
  });

  it('equals Buffer.byteLength on strings of whole code points, astral ones included (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 64 }), fc.string({ unit: 'grapheme', maxLength: 32 }), (a, b) => {
        expect(utf8Length(a)).toBe(Buffer.byteLength(a, 'utf8'));
        expect(utf8Length(b + a)).toBe(Buffer.byteLength(b + a, 'utf8'));
      }),
      { numRuns: 1000 },
    );
  });

  it('equals Buffer.byteLength on ASCII text with other characters anywhere in it (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)), maxLength: 300 }), fc.string({ unit: codeUnit, maxLength: 8 }), fc.nat(), (ascii, other, at) => {
        const cut = at % (ascii.length + 1);
        const text = ascii.slice(0, cut) + other + ascii.slice(cut);
        expect(utf8Length(text)).toBe(Buffer.byteLength(text, 'utf8'));
        expect(utf8Length(ascii)).toBe(ascii.length);
      }),
      { numRuns: 2000 },
    );
  });

  it('measures JSON text as stored', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const json = JSON.stringify(value);
        expect(utf8Length(json)).toBe(Buffer.byteLength(json, 'utf8'));
      }),
      { numRuns: 300 },
    );
  });

  it('measures texts longer than one step, whatever character lies across a step boundary', () => {
    for (const char of ['a', 'é', '€', '😀', '\ud83d', '\ude00']) {
      for (let ascii = UTF8_STEP_BYTES - 5; ascii <= UTF8_STEP_BYTES + 1; ascii++) {
        const text = 'a'.repeat(ascii) + char + 'b' + char.repeat(3);
        expect(utf8Length(text)).toBe(Buffer.byteLength(text, 'utf8'));
      }
    }
    const long = 'x😀é€'.repeat(3 * UTF8_STEP_BYTES);
    expect(utf8Length(long)).toBe(Buffer.byteLength(long, 'utf8'));
    expect(utf8Length('a'.repeat(5 * UTF8_STEP_BYTES + 7))).toBe(5 * UTF8_STEP_BYTES + 7);
  });
});
