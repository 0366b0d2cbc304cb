import { isDeepStrictEqual } from 'node:util';
import { EventBatchSchema, EventInputSchema, Limits, parseOrThrow, RivuletError, type EventInput } from '@rivulet/contract';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseAppendBody } from './append-body.js';

/** parseAppendBody as it was: the schemas alone. */
function referenceParse(body: unknown): EventInput[] {
  return Array.isArray(body) ? parseOrThrow(EventBatchSchema, body, 'events') : [parseOrThrow(EventInputSchema, body, 'event')];
}

type Outcome = { events: EventInput[]; keys: string[][] } | { code: string; message: string; details: unknown };

function outcome(parse: (body: unknown) => EventInput[], body: unknown): Outcome {
  try {
    const events = parse(body);
    return { events, keys: events.map((e) => Object.keys(e)) };
  } catch (error) {
    if (!(error instanceof RivuletError)) throw error;
    return { code: error.code, message: error.message, details: error.details };
  }
}

function sameAsReference(body: unknown): void {
  const got = outcome(parseAppendBody, body);
  const want = outcome(referenceParse, body);
  if (!isDeepStrictEqual(got, want)) expect(got).toEqual(want);
}

const value = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom<unknown>(true, false, null, 0, 1, -1, 1.5, 2 ** 53 - 1, 2 ** 53, '', 'a', {}, [], 'x'.repeat(Limits.typeMaxLength), 'x'.repeat(Limits.typeMaxLength + 1)),
  fc.constantFrom(Limits.idempotencyKeyMaxLength, Limits.idempotencyKeyMaxLength + 1).map((n) => 'k'.repeat(n)),
);
const key = fc.constantFrom('type', 'payload', 'metadata', 'idempotencyKey', 'ephemeral', 'offset', 'source', 'extra', '__proto__');

/** Bodies as JSON.parse makes them: from texts, so an own "__proto__" key is possible too. */
const eventText = fc
  .tuple(fc.string({ minLength: 1, maxLength: 10 }), fc.array(fc.tuple(key, value), { maxLength: 5 }))
  .map(([type, entries]) => `{${[`"type":${JSON.stringify(type)}`, ...entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`)].join(',')}}`);
const bodyText = fc.oneof(
  eventText,
  fc.array(eventText, { maxLength: 4 }).map((events) => `[${events.join(',')}]`),
  fc.array(fc.tuple(key, value), { maxLength: 5 }).map((entries) => JSON.stringify(Object.fromEntries(entries))),
  fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
);

describe('parseAppendBody', () => {
  it('answers what the schemas answer: the same events, key order and rejections', () => {
    fc.assert(
      fc.property(bodyText, (text) => sameAsReference(JSON.parse(text))),
      { numRuns: 5000 },
    );
  });

  it('edge cases', () => {
    const bodies: unknown[] = [
      { type: 'app/x' },
      { type: 'app/x', payload: { a: 1 }, metadata: {}, idempotencyKey: 'k', ephemeral: true, offset: 3, source: { copiedFrom: [] } },
      { offset: 3, type: 'app/x', payload: { a: 1 } },
      { type: '' },
      { type: 'app/x', extra: 1 },
      { type: 'app/x', payload: [] },
      { type: 'app/x', ephemeral: false },
      { type: 'app/x', offset: 0 },
      JSON.parse('{"type":"app/x","__proto__":{"a":1}}'),
      JSON.parse('{"type":"app/x","payload":{"__proto__":{"a":1}}}'),
      [],
      [{ type: 'a' }, { type: '' }],
      [{ type: 'a' }, 1],
      null,
      'app/x',
      Array.from({ length: 10_001 }, () => ({ type: 'a' })),
    ];
    for (const body of bodies) sameAsReference(body);
  });

  it('keeps the payload object the body holds (an own "__proto__" key stays)', () => {
    const body = JSON.parse('{"type":"app/x","payload":{"__proto__":{"a":1}}}') as { payload: object };
    expect(parseAppendBody(body)[0]!.payload).toBe(body.payload);
  });
});
