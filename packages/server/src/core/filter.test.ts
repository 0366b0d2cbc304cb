/**
 * Filters and transforms of delivery (protocol §12.3, §13.2, §13.5): event types, JSONata
 * conditions (a throw is an ordered failure, never a pass), what copy delivery excludes, and
 * transforms shaping {type?, payload?, metadata?} with omitted fields copied verbatim and anything
 * else refused.
 */
import { EventType, Limits, type CommittedEvent } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { DROP_AUDIT_PREFIX, TransformError, conditionMatches, excludedFromCopy, shapeEvent, typeMatches, unshaped } from './filter.js';
import { JsonataError } from './jsonata.js';
import { defaultExpressionLimits, expressionBudget } from './expression-budget.js';

const budget = expressionBudget(defaultExpressionLimits, () => Date.now());

const event = (extra: Partial<CommittedEvent> = {}): CommittedEvent => ({
  path: '/s',
  offset: 7,
  createdAt: '2025-01-01T00:00:00.000Z',
  type: 'shop/order-created',
  payload: { id: 7, total: 30, lines: [{ sku: 'a' }] },
  metadata: { by: 'ci' },
  ...extra,
});

async function transformError(transform: string, e: CommittedEvent = event()): Promise<Error> {
  try {
    await shapeEvent(transform, e, budget);
  } catch (error) {
    return error as Error;
  }
  throw new Error(`expected ${transform} to be refused`);
}

describe('typeMatches', () => {
  it('matches every type without a filter or without eventTypes', () => {
    expect(typeMatches(undefined, 'x')).toBe(true);
    expect(typeMatches({}, 'x')).toBe(true);
    expect(typeMatches({ jsonataCondition: 'false' }, 'x')).toBe(true);
  });

  it('matches exactly the listed types', () => {
    const filter = { eventTypes: ['a/b', 'c/d'] };
    expect(typeMatches(filter, 'a/b')).toBe(true);
    expect(typeMatches(filter, 'c/d')).toBe(true);
    expect(typeMatches(filter, 'a/bc')).toBe(false);
    expect(typeMatches(filter, 'A/B')).toBe(false);
  });
});

describe('conditionMatches', () => {
  it('matches without a condition', async () => {
    expect(await conditionMatches(undefined, event(), budget)).toBe(true);
    expect(await conditionMatches({ eventTypes: ['x'] }, event(), budget)).toBe(true);
  });

  it('sees the whole committed event and uses JSONata truthiness', async () => {
    expect(await conditionMatches({ jsonataCondition: 'payload.total > 20 and metadata.by = "ci" and offset = 7' }, event(), budget)).toBe(true);
    expect(await conditionMatches({ jsonataCondition: 'payload.total > 50' }, event(), budget)).toBe(false);
    expect(await conditionMatches({ jsonataCondition: 'payload.missing' }, event(), budget)).toBe(false);
    expect(await conditionMatches({ jsonataCondition: 'payload.lines' }, event(), budget)).toBe(true);
    expect(await conditionMatches({ jsonataCondition: '""' }, event(), budget)).toBe(false);
    expect(await conditionMatches({ jsonataCondition: '0' }, event(), budget)).toBe(false);
  });

  it('throws a JsonataError when the condition throws (never a pass)', async () => {
    await expect(conditionMatches({ jsonataCondition: '$number(payload.id & "x") > 0' }, event(), budget)).rejects.toBeInstanceOf(JsonataError);
    await expect(conditionMatches({ jsonataCondition: '$error("nope")' }, event(), budget)).rejects.toThrow('nope');
  });
});

describe('excludedFromCopy', () => {
  it('excludes connection facts and drop audits only', () => {
    expect(excludedFromCopy(event({ type: EventType.connectionOpened }))).toBe(true);
    expect(excludedFromCopy(event({ type: EventType.connectionClosed }))).toBe(true);
    expect(excludedFromCopy(event({ type: EventType.errorOccurred, idempotencyKey: `${DROP_AUDIT_PREFIX}["/a","k"]` }))).toBe(true);
  });

  it('copies everything else, including other error-occurred lines and subscription facts (protocol §13.5)', () => {
    expect(excludedFromCopy(event({ type: EventType.errorOccurred }))).toBe(false);
    expect(excludedFromCopy(event({ type: EventType.errorOccurred, idempotencyKey: 'rivulet-internal/skip:["k",2,5]' }))).toBe(false);
    expect(excludedFromCopy(event({ type: 'app/x', idempotencyKey: `${DROP_AUDIT_PREFIX}x` }))).toBe(false);
    for (const type of [
      EventType.created,
      EventType.subscriptionConfigured,
      EventType.subscriptionCursorSet,
      EventType.subscriptionDeliveryHalted,
      EventType.subscriptionDeliveryResumed,
      EventType.subscriptionRemoved,
      EventType.paused,
      EventType.resumed,
    ]) {
      expect(excludedFromCopy(event({ type })), type).toBe(false);
    }
  });
});

