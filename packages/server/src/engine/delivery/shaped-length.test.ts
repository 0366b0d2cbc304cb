/**
 * A delivery's size (prepare.ts `shapedLength`, the `bytesSent` a success adds, protocol §11): the
 * UTF-8 bytes of the shaped event's JSON; measured on the stored text when the event goes
 * untransformed, it is what serialising the shaped event would give.
 */
import type { AppendInput } from '../../core/append-input.js';
import type { CommittedEvent, JsonObject } from '@rivulet/contract';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildEvent } from '../../core/decide-append.js';
import { unshaped } from '../../core/filter.js';
import { rememberJson, storedFieldsJson } from '../event-json.js';
import { shapedLength } from './prepare.js';

const text = fc.string({ unit: 'binary', maxLength: 12 });
const object = fc.dictionary(text, fc.oneof(text, fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant(null)), { maxKeys: 4 }) as fc.Arbitrary<JsonObject>;
const input: fc.Arbitrary<AppendInput> = fc.record(
  { type: fc.string({ unit: 'binary', minLength: 1, maxLength: 10 }), payload: object, metadata: object, idempotencyKey: text },
  { requiredKeys: ['type'] },
);

describe('shapedLength', () => {
  it('on the stored text equals the UTF-8 bytes of JSON.stringify of the shaped event', () => {
    fc.assert(
      fc.property(input, (i) => {
        const stored = JSON.stringify(buildEvent('/s', 7, '2026-12-02T00:00:00.000Z', i));
        const event = JSON.parse(stored) as CommittedEvent;
        rememberJson(event, stored);
        const fieldsJson = storedFieldsJson(event);
        expect(fieldsJson).toBeDefined();
        const shaped = unshaped(event);
        const bytes = Buffer.byteLength(JSON.stringify(shaped));
        expect(shapedLength({ event, shaped, fieldsJson: fieldsJson! })).toBe(bytes);
        expect(shapedLength({ event, shaped })).toBe(bytes);
        // A copy's source event read with SQL carries no text; given beside it, the cut is the same (collect.ts).
        const bare = JSON.parse(stored) as CommittedEvent;
        expect(storedFieldsJson(bare)).toBeUndefined();
        expect(storedFieldsJson(bare, stored)).toBe(fieldsJson);
      }),
      { numRuns: 300 },
    );
  });

  it('counts bytes, not UTF-16 code units: é is 2, € 3 and 😀 4', () => {
    const stored = JSON.stringify(buildEvent('/s', 1, '2026-12-02T00:00:00.000Z', { type: 'tést', payload: { text: 'é€😀' } }));
    const event = JSON.parse(stored) as CommittedEvent;
    rememberJson(event, stored);
    const shaped = unshaped(event);
    // One byte more than code units for each é (type and payload), two for € and for 😀 (two code units, four bytes).
    const expected = JSON.stringify(shaped).length + 1 + 1 + 2 + 2;
    expect(shapedLength({ event, shaped, fieldsJson: storedFieldsJson(event)! })).toBe(expected);
    expect(shapedLength({ event, shaped })).toBe(expected);
  });
});
