/**
 * The linear-time engine for JSONata's regular expressions (core/regex-engine.ts, protocol §16.8):
 * it answers as RegExp does — match, index, groups, lastIndex — for the patterns it accepts, held
 * against native RegExp case by case and over generated patterns and inputs; it refuses, with a
 * reason, what it cannot run with JavaScript's meaning; and its time stays linear where RegExp's
 * is exponential.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LinearRegExp, linearRegexRefusal } from './regex-engine.js';

type Step = { index: number; groups: Array<string | undefined>; lastIndex: number } | null;

/** The matches as JSONata's regex closure walks them: exec from lastIndex until a miss or an empty match. */
function walk(re: { lastIndex: number; exec(s: string): RegExpExecArray | null }, input: string, from = 0, limit = 20): Step[] {
  const steps: Step[] = [];
  re.lastIndex = from;
  for (let i = 0; i < limit; i++) {
    const m = re.exec(input);
    if (m === null) {
      steps.push(null);
      break;
    }
    steps.push({ index: m.index, groups: Array.from(m, (g) => g), lastIndex: re.lastIndex });
    if (m[0] === '') break;
  }
  return steps;
}

function both(source: string, flags: string, input: string, from = 0): { native: Step[]; linear: Step[] } {
  return { native: walk(new RegExp(source, `${flags}g`), input, from), linear: walk(new LinearRegExp(new RegExp(source, `${flags}g`)), input, from) };
}