describe('unshaped', () => {
  it('keeps type, payload and metadata; omitted stays omitted', () => {
    expect(unshaped(event({ idempotencyKey: 'i', source: { copiedFrom: [] } }))).toEqual({
      type: 'shop/order-created',
      payload: { id: 7, total: 30, lines: [{ sku: 'a' }] },
      metadata: { by: 'ci' },
    });
    const bare = unshaped({ path: '/s', offset: 1, createdAt: 'x', type: 't' });
    expect(bare).toEqual({ type: 't' });
    expect(bare).not.toHaveProperty('payload');
    expect(bare).not.toHaveProperty('metadata');
  });
});

describe('shapeEvent', () => {
  it('without a transform answers the event unshaped', async () => {
    expect(await shapeEvent(undefined, event(), budget)).toEqual(unshaped(event()));
  });

  it('copies omitted fields verbatim', async () => {
    expect(await shapeEvent('{"payload": {"id": payload.id}}', event(), budget)).toEqual({
      type: 'shop/order-created',
      payload: { id: 7 },
      metadata: { by: 'ci' },
    });
    expect(await shapeEvent('{"type": "shop/order-seen"}', event(), budget)).toEqual({
      type: 'shop/order-seen',
      payload: { id: 7, total: 30, lines: [{ sku: 'a' }] },
      metadata: { by: 'ci' },
    });
    expect(await shapeEvent('{}', event(), budget)).toEqual(unshaped(event()));
    // a field the transform yields nothing for is omitted, hence copied
    expect(await shapeEvent('{"metadata": metadata.missing}', event(), budget)).toEqual(unshaped(event()));
  });

  it('shapes all three fields and sees the whole event', async () => {
    expect(await shapeEvent('{"type": "copy/" & type, "payload": {"at": offset}, "metadata": {"from": path}}', event(), budget)).toEqual({
      type: 'copy/shop/order-created',
      payload: { at: 7 },
      metadata: { from: '/s' },
    });
  });

  it('answers plain JSON objects (no null prototypes)', async () => {
    const shaped = await shapeEvent('{"payload": {"nested": {"x": payload.id}}}', event(), budget);
    expect(Object.getPrototypeOf(shaped.payload)).toBe(Object.prototype);
    expect(Object.getPrototypeOf((shaped.payload as { nested: object }).nested)).toBe(Object.prototype);
  });

  it.each([
    ['a string', '"hello"', 'jsonataTransform must produce an object {type?, payload?, metadata?}, got "hello"'],
    ['a number', '42', 'jsonataTransform must produce an object {type?, payload?, metadata?}, got 42'],
    ['an array', '[1, 2]', 'jsonataTransform must produce an object {type?, payload?, metadata?}, got [1,2]'],
    ['null', 'null', 'jsonataTransform must produce an object {type?, payload?, metadata?}, got null'],
    ['nothing', 'payload.missing', 'jsonataTransform must produce an object {type?, payload?, metadata?}, got nothing'],
  ])('refuses %s', async (_name, transform, message) => {
    const error = await transformError(transform);
    expect(error).toBeInstanceOf(TransformError);
    expect(error.message).toBe(message);
  });

  it('cuts a long refused result in the message', async () => {
    const error = await transformError('$pad("", 500, "x")');
    expect(error.message.length).toBeLessThan(200);
  });

  it.each(['source', 'idempotencyKey', 'offset', 'ephemeral', 'extra'])('refuses the extra key %s', async (key) => {
    const error = await transformError(`{"payload": {}, "${key}": 1}`);
    expect(error).toBeInstanceOf(TransformError);
    expect(error.message).toBe(`jsonataTransform produced "${key}"; it may shape only type, payload and metadata`);
  });

  it.each([
    ['a number', '{"type": 5}'],
    ['an empty string', '{"type": ""}'],
    ['null', '{"type": null}'],
    ['an over-long string', `{"type": $pad("", ${Limits.typeMaxLength + 1}, "t")}`],
  ])('refuses a type that is %s', async (_name, transform) => {
    const error = await transformError(transform);
    expect(error).toBeInstanceOf(TransformError);
    expect(error.message).toBe(`jsonataTransform produced a type that is not a string of 1–${Limits.typeMaxLength} characters`);
  });

  it('accepts a type of exactly the maximum length', async () => {
    const shaped = await shapeEvent(`{"type": $pad("", ${Limits.typeMaxLength}, "t")}`, event(), budget);
    expect(shaped.type).toHaveLength(Limits.typeMaxLength);
  });

  it.each([
    ['payload', '[1]'],
    ['payload', '"s"'],
    ['payload', 'null'],
    ['metadata', '3'],
  ])('refuses a %s that is not an object (%s)', async (field, value) => {
    const error = await transformError(`{"${field}": ${value}}`);
    expect(error).toBeInstanceOf(TransformError);
    expect(error.message).toBe(`jsonataTransform produced a ${field} that is not an object`);
  });

  it('a transform that throws is a JsonataError', async () => {
    expect(await transformError('{"payload": {"n": payload.id + "x"}}')).toBeInstanceOf(JsonataError);
  });
});
