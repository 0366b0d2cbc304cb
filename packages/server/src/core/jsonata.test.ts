/**
 * JSONata helpers (protocol §9.3, §12.3): truthiness as $boolean() defines it, the compile cache,
 * JSONata's plain-object errors wrapped in real Errors with their position, and results copied to
 * plain JSON (JSONata builds null-prototype objects and tagged sequences).
 */
import { RivuletError } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { JsonataError, checkJsonata, compileJsonata, evaluateJsonata, jsonataTruthy } from './jsonata.js';
import { defaultExpressionLimits, expressionBudget } from './expression-budget.js';

const budget = expressionBudget(defaultExpressionLimits, () => Date.now());

async function evaluationError(source: string, input: unknown): Promise<JsonataError> {
  try {
    await evaluateJsonata(source, input, budget);
  } catch (error) {
    expect(error).toBeInstanceOf(JsonataError);
    return error as JsonataError;
  }
  throw new Error(`expected ${source} to throw`);
}

describe('jsonataTruthy', () => {
  it.each([
    [undefined, false],
    [null, false],
    [false, false],
    [true, true],
    [0, false],
    [1, true],
    [-0.5, true],
    ['', false],
    ['false', true],
    [[], false],
    [[0, false, ''], false],
    [[0, 'x'], true],
    [[[], [1]], true],
    [{}, false],
    [{ a: 0 }, true],
  ])('%j is %s', (value, truthy) => {
    expect(jsonataTruthy(value)).toBe(truthy);
  });

  it('agrees with $boolean() on evaluated values', async () => {
    for (const expr of ['0', '1', '""', '"a"', '[]', '[0]', '[0, 1]', '{}', '{"a": 1}', 'true', 'false', 'null', 'nothing']) {
      const value = await evaluateJsonata(expr, {}, budget);
      const viaBoolean = await evaluateJsonata(`$boolean(${expr})`, {}, budget);
      expect(jsonataTruthy(value), expr).toBe(viaBoolean === true);
    }
  });
});

describe('compileJsonata', () => {
  it('compiles once and answers the cached compilation', () => {
    const a = compileJsonata('payload.cached + 1');
    expect(compileJsonata('payload.cached + 1')).toBe(a);
    expect(compileJsonata('payload.cached + 2')).not.toBe(a);
  });

  it('evicts the oldest compilation beyond its bound (2000)', () => {
    const first = compileJsonata('"evict-me"');
    for (let i = 0; i < 2000; i++) compileJsonata(`"filler-${i}"`);
    expect(compileJsonata('"evict-me"')).not.toBe(first);
  });

  it('wraps a syntax error in a real JsonataError with position, token and code', () => {
    let caught: unknown;
    try {
      compileJsonata('payload.n = (');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(JsonataError);
    expect(caught).toBeInstanceOf(Error);
    const e = caught as JsonataError;
    expect(e.name).toBe('JsonataError');
    expect(e.message).toBe('Expected ")" before end of expression');
    expect(e.position).toBe(13);
    expect(e.token).toBe('(end)');
    expect(e.jsonataCode).toBe('S0203');
    expect(typeof e.stack).toBe('string');
  });

  it('does not cache a failed compilation', () => {
    expect(() => compileJsonata('(')).toThrow(JsonataError);
    expect(() => compileJsonata('(')).toThrow(JsonataError);
  });
});

describe('checkJsonata', () => {
  it('accepts valid JSONata', () => {
    expect(() => checkJsonata('payload.n > 1 and type = "x"', 'filter.jsonataCondition')).not.toThrow();
  });

  it('is INVALID_INPUT naming the field, with the position in message and details', () => {
    let caught: unknown;
    try {
      checkJsonata('payload.n = (', 'filter.jsonataCondition');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RivuletError);
    const e = caught as RivuletError;
    expect(e.code).toBe('INVALID_INPUT');
    expect(e.message).toBe('filter.jsonataCondition is not valid JSONata at position 13: Expected ")" before end of expression');
    expect(e.details).toEqual({ field: 'filter.jsonataCondition', position: 13, token: '(end)', jsonataCode: 'S0203' });
  });
});

describe('evaluateJsonata', () => {
  it('answers plain JSON: objects with Object.prototype, arrays without sequence tags', async () => {
    const result = (await evaluateJsonata('{"a": {"b": [1, 2]}, "c": items.x}', { items: [{ x: 1 }, { x: 2 }] }, budget)) as Record<string, unknown>;
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(result.a)).toBe(Object.prototype);
    expect(result).toEqual({ a: { b: [1, 2] }, c: [1, 2] });
    expect(Object.keys(result.c as object)).toEqual(['0', '1']);
    const sequence = await evaluateJsonata('items.x', { items: [{ x: 1 }, { x: 2 }] }, budget);
    expect(sequence).toEqual([1, 2]);
    expect(Object.keys(sequence as object)).toEqual(['0', '1']);
    expect(JSON.stringify(result)).toBe('{"a":{"b":[1,2]},"c":[1,2]}');
  });

  it('answers undefined when nothing matches, and scalars as they are', async () => {
    expect(await evaluateJsonata('payload.missing', { payload: {} }, budget)).toBeUndefined();
    expect(await evaluateJsonata('payload.n * 2', { payload: { n: 21 } }, budget)).toBe(42);
    expect(await evaluateJsonata('null', {}, budget)).toBeNull();
  });

  it('wraps a runtime error in a JsonataError with position, token and code', async () => {
    const e = await evaluationError('$number(payload.n) > 0', { payload: { n: 'abc' } });
    expect(e.message).toBe('Unable to cast value to a number: "abc"');
    expect(e.jsonataCode).toBe('D3030');
    expect(e.position).toBe(8);
    expect(e.token).toBe('number');

    const e2 = await evaluationError('payload.n + "a"', { payload: { n: 1 } });
    expect(e2.jsonataCode).toBe('T2002');
    expect(e2.position).toBe(11);

    const e3 = await evaluationError('$error("boom")', {});
    expect(e3.message).toBe('boom');
  });
});
