import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventBatchSchema, EventInputSchema, MAX_BATCH_EVENTS, plainEventBatch, plainEventInput } from './events.js';
import { Limits } from './limits.js';

type Key = 'type' | 'payload' | 'metadata' | 'idempotencyKey' | 'ephemeral' | 'offset' | 'source';

/** Strings around the length limits (surrogate pairs count two, as String#length does). */
const edgeString = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 5 }),
  fc.constantFrom('', 'a', '😀', 'app/x', ' ', '\u0000'),
  fc.constantFrom(Limits.typeMaxLength, Limits.idempotencyKeyMaxLength).chain((n) =>
    fc.integer({ min: n - 2, max: n + 2 }).chain((len) => fc.constantFrom('x'.repeat(len), `${'x'.repeat(Math.max(0, len - 2))}😀`)),
  ),
);

class Thing {
  constructor(readonly a = 1) {}
}

const oddValue = fc.constantFrom<unknown>(
  undefined,
  null,
  true,
  false,
  0,
  -0,
  1,
  -1,
  1.5,
  2 ** 53 - 1,
  2 ** 53,
  -(2 ** 53),
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  Number.MAX_VALUE,
  '1',
  [],
  [1],
  {},
  Object.create(null) as object,
  new Thing(),
  new Date(0),
  new Map(),
  () => 1,
  Symbol('s'),
  10n,
);

const anyValue = fc.oneof(oddValue, edgeString, fc.integer(), fc.double(), fc.jsonValue({ maxDepth: 2 }), fc.object({ maxDepth: 1 }));

/** Values likely to pass for each key, and anything at all. */
const valueFor: Record<Key, fc.Arbitrary<unknown>> = {
  type: fc.oneof(edgeString, anyValue),
  payload: fc.oneof(fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }), anyValue),
  metadata: fc.oneof(fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }), anyValue),
  idempotencyKey: fc.oneof(edgeString, anyValue),
  ephemeral: fc.oneof(fc.constant(true), anyValue),
  offset: fc.oneof(fc.integer({ min: -3, max: 1000 }), fc.constantFrom(2 ** 53 - 1, 2 ** 53, 1.0, 1.5), anyValue),
  source: anyValue,
};

const eventLike: fc.Arbitrary<unknown> = fc
  .tuple(
    fc.record(valueFor, { requiredKeys: [] }),
    fc.dictionary(fc.constantFrom('extra', 'Type', 'constructor', 'toString', 'hasOwnProperty', ''), anyValue, { maxKeys: 2 }),
    fc.constantFrom('plain', 'plain', 'plain', 'plain', 'extra', 'proto-key', 'null-proto', 'class', 'shuffled'),
  )
  .map(([known, extra, how]) => {
    switch (how) {
      case 'extra':
        return { ...known, ...extra };
      case 'proto-key':
        // What JSON.parse makes of {"__proto__": …}: an own key.
        return JSON.parse(`{"__proto__":1,"type":"app/x"}`) as unknown;
      case 'null-proto':
        return Object.assign(Object.create(null) as object, known);
      case 'class':
        return Object.assign(new Thing(), known);
      case 'shuffled':
        return Object.fromEntries(Object.entries(known).reverse());
      default:
        return { ...known };
    }
  });

const common = fc.record(
  {
    type: fc.string({ minLength: 1, maxLength: 30 }),
    payload: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }),
    metadata: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
    idempotencyKey: fc.string({ minLength: 1, maxLength: 40 }),
    ephemeral: fc.constant(true as const),
    offset: fc.integer({ min: 1, max: 2 ** 40 }),
  },
  { requiredKeys: ['type'], noNullPrototype: true },
);

/** A fast answer must be exactly the schema's: same keys in the same order, the very same objects. */
function expectSameAsSchema(value: unknown): void {
  const fast = plainEventInput(value);
  if (fast === undefined) return;
  const schema = EventInputSchema.safeParse(value);
  expect(schema.success).toBe(true);
  const data = schema.data as Record<string, unknown>;
  expect(Object.keys(fast)).toEqual(Object.keys(data));
  for (const key of Object.keys(data)) expect((fast as Record<string, unknown>)[key]).toBe(data[key]);
}

describe('plainEventInput: the hand check of the common event', () => {
  it('answers what EventInputSchema answers, or defers to it', () => {
    fc.assert(fc.property(eventLike, expectSameAsSchema), { numRuns: 20_000 });
  });

  it('accepts the common events (and they are the schema answer)', () => {
    fc.assert(
      fc.property(common, (event) => {
        expect(plainEventInput(event)).toBeDefined();
        expectSameAsSchema(event);
      }),
      { numRuns: 2000 },
    );
  });

  it('defers at the limits exactly where the schema refuses', () => {
    for (const key of ['type', 'idempotencyKey'] as const) {
      const max = key === 'type' ? Limits.typeMaxLength : Limits.idempotencyKeyMaxLength;
      for (const len of [0, 1, max - 1, max, max + 1]) {
        const event = { type: 'app/x', [key]: 'k'.repeat(len) };
        expect(plainEventInput(event) !== undefined, `${key} ${len}`).toBe(EventInputSchema.safeParse(event).success);
      }
    }
    for (const offset of [0, 1, 2 ** 53 - 1, 2 ** 53, 1.5, -1]) {
      const event = { type: 'app/x', offset };
      expect(plainEventInput(event) !== undefined, String(offset)).toBe(EventInputSchema.safeParse(event).success);
    }
  });

  it('defers whenever a key is unknown, undefined-valued or not from a plain object', () => {
    expect(plainEventInput({ type: 'a', extra: 1 })).toBeUndefined();
    expect(plainEventInput({ type: 'a', payload: undefined })).toBeUndefined();
    expect(plainEventInput(JSON.parse('{"type":"a","__proto__":{}}'))).toBeUndefined();
    expect(plainEventInput(Object.assign(Object.create(null) as object, { type: 'a' }))).toBeUndefined();
    expect(plainEventInput([{ type: 'a' }])).toBeUndefined();
    expect(plainEventInput({ payload: {} })).toBeUndefined();
  });
});

describe('plainEventBatch', () => {
  it('answers what EventBatchSchema answers, or defers to it', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(common, eventLike), { maxLength: 4 }), (batch) => {
        const fast = plainEventBatch(batch);
        if (fast === undefined) return;
        const schema = EventBatchSchema.safeParse(batch);
        expect(schema.success).toBe(true);
        expect(fast).toStrictEqual(schema.data);
        fast.forEach((event, i) => expect(Object.keys(event)).toEqual(Object.keys(schema.data![i]!)));
      }),
      { numRuns: 5000 },
    );
  });

  it('defers for an empty or an oversized batch', () => {
    expect(plainEventBatch([])).toBeUndefined();
    const many = Array.from({ length: MAX_BATCH_EVENTS + 1 }, () => ({ type: 'a' }));
    expect(plainEventBatch(many)).toBeUndefined();
    expect(plainEventBatch(many.slice(1))).toHaveLength(MAX_BATCH_EVENTS);
  });
});
