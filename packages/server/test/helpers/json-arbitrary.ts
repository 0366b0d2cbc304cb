/**
 * fast-check arbitraries of JSON as events carry it: short strings of any code units (lone
 * surrogates and non-ASCII included), integers, doubles, booleans, null, and small nested arrays
 * and objects. Shared by the property tests that compare text cut from stored events with
 * JSON.stringify (stored-fields-json, copy-builder-json, shaped-length).
 */
import type { JsonObject } from '@rivulet/contract';
import fc from 'fast-check';
import type { AppendInput } from '../../src/core/append-input.js';

export const jsonText = fc.string({ unit: 'binary', maxLength: 12 });

export const jsonValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    jsonText,
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(jsonText, tie('value'), { maxKeys: 3 }),
  ),
})).value;

export const jsonObject = fc.dictionary(jsonText, jsonValue, { maxKeys: 4 }) as fc.Arbitrary<JsonObject>;

/** An append input with any of payload, metadata and an idempotency key. */
export const appendInput: fc.Arbitrary<AppendInput> = fc.record(
  { type: fc.string({ unit: 'binary', minLength: 1, maxLength: 10 }), payload: jsonObject, metadata: jsonObject, idempotencyKey: jsonText },
  { requiredKeys: ['type'] },
);