describe('LinearRegExp answers as RegExp', () => {
  it.each([
    ['@example\\.com$', 'i', 'ann@EXAMPLE.com'],
    ['^(\\w+)@(\\w+)\\.com$', '', 'ann@example.com'],
    ['(\\d+)-(\\d+)?', '', '12-34 5- 6-7'],
    ['a|ab|abc', '', 'abc'],
    ['a+?b*?', '', 'aaabbb'],
    ['x*', '', 'axxb'],
    ['[^a-c]+', 'i', 'abcDEFabc'],
    // `.` leaves out every JavaScript line terminator, `\s` holds JavaScript's whitespace.
    ['.+', '', 'a\rb\u2028c\u2029d\ne'],
    ['\\s+', '', 'a \u00a0\ufeff\u3000\u2009b'],
    ['\\S+', '', 'a \u00a0b'],
    // A non-`u` pattern sees UTF-16 code units: an astral character is two of them.
    ['^.$', '', '😀'],
    ['^..$', '', '😀'],
    ['\\ud83d', '', 'x😀y'],
    ['.', '', 'a😀\ud800b\udc00'],
    ['[\\ud800-\\udbff][\\udc00-\\udfff]', '', 'x😀y'],
    // JavaScript's case folding, not Unicode's: no Kelvin sign for k, no long s for s, ß apart from ẞ.
    ['k', 'i', 'K\u212Ak'],
    ['s+', 'i', 'sS\u017F'],
    ['\u00df', 'i', '\u1e9e\u00df'],
    ['\u00b5', 'i', '\u039c\u03bc\u00b5'],
    ['[a-z]+', 'i', 'ABC\u0131\u0130'],
    ['\\W+', 'i', 'ab\u212A\u017F!'],
    // Anchors under `m` follow every line terminator.
    ['^foo$', 'm', 'a\r\nfoo\r\nb'],
    ['^\\w', 'm', 'a\rb\u2028c\u2029d\ne'],
    ['(o)$', 'm', 'fo\r\nbo\u2029go'],
    ['^a$|^b$', 'm', 'a\rb\nc'],
    ['(x)?$', 'm', 'ab\r\n'],
    ['^$', 'm', '\r\r'],
    ['^', 'm', ''],
    ['$', '', 'ab\n'],
    ['\\bw\\w*\\b', '', 'a wa\u00e9 w'],
    ['\\B.', '', 'ab c'],
    ['(a)|b', '', 'b'],
    ['(?:(a)b)+', '', 'ababx'],
    ['(?<year>\\d{4})-(?<m>\\d\\d)', '', 'on 2024-05'],
    ['a{2,3}', '', 'aaaaaaa'],
    ['(a*){2}', '', 'aab'],
    ['[]', '', 'ab'],
    ['[^]+', '', 'a\nb'],
    ['a{,2}', '', 'a{,2}'],
    ['\\cJ\\x41\\u0042\\0', '', '\nAB\0'],
    ['[\\b]', '', 'a\bb'],
  ])('/%s/%s on %j', (source, flags, input) => {
    const { native, linear } = both(source, flags, input);
    expect(linear).toEqual(native);
  });

  it('starts from lastIndex, and a match from there sees the characters before it', () => {
    for (const from of [0, 1, 2, 3, 4, 5, 9]) {
      for (const [source, flags] of [
        ['\\ba', ''],
        ['^a', ''],
        ['^a', 'm'],
        ['(?:^|x)a', ''],
      ] as const) {
        const { native, linear } = both(source, flags, 'a xa\na😀a', from);
        expect(linear, `/${source}/${flags} from ${from}`).toEqual(native);
      }
    }
  });

  it('one instance on one input, from any lastIndex, forwards and backwards', () => {
    const input = 'a\rab\nba\r\na😀a';
    for (const [source, flags] of [
      ['^a', 'm'],
      ['a$', 'm'],
      ['\\ba|b', ''],
    ] as const) {
      const native = new RegExp(source, `${flags}g`);
      const linear = new LinearRegExp(native);
      for (const from of [0, 3, 1, 9, 2, 12, 0, 5, 4]) {
        native.lastIndex = from;
        linear.lastIndex = from;
        const n = native.exec(input);
        const l = linear.exec(input);
        expect([l && [...l], l?.index, linear.lastIndex], `/${source}/${flags} from ${from}`).toEqual([n && [...n], n?.index, native.lastIndex]);
      }
    }
  });

  it('walks many matches of a lookbehind-translated anchor in linear time', () => {
    const input = 'a\r'.repeat(50_000);
    const t0 = performance.now();
    const steps = walk(new LinearRegExp(/^a/gm), input, 0, 60_000);
    expect(steps).toHaveLength(50_001);
    expect(steps[49_999]).toEqual({ index: 99_998, groups: ['a'], lastIndex: 99_999 });
    // Each match reading the input again from its start (its surrogates, a lookbehind's state)
    // would make this quadratic: minutes, not a second.
    expect(performance.now() - t0).toBeLessThan(10_000);
  });

  it('answers the shape JSONata reads: index, input and one entry per group', () => {
    const m = new LinearRegExp(/(a)(x)?/g).exec('ba')!;
    expect([...m]).toEqual(['a', 'a', undefined]);
    expect(m.index).toBe(1);
    expect(m.input).toBe('ba');
    expect(m.length).toBe(3);
  });
});

describe('LinearRegExp is linear where RegExp backtracks', () => {
  it.each([
    ['(a+)+$', `${'a'.repeat(40)}b`],
    ['(a|aa)+$', `${'a'.repeat(60)}b`],
    ['^(\\w+\\s?)*$', `${'word '.repeat(30)}!`],
    ['(a+)+$', `${'a'.repeat(200_000)}b`],
  ])('/%s/ on %# ends at once, with no match', (source, input) => {
    const t0 = performance.now();
    expect(new LinearRegExp(new RegExp(source, 'g')).exec(input)).toBeNull();
    // Seconds of slack for a loaded machine: RegExp would take hours on the first three.
    expect(performance.now() - t0).toBeLessThan(5000);
  });
});

