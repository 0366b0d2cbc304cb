/**
 * A delivery's size (prepare.ts `shapedLength`, the `bytesSent` a success adds, protocol §12.3):
 * measured on the stored text when the event goes untransformed, it is the length serialising the
 * shaped event would give.
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
  it('on the stored text equals JSON.stringify of the shaped event', () => {
    fc.assert(
      fc.property(input, (i) => {
        const stored = JSON.stringify(buildEvent('/s', 7, '2026-12-02T00:00:00.000Z', i));
        const event = JSON.parse(stored) as CommittedEvent;
        rememberJson(event, stored);
        const fieldsJson = storedFieldsJson(event);
        expect(fieldsJson).toBeDefined();
        const shaped = unshaped(event);
        expect(shapedLength({ event, shaped, fieldsJson: fieldsJson! })).toBe(JSON.stringify(shaped).length);
        expect(shapedLength({ event, shaped })).toBe(JSON.stringify(shaped).length);
      }),
      { numRuns: 300 },
    );
  });
});
