import { isDeepStrictEqual } from 'node:util';
import { Limits, RivuletError } from '@rivulet/contract';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonDepthExceeds, parseJsonText } from './body.js';

/** parseJsonText without its fast paths: the depth walk and a reviver refusing every non-finite number. */
function referenceParse(text: string): unknown {
  if (text.trim() === '') throw new RivuletError('INVALID_INPUT', 'request body is empty; expected JSON');
  if (jsonDepthExceeds(text, Limits.jsonMaxDepth)) {
    throw new RivuletError('INVALID_INPUT', `request body nests JSON deeper than ${Limits.jsonMaxDepth} levels`);
  }
  try {
    return JSON.parse(text, (_key, value: unknown) => {
      if (typeof value === 'number' && !Number.isFinite(value)) {
        throw new RivuletError('INVALID_INPUT', 'request body holds a number too large to represent (JSON numbers must be finite doubles)');
      }
      return value;
    });
  } catch (error) {
    if (error instanceof RivuletError) throw error;
    const detail = error instanceof Error ? error.message : String(error);
    throw new RivuletError('INVALID_INPUT', `request body is not valid JSON: ${detail}`);
  }
}

type Outcome = { value: unknown } | { code: string; message: string };

function outcome(parse: (text: string) => unknown, text: string): Outcome {
  try {
    return { value: parse(text) };
  } catch (error) {
    if (!(error instanceof RivuletError)) throw error;
    return { code: error.code, message: error.message };
  }
}

function sameAsReference(text: string): void {
  const got = outcome(parseJsonText, text);
  const want = outcome(referenceParse, text);
  if (!isDeepStrictEqual(got, want)) expect(got).toEqual(want);
}

const nested = (depth: number, open: string, close: string, inner = '1') => open.repeat(depth) + inner + close.repeat(depth);

/** Numbers around the edges of the double range and of the RegExp screen. */
const numberText = fc
  .tuple(
    fc.constantFrom('', '-'),
    fc.oneof(fc.integer({ min: 1, max: 320 }), fc.constantFrom(1, 2, 299, 300, 301, 308, 309, 310)),
    fc.option(fc.integer({ min: 1, max: 20 })),
    fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.oneof(fc.integer({ min: 0, max: 999 }), fc.constantFrom(99, 308, 309, 400))), {
      nil: undefined,
    }),
  )
  .map(([sign, intDigits, fraction, exponent]) => {
    const int = '9'.repeat(intDigits);
    const frac = fraction === null ? '' : `.${'5'.repeat(fraction)}`;
    const exp = exponent ? `${exponent[0]}${exponent[1]}${String(exponent[2]).padStart(2, '0')}` : '';
    return `${sign}${int}${frac}${exp}`;
  });

const bodyText = fc.oneof(
  fc.json(),
  fc.jsonValue().map((v) => JSON.stringify({ type: 'app/x', payload: { v } })),
  numberText.map((n) => `{"type":"app/x","payload":{"n":${n}}}`),
  fc.array(numberText, { maxLength: 4 }).map((ns) => `[${ns.join(',')}]`),
  fc.string(),
  fc.json().chain((t) => fc.nat(t.length).map((cut) => t.slice(0, cut))),
  fc.integer({ min: 120, max: 140 }).chain((d) => fc.constantFrom(nested(d, '[', ']'), nested(d, '{"a":', '}'), nested(d, '[', ']', '1e999'), `"${'['.repeat(d)}"`)),
  fc.constantFrom('', '  ', '\n', '{}', '[]', 'null', '"x"', ' {"a":1} ', '{"__proto__":{"n":1e999}}', '{"a":1e999,', '{"a":"1e999"}'),
);

describe('parseJsonText', () => {
  it('answers exactly what the depth walk and a reviver answer', () => {
    fc.assert(fc.property(bodyText, sameAsReference), { numRuns: 3000 });
  });

  it('edge cases of the fast paths', () => {
    const texts = [
      nested(128, '[', ']'),
      nested(129, '[', ']'),
      nested(129, '[', ']').slice(0, -1),
      `{"s":"${'{'.repeat(200)}"}`,
      `{"s":"${'['.repeat(200)}","a":${nested(129, '[', ']')}}`,
      `[${Array.from({ length: 200 }, () => '{}').join(',')}]`,
      '{"n":1e999}',
      '{"n":-1e999}',
      '{"n":1e308}',
      `{"n":${'9'.repeat(310)}}`,
      `{"n":${'9'.repeat(250)}e99}`,
      `{"n":[1,2,{"m":1E+400}]}`,
      '{"n":1e999} x',
      '{"__proto__":{"a":1}}',
    ];
    for (const text of texts) sameAsReference(text);
  });

  it('refuses every number that overflows a double, however it is written', () => {
    // 250 nines and e99: no 3-digit exponent and no 300 digits in a row (a former screen let it
    // through, and it was stored as null).
    for (const n of [`${'9'.repeat(250)}e99`, `${'9'.repeat(250)}e199`, `-${'9'.repeat(309)}`, '1e309', '0.1e310']) {
      expect(() => parseJsonText(`{"n":${n}}`), n).toThrow(/number too large/);
    }
    // The largest finite doubles and a long number that is not too large are kept.
    expect(parseJsonText('{"n":1.7976931348623157e308}')).toEqual({ n: Number.MAX_VALUE });
    expect(parseJsonText(`{"n":0.${'9'.repeat(400)}}`)).toEqual({ n: 1 });
    expect(parseJsonText('{"n":1e-400}')).toEqual({ n: 0 });
  });

  it('an own "__proto__" key stays an own key', () => {
    const value = parseJsonText('{"__proto__":{"a":1}}') as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
  });
});