describe('linearRegexRefusal', () => {
  it.each([
    ['a{1000}', ''],
    ['a{0,1000}', ''],
    ['(?:a{100}){10}', ''],
    ['(?:(?:a{10}){10}){10}', ''],
    ['(a*){3}', ''],
    ['(?:(a)b)+', ''],
    ['(?:(a)|(b))', ''],
    ['((a)|b)', ''],
    ['(a)?', ''],
    ['(a|b)+', ''],
    ['(?:(a)+b)+', ''],
    ['a$', 'm'],
    ['(a$)', 'm'],
    ['a$|b$', 'm'],
    ['a$b', ''],
    ['^a', 'm'],
  ])('accepts /%s/%s', (source, flags) => {
    expect(linearRegexRefusal(source, flags)).toBeUndefined();
  });

  it.each([
    ['a{1001}', '', '`a{1001}` repeats more than 1000 times, the most the linear-time engine allows'],
    ['a{2,1001}', '', '`a{2,1001}` repeats more than 1000 times, the most the linear-time engine allows'],
    ['(?:a{100}){11}', '', 'it repeats a part more than 1000 times in all (nested repetition counts multiply), the most the linear-time engine allows'],
    ['(?:(?:a{10}){10}){11}', '', 'it repeats a part more than 1000 times in all (nested repetition counts multiply), the most the linear-time engine allows'],
    ['(a*)*', '', '`(a*)*` repeats a part that can match the empty string, which the linear-time engine matches differently'],
    ['(?:a|)+', '', '`(?:a|)+` repeats a part that can match the empty string, which the linear-time engine matches differently'],
    ['(a*){2,3}', '', '`(a*){2,3}` repeats a part that can match the empty string, which the linear-time engine matches differently'],
    ['(?:\\b)?', '', '`(?:\\b)?` repeats a part that can match the empty string, which the linear-time engine matches differently'],
    ['(?:(a)|b)+', '', '`(?:(a)|b)+` repeats a capturing group `(a)` that some repetitions skip, which the linear-time engine captures differently (use a non-capturing group)'],
    ['(?:(a)?b){2}', '', '`(?:(a)?b){2}` repeats a capturing group `(a)` that some repetitions skip, which the linear-time engine captures differently (use a non-capturing group)'],
    ['((a)|b)+', '', '`((a)|b)+` repeats a capturing group `(a)` that some repetitions skip, which the linear-time engine captures differently (use a non-capturing group)'],
    ['a$b', 'm', '`$` under the m flag is supported by the linear-time engine only at the end of the pattern'],
    ['(?:a$)+', 'm', '`$` under the m flag is supported by the linear-time engine only at the end of the pattern'],
    ['(a)\\1', '', '`\\1` is a backreference, which cannot be bounded in time'],
    ['a(?=b)', '', '`(?=b)` is a lookaround, which cannot be bounded in time'],
    ['(?i:a)', '', '`(?i:a)` uses inline flags, which the linear-time engine does not support'],
    ['a', 's', 'the flag s is not supported by the linear-time engine'],
  ])('refuses /%s/%s: %s', (source, flags, reason) => {
    expect(linearRegexRefusal(source, flags)).toBe(reason);
  });

  it('refuses at construction what it would refuse at configuration', () => {
    expect(() => new LinearRegExp(/(a*)*/g)).toThrow('repeats a part that can match the empty string');
  });
});

// ---------------------------------------------------------------- differential, generated

