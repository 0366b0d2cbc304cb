import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, jsonEqual } from './canonical-json.js';

/** The same JSON value with every object's keys in another order. */
function reorder(value: unknown, pick: (n: number) => number): unknown {
  if (Array.isArray(value)) return value.map((v) => reorder(v, pick));
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value as Record<string, unknown>);
  const shuffled: Array<[string, unknown]> = [];
  while (entries.length > 0) shuffled.push(entries.splice(pick(entries.length), 1)[0]!);
  return Object.fromEntries(shuffled.map(([k, v]) => [k, reorder(v, pick)]));
}

describe('canonicalJson', () => {
  it('sorts keys at every depth and leaves arrays in order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
  });

  it('skips undefined properties like JSON.stringify, and writes undefined array items as null', () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(jsonEqual({ a: undefined, b: 1 }, { b: 1 })).toBe(true);
    expect(canonicalJson([undefined, 1])).toBe('[null,1]');
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('writes primitives as JSON', () => {
    expect(canonicalJson('a"b')).toBe('"a\\"b"');
    expect(canonicalJson(1.5)).toBe('1.5');
    expect(canonicalJson(true)).toBe('true');
    expect(canonicalJson(null)).toBe('null');
    expect(canonicalJson({ 'k"ey': 'é😀' })).toBe('{"k\\"ey":"é😀"}');
  });

  it('distinguishes values JSON distinguishes', () => {
    expect(jsonEqual({ a: 1 }, { a: '1' })).toBe(false);
    expect(jsonEqual({ a: null }, {})).toBe(false);
    expect(jsonEqual({ a: {} }, { a: [] })).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
  });

  it('is independent of key order, and parses back to the same JSON value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.infiniteStream(fc.nat()), (value, randoms) => {
        const it = randoms[Symbol.iterator]();
        const shuffled = reorder(value, (n) => it.next().value! % n);
        expect(canonicalJson(shuffled)).toBe(canonicalJson(value));
        expect(jsonEqual(shuffled, value)).toBe(true);
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 300 },
    );
  });

  it('two values are equal exactly when their key-sorted forms are (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 2 }), fc.jsonValue({ maxDepth: 2 }), (a, b) => {
        const sorted = (v: unknown) => JSON.stringify(reorder(v, () => 0), (_k, x: unknown) => sortKeys(x));
        expect(jsonEqual(a, b)).toBe(sorted(a) === sorted(b));
      }),
      { numRuns: 300 },
    );
  });
});

function sortKeys(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
