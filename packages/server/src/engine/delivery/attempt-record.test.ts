import { describe, expect, it } from 'vitest';
import { outcomeOf, utf8Prefix } from './attempt-record.js';

describe('utf8Prefix', () => {
  it('keeps text within the bound whole, and never cuts a character', () => {
    expect(utf8Prefix('abc', 3)).toBe('abc');
    expect(utf8Prefix('abcd', 3)).toBe('abc');
    // "é" is two bytes, "€" three: a cut inside one drops it entirely.
    expect(utf8Prefix('aé', 2)).toBe('a');
    expect(utf8Prefix('aé', 3)).toBe('aé');
    expect(utf8Prefix('€€', 5)).toBe('€');
    expect(utf8Prefix('€€', 6)).toBe('€€');
  });
});

describe('outcomeOf', () => {
  it('names drops, failures and outages', () => {
    expect(outcomeOf({ ok: true }, 2)).toBe('ok');
    expect(outcomeOf({ ok: true, dropped: 1 }, 2)).toBe('ok');
    expect(outcomeOf({ ok: true, dropped: 2 }, 2)).toBe('dropped');
    expect(outcomeOf({ ok: false, kind: 'failing', error: 'x' }, 1)).toBe('failed');
    expect(outcomeOf({ ok: false, kind: 'fatal', error: 'x' }, 1)).toBe('failed');
    expect(outcomeOf({ ok: false, kind: 'unavailable', error: 'x' }, 1)).toBe('unavailable');
  });
});