// Characters where JavaScript and RE2 could disagree: case folding, line terminators,
// whitespace, surrogates (an astral pair and lone halves), word characters.
const ALPHABET = ['a', 'b', 'A', 'B', 'k', 'K', '\u212A', 's', '\u017F', '\u00df', '\u1e9e', '\u00b5', '\u03bc', '\u0131', '\u0130', '1', '_', '-', ' ', '\u00a0', '\n', '\r', '\u2028', '😀', '\ud83d', '\ude00', '.'];
const META = new Set(['.', '-', '\\', '^', '$', '*', '+', '?', '(', ')', '[', ']', '{', '}', '|', '/']);
const escape = (c: string): string => (META.has(c) ? `\\${c}` : c.length === 1 && c.charCodeAt(0) >= 0x80 ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : c === '\n' ? '\\n' : c === '\r' ? '\\r' : c);
const anyUnit = fc.constantFrom(...ALPHABET.flatMap((c) => Array.from({ length: c.length }, (_, i) => c[i]!)));
// Mostly a few letters, so that patterns and inputs meet often enough to match in many ways.
const unit = fc.oneof({ weight: 3, arbitrary: fc.constantFrom('a', 'b', 'A', '\n') }, { weight: 2, arbitrary: anyUnit });
const char = unit.map(escape);
const classEscape = fc.constantFrom('\\d', '\\D', '\\w', '\\W', '\\s', '\\S');
const classMember = fc.oneof(char, classEscape, fc.tuple(unit, unit).map(([a, b]) => (a <= b ? `${escape(a)}-${escape(b)}` : `${escape(b)}-${escape(a)}`)));
const charClass = fc.tuple(fc.boolean(), fc.array(classMember, { minLength: 1, maxLength: 3 })).map(([negate, members]) => `[${negate ? '^' : ''}${members.join('')}]`);
const quantifier = fc.tuple(fc.constantFrom('*', '+', '?', '{2}', '{1,}', '{0,2}', '{1,3}'), fc.boolean()).map(([q, lazy]) => `${q}${lazy ? '?' : ''}`);

const { pattern } = fc.letrec<{ pattern: string; sequence: string; term: string; atom: string }>((tie) => ({
  pattern: fc.array(tie('sequence'), { minLength: 1, maxLength: 3 }).map((alternatives) => alternatives.join('|')),
  sequence: fc.array(tie('term'), { minLength: 0, maxLength: 4 }).map((terms) => terms.join('')),
  term: fc.oneof(
    { weight: 3, arbitrary: tie('atom') },
    { weight: 2, arbitrary: fc.tuple(tie('atom'), quantifier).map(([a, q]) => a + q) },
    // A repeated choice between captures, where JavaScript and RE2 could keep different groups.
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom('(', '(?:'), fc.array(fc.oneof(char, fc.tuple(char, char).map(([a, b]) => `(${a}${b})`), char.map((a) => `(${a})`)), { minLength: 2, maxLength: 3 }), quantifier).map(([open, alternatives, q]) => `${open}${alternatives.join('|')})${q}`) },
    { weight: 1, arbitrary: fc.constantFrom('^', '$', '\\b', '\\B') },
  ),
  atom: fc.oneof(
    { weight: 4, arbitrary: char },
    { weight: 1, arbitrary: fc.constantFrom('.', '\\d', '\\D', '\\w', '\\W', '\\s', '\\S') },
    { weight: 2, arbitrary: charClass },
    { depthSize: 'small', weight: 2, arbitrary: fc.tuple(fc.constantFrom('(', '(?:'), tie('pattern')).map(([open, body]) => `${open}${body})`) },
  ),
}));
const flags = fc.constantFrom('', 'i', 'm', 'im');
const input = fc.array(unit, { maxLength: 12 }).map((units) => units.join(''));

describe('LinearRegExp against RegExp over generated patterns and inputs', () => {
  it('answers the same matches, groups and lastIndex for every pattern it accepts', () => {
    let accepted = 0;
    let runs = 0;
    fc.assert(
      fc.property(pattern, flags, fc.array(input, { minLength: 1, maxLength: 4 }), (source, f, inputs) => {
        let native: RegExp;
        try {
          native = new RegExp(source, `${f}g`);
        } catch {
          return;
        }
        runs++;
        if (linearRegexRefusal(source, `${f}g`) !== undefined) return;
        accepted++;
        const linear = new LinearRegExp(native);
        for (const s of inputs) expect(walk(linear, s), `/${source}/${f} on ${JSON.stringify(s)}`).toEqual(walk(native, s));
      }),
      { numRuns: 1000 },
    );
    // The generator aims at the accepted subset and at its edges (repeated choices between
    // captures are often refused): a good share of what it makes must be run, not refused.
    expect(accepted).toBeGreaterThan(runs * 0.3);
  });
});
