import { Limits, ReadQuerySchema } from '@rivulet/contract';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { plainReadQuery } from './stream-routes.js';

/** Values near every edge the schema has: digits, lengths, bounds, safe integers, non-digits. */
const value = fc.oneof(
  fc.nat({ max: 2000 }).map(String),
  fc.constantFrom('0', '1', '00', '007', String(Limits.readPageMax), String(Limits.readPageMax + 1), '9'.repeat(16), '9'.repeat(17), '9007199254740991', '9007199254740992', '', ' 1', '1 ', '+1', '-1', '1.0', '1e3', '0x10', '١', 'true', 'sse'),
  fc.string({ maxLength: 4 }),
);
const key = fc.constantFrom('afterOffset', 'beforeOffset', 'limit', 'eventTypes', 'includeEphemeral', 'live', 'expectedStreamId', 'other');
const query = fc.dictionary(key, value, { maxKeys: 4 });

describe('plainReadQuery beside ReadQuerySchema', () => {
  test('answers what the schema answers, or defers to it; never accepts what the schema refuses', () => {
    let answered = 0;
    fc.assert(
      fc.property(query, (q) => {
        const plain = plainReadQuery(q);
        const schema = ReadQuerySchema.safeParse(q);
        if (plain === undefined) return;
        answered++;
        expect(schema.success).toBe(true);
        expect(plain).toEqual(schema.data);
      }),
      { numRuns: 5000 },
    );
    // The generator reaches the fast path often enough for the property to mean something.
    expect(answered).toBeGreaterThan(200);
  });

  test('the common catch-up queries take the fast path', () => {
    expect(plainReadQuery({ afterOffset: '1500', limit: '500' })).toEqual({ afterOffset: 1500, limit: 500 });
    expect(plainReadQuery({})).toEqual({});
    expect(plainReadQuery({ beforeOffset: '9', afterOffset: '0' })).toEqual({ beforeOffset: 9, afterOffset: 0 });
  });

  test('anything else goes to the schema', () => {
    for (const q of [{ limit: '0' }, { limit: String(Limits.readPageMax + 1) }, { beforeOffset: '0' }, { afterOffset: '9007199254740992' }, { afterOffset: '1e3' }, { eventTypes: 'a' }, { live: 'sse' }]) {
      expect(plainReadQuery(q)).toBeUndefined();
    }
  });
});
