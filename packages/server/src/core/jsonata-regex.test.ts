/**
 * JSONata's regular expressions on either engine (protocol §16.8): `useRegexEngine('linear')`
 * makes $match, $replace, $split and $contains run on core/regex-engine.ts with the same results
 * as on V8's engine, and checkJsonata refuses, on every host, the patterns the linear engine would
 * not run with JavaScript's meaning.
 */
import { RivuletError } from '@rivulet/contract';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { checkJsonata, evaluateJsonata, useRegexEngine, type RegexEngineChoice } from './jsonata.js';
import { defaultExpressionLimits, expressionBudget } from './expression-budget.js';

const budget = () => expressionBudget(defaultExpressionLimits, () => Date.now());

afterEach(() => useRegexEngine('native'));

async function outcome(engine: RegexEngineChoice, source: string, input: unknown): Promise<unknown> {
  useRegexEngine(engine);
  try {
    return { value: await evaluateJsonata(source, input, budget()) };
  } catch (error) {
    return { error: (error as { jsonataCode?: string }).jsonataCode ?? String(error) };
  }
}

const USES = (re: string): string => `{"match": $match(s, ${re}), "replace": $replace(s, ${re}, "<$0|$1>"), "split": $split(s, ${re}), "contains": $contains(s, ${re})}`;

describe('JSONata on the linear engine', () => {
  it.each([
    ['/@example\\.com$/i', 'ann@Example.COM'],
    ['/(\\w+)@(\\w+)/', 'ann@a, bob@b'],
    ['/^(\\d+)-(\\d+)?/m', '12-34\r\n5-'],
    ['/a(x)?/', 'banana'],
    ['/\\s*,\\s*/', 'a , b,c ,d'],
    ['/./', 'a😀'],
    ['/k/i', 'K\u212Ak'],
  ])('%s on %j: the same match, replace, split and contains as V8', async (re, s) => {
    const linear = await outcome('linear', USES(re), { s });
    expect(linear).toEqual(await outcome('native', USES(re), { s }));
    expect(linear).toHaveProperty('value.contains');
  });

  it('answers the match shape: match, index and groups (a group that took no part is null in JSON)', async () => {
    const expected = [
      { match: 'an', index: 1, groups: ['a', null, 'n'] },
      { match: 'an', index: 3, groups: ['a', null, 'n'] },
    ];
    expect(await outcome('linear', '$match(s, /(a)(x)?(n)/)', { s: 'banana' })).toEqual({ value: expected });
    expect(await outcome('native', '$match(s, /(a)(x)?(n)/)', { s: 'banana' })).toEqual({ value: expected });
  });

  it('judges a pattern that backtracks exponentially in linear time', async () => {
    useRegexEngine('linear');
    const t0 = performance.now();
    expect(await evaluateJsonata('$contains(s, /(a+)+$/)', { s: `${'a'.repeat(40)}b` }, budget())).toBe(false);
    expect(await evaluateJsonata('$contains(s, /(a+)+$/)', { s: 'aaa' }, budget())).toBe(true);
    expect(performance.now() - t0).toBeLessThan(5000);
  });

  it('runs a regex that $eval parses at run time on the same engine, refusing there what it cannot run', async () => {
    useRegexEngine('linear');
    const t0 = performance.now();
    expect(await evaluateJsonata('$eval("$contains(s, /(a+)+$/)")', { s: `${'a'.repeat(40)}b` }, budget())).toBe(false);
    expect(performance.now() - t0).toBeLessThan(5000);
    await expect(evaluateJsonata('$eval("$contains(s, /(a)\\\\1/)")', { s: 'aa' }, budget())).rejects.toThrow(/eval: .*is a backreference, which cannot be bounded in time/);
  });

  it('stops at a zero-length match as V8 does (D1004)', async () => {
    expect(await outcome('linear', '$match(s, /x*/)', { s: 'ab' })).toEqual(await outcome('native', '$match(s, /x*/)', { s: 'ab' }));
    expect(await outcome('linear', '$match(s, /x*/)', { s: 'ab' })).toEqual({ error: 'D1004' });
  });
});

// Patterns JSONata's scanner reads as a literal: no `/`, brackets balanced or escaped.
const atom = fc.oneof(
  fc.constantFrom('a', 'b', 'A', '\\.', '\\s', '\\w', '\\d', '.', '[ab]', '[^a]', '[a-c]', '\\u00df'),
  fc.constantFrom('(a)', '(b+)', '(?:ab)', '(a|b)', '(\\w+)'),
);
const term = fc.tuple(atom, fc.constantFrom('', '', '*', '+', '?', '{1,2}', '+?')).map(([a, q]) => a + q);
const regex = fc
  .tuple(fc.constantFrom('', '^'), fc.array(term, { minLength: 1, maxLength: 4 }), fc.constantFrom('', '$'), fc.constantFrom('', 'i', 'm'))
  .map(([start, terms, end, flags]) => `/${start}${terms.join('')}${end}/${flags}`);
const text = fc.array(fc.constantFrom('a', 'b', 'A', 'ß', ' ', '.', '1', '\n', '\r', '😀'), { maxLength: 10 }).map((cs) => cs.join(''));

describe('JSONata on the linear engine against V8, generated', () => {
  it('every regex function answers the same, errors included', async () => {
    await fc.assert(
      fc.asyncProperty(regex, text, async (re, s) => {
        const expression = USES(re);
        try {
          checkJsonata(expression, 'x');
        } catch {
          return;
        }
        expect(await outcome('linear', expression, { s }), `${re} on ${JSON.stringify(s)}`).toEqual(await outcome('native', expression, { s }));
      }),
      { numRuns: 300 },
    );
  });
});

describe('checkJsonata refuses what the linear engine cannot run, on every host', () => {
  it.each([
    ['$contains(s, /(?:(a)|b)+/)', '`(?:(a)|b)+` repeats a capturing group `(a)` that some repetitions skip, which the linear-time engine captures differently (use a non-capturing group): /(?:(a)|b)+/'],
    ['$match(s, /(a*)*/)', '`(a*)*` repeats a part that can match the empty string, which the linear-time engine matches differently: /(a*)*/'],
    ['$split(s, /a{1001}/)', '`a{1001}` repeats more than 1000 times, the most the linear-time engine allows: /a{1001}/'],
    ['$replace(s, /a$b/m, "")', '`$` under the m flag is supported by the linear-time engine only at the end of the pattern: /a$b/'],
  ])('%s', (source, reason) => {
    for (const engine of ['native', 'linear'] as const) {
      useRegexEngine(engine);
      let error: unknown;
      try {
        checkJsonata(source, 'filter.jsonataCondition');
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(RivuletError);
      expect((error as RivuletError).code).toBe('INVALID_INPUT');
      expect((error as RivuletError).message).toBe(`filter.jsonataCondition uses a regular expression that cannot be bounded in time with JavaScript's meaning: ${reason}`);
    }
  });

  it('keeps its message for backreferences and lookarounds', () => {
    expect(() => checkJsonata('$contains(s, /(a)\\1/)', 'f')).toThrow('f uses a regular expression with a backreference or a lookaround, which cannot be bounded in time: /(a)\\1/');
  });

  it.each(['$contains(s, /a{1000}/)', '$contains(s, /(?:(a)b)+/)', '$contains(s, /^a$/m)', '$contains(s, /(a*){2}/)'])('accepts %s', (source) => {
    expect(() => checkJsonata(source, 'f')).not.toThrow();
  });
});
