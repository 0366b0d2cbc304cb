/**
 * JSONata's regular expressions on a linear-time engine (protocol §16.8): a JavaScript pattern,
 * as JSONata parsed it (flags `i`, `m`; no `u`), is translated into RE2 syntax and run by re2js,
 * whose time is linear in the input whatever the pattern. JSONata constructs its regex engine
 * with the parsed RegExp and calls `exec` from `lastIndex` (its `RegexEngine` option); `LinearRegExp`
 * answers the same as RegExp would for every pattern `linearRegexRefusal` does not refuse.
 *
 * The translation keeps JavaScript's meaning where RE2's differs:
 * - a non-`u` pattern matches UTF-16 code units, RE2 matches code points: each surrogate code unit
 *   is moved, in the pattern and in an input that holds one, to a code point of its own above the
 *   BMP (U+10000 + unit − U+D800), and positions are mapped back;
 * - every character, class and escape (`.`, `\s`, `\w`, `\d`, …) is written out as an explicit
 *   set of code units, so `.` leaves out `\r`, U+2028 and U+2029 as in JavaScript, and `\s` holds
 *   JavaScript's whitespace;
 * - `i` is JavaScript's case folding (each code unit with its upper case, never from non-ASCII to
 *   ASCII), written out per character instead of RE2's Unicode folding (`k` does not match the
 *   Kelvin sign);
 * - under `m`, `^` also follows `\r`, U+2028 and U+2029 (a lookbehind, which re2js runs in linear
 *   time) and a `$` that ends the pattern also precedes them (it takes the terminator into the
 *   match, which is then cut back).
 * What cannot be kept is refused (`linearRegexRefusal`), see protocol §16.8.
 */
import { RegExpParser, type AST } from '@eslint-community/regexpp';
import { RE2JS } from 're2js';
import { DIGIT, DOT, SPACE, WORD, caseClosed, complement, of, prepared, range, union, writeSet, type Ranges } from './regex-sets.js';

/** A pattern the linear engine cannot run with JavaScript's meaning; the message says why. */
export class RegexRefused extends Error {
  override readonly name = 'RegexRefused';
}

// ---------------------------------------------------------------- translation

interface Compiled {
  /** The compiled pattern. */
  re2: RE2JS;
  /** For each JavaScript group 1…n, its group number in the RE2 pattern. */
  groups: number[];
  /** RE2 groups that take part when a final `$` under `m` took a line terminator into the match. */
  markers: number[];
}

interface Translation extends Compiled {
  /**
   * Under `m` with `^` or `$`: the pattern for an input whose only line terminator is `\n`, where
   * RE2's own anchors mean JavaScript's (no lookbehind, which re2js runs on its slowest engine).
   */
  newlinesOnly?: Compiled;
}

// RE2's limit on a repetition count.
const MAX_REPEAT = 1000;
const parser = new RegExpParser({ ecmaVersion: 2025 });

function parse(source: string): AST.Pattern {
  try {
    return parser.parsePattern(source, 0, source.length, { unicode: false, unicodeSets: false });
  } catch (error) {
    throw new RegexRefused(`it is not a regular expression the linear-time engine can read (${error instanceof Error ? error.message : String(error)})`);
  }
}

type Node = AST.Alternative | AST.Element | AST.CharacterClassElement;

/** Whether the node can match the empty string. */
function nullable(node: Node): boolean {
  switch (node.type) {
    case 'Alternative':
      return node.elements.every(nullable);
    case 'Group':
    case 'CapturingGroup':
      return node.alternatives.some(nullable);
    case 'Quantifier':
      return node.min === 0 || nullable(node.element);
    case 'Assertion':
      return true;
    default:
      return false;
  }
}

/** Whether every match of `node` passes through `target`. */
function certain(node: Node, target: AST.CapturingGroup): boolean {
  if (node === target) return true;
  switch (node.type) {
    case 'Alternative':
      return node.elements.some((e) => certain(e, target));
    case 'Group':
    case 'CapturingGroup':
      return node.alternatives.every((a) => certain(a, target));
    case 'Quantifier':
      return node.min >= 1 && certain(node.element, target);
    default:
      return false;
  }
}

/** Whether nothing can follow the node in a match: each enclosing part ends with it, and none repeats. */
function final(node: AST.Node): boolean {
  for (let n: AST.Node = node; n.type !== 'Pattern'; ) {
    const parent: AST.Node | null = n.parent;
    if (!parent) return false;
    if (parent.type === 'Alternative') {
      if (parent.elements[parent.elements.length - 1] !== n) return false;
    } else if (parent.type !== 'Group' && parent.type !== 'CapturingGroup' && parent.type !== 'Pattern') {
      return false;
    }
    n = parent;
  }
  return true;
}

const shown = (node: AST.Node): string => `\`${node.raw}\``;

class Writer {
  private nextGroup = 1;
  readonly groups: number[] = [];
  readonly markers: number[] = [];
  lookbehind = false;

  constructor(
    private readonly ignoreCase: boolean,
    private readonly multiline: boolean,
    /** Whether the input has no line terminator but `\n` (RE2's anchors under `m` are then JavaScript's). */
    private readonly newlinesOnly = false,
  ) {}

  /** Whether an anchor was written differently for inputs with other line terminators. */
  lineAnchors = false;

  private set(set: Ranges): string {
    return writeSet(this.ignoreCase ? caseClosed(set) : set);
  }

  private characterSet(node: AST.CharacterSet): Ranges {
    switch (node.kind) {
      case 'any':
        return DOT;
      case 'digit':
        return node.negate ? complement(DIGIT) : DIGIT;
      case 'space':
        return node.negate ? complement(SPACE) : SPACE;
      case 'word':
        return node.negate ? complement(WORD) : WORD;
      default:
        throw new RegexRefused(`${shown(node)} is not supported by the linear-time engine`);
    }
  }

  private classElement(node: AST.CharacterClassElement): Ranges {
    switch (node.type) {
      case 'Character':
        return of(node.value);
      case 'CharacterClassRange':
        return range(node.min.value, node.max.value);
      case 'CharacterSet':
        return this.characterSet(node);
      default:
        throw new RegexRefused(`${shown(node)} is not supported by the linear-time engine`);
    }
  }

  alternatives(list: AST.Alternative[]): string {
    return list.map((a) => this.alternative(a)).join('|');
  }

  private alternative(node: AST.Alternative): string {
    return node.elements.length === 0 ? '(?:)' : node.elements.map((e) => this.element(e)).join('');
  }

  private element(node: AST.Element): string {
    switch (node.type) {
      case 'Character':
        return this.set(of(node.value));
      case 'CharacterSet':
        return this.set(this.characterSet(node));
      case 'CharacterClass': {
        if (node.unicodeSets) throw new RegexRefused(`${shown(node)} is not supported by the linear-time engine`);
        const set = union(node.elements.map((e) => this.classElement(e)));
        // A negated class under `i` refuses what the class would match under `i` (ECMAScript's CharacterSetMatcher).
        const closed = this.ignoreCase ? caseClosed(set) : set;
        return writeSet(node.negate ? complement(closed) : closed);
      }
      case 'Group':
        if (node.modifiers) throw new RegexRefused(`${shown(node)} uses inline flags, which the linear-time engine does not support`);
        return `(?:${this.alternatives(node.alternatives)})`;
      case 'CapturingGroup': {
        const n = this.nextGroup++;
        this.groups.push(n);
        return `(${this.alternatives(node.alternatives)})`;
      }
      case 'Quantifier':
        return this.quantifier(node);
      case 'Assertion':
        return this.assertion(node);
      case 'Backreference':
        throw new RegexRefused(`${shown(node)} is a backreference, which cannot be bounded in time`);
      default:
        throw new RegexRefused(`${shown(node)} is not supported by the linear-time engine`);
    }
  }

  private quantifier(node: AST.Quantifier): string {
    const { min, max } = node;
    if (min > MAX_REPEAT || (max !== Infinity && max > MAX_REPEAT)) {
      throw new RegexRefused(`${shown(node)} repeats more than ${MAX_REPEAT} times, the most the linear-time engine allows`);
    }
    if (max > min && nullable(node.element)) {
      throw new RegexRefused(`${shown(node)} repeats a part that can match the empty string, which the linear-time engine matches differently`);
    }
    if (max > 1) {
      for (const group of capturesWithin(node.element)) {
        if (!certain(node.element, group)) {
          throw new RegexRefused(`${shown(node)} repeats a capturing group ${shown(group)} that some repetitions skip, which the linear-time engine captures differently (use a non-capturing group)`);
        }
      }
    }
    const body = this.element(node.element);
    const suffix = node.greedy ? '' : '?';
    let count: string;
    if (min === 0 && max === Infinity) count = '*';
    else if (min === 1 && max === Infinity) count = '+';
    else if (min === 0 && max === 1) count = '?';
    else if (max === Infinity) count = `{${min},}`;
    else if (min === max) count = `{${min}}`;
    else count = `{${min},${max}}`;
    return `(?:${body})${count}${suffix}`;
  }

  private assertion(node: AST.Assertion): string {
    switch (node.kind) {
      case 'start':
        if (!this.multiline) return '\\A';
        this.lineAnchors = true;
        if (this.newlinesOnly) return '(?m:^)';
        this.lookbehind = true;
        return `(?:(?m:^)|(?<=${writeSet(of(0x0d, 0x2028, 0x2029))}))`;
      case 'end': {
        if (!this.multiline) return '\\z';
        if (!final(node)) throw new RegexRefused(`${shown(node)} under the m flag is supported by the linear-time engine only at the end of the pattern`);
        this.lineAnchors = true;
        if (this.newlinesOnly) return '(?m:$)';
        const marker = this.nextGroup++;
        this.markers.push(marker);
        return `(?:(?m:$)|()${writeSet(of(0x0d, 0x2028, 0x2029))})`;
      }
      case 'word':
        return node.negate ? '\\B' : '\\b';
      default:
        throw new RegexRefused(`${shown(node)} is a lookaround, which cannot be bounded in time`);
    }
  }
}

function capturesWithin(node: Node): AST.CapturingGroup[] {
  const out: AST.CapturingGroup[] = [];
  const walk = (n: Node): void => {
    if (n.type === 'CapturingGroup') out.push(n);
    if (n.type === 'Alternative') n.elements.forEach(walk);
    else if (n.type === 'Group' || n.type === 'CapturingGroup') n.alternatives.forEach(walk);
    else if (n.type === 'Quantifier') walk(n.element);
  };
  walk(node);
  return out;
}

function translate(source: string, flags: string): Translation {
  for (const flag of flags) {
    if (flag !== 'g' && flag !== 'i' && flag !== 'm') throw new RegexRefused(`the flag ${flag} is not supported by the linear-time engine`);
  }
  const ast = parse(source);
  const written = (newlinesOnly: boolean): { compiled: Compiled; lineAnchors: boolean } => {
    const writer = new Writer(flags.includes('i'), flags.includes('m'), newlinesOnly);
    const pattern = writer.alternatives(ast.alternatives);
    try {
      const re2 = RE2JS.compile(pattern, writer.lookbehind ? RE2JS.LOOKBEHINDS : 0);
      return { compiled: { re2, groups: writer.groups, markers: writer.markers }, lineAnchors: writer.lineAnchors };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      // RE2 also refuses repetitions nested so that their counts multiply beyond its limit.
      if (message.includes('invalid repeat count')) throw new RegexRefused(`it repeats a part more than ${MAX_REPEAT} times in all (nested repetition counts multiply), the most the linear-time engine allows`);
      throw new RegexRefused(`the linear-time engine cannot run it (${message})`);
    }
  };
  const full = written(false);
  return full.lineAnchors ? { ...full.compiled, newlinesOnly: written(true).compiled } : full.compiled;
}

const CACHE_LIMIT = 500;
const translations = new Map<string, Translation>();

function translated(source: string, flags: string): Translation {
  const key = `${flags}/${source}`;
  let t = translations.get(key);
  if (!t) {
    t = translate(source, flags);
    if (translations.size >= CACHE_LIMIT) translations.clear();
    translations.set(key, t);
  }
  return t;
}

/**
 * Why the linear engine would not run this pattern with JavaScript's meaning, or undefined when
 * it would (for refusing an expression when it is configured).
 */
export function linearRegexRefusal(source: string, flags: string): string | undefined {
  try {
    translated(source, flags);
    return undefined;
  } catch (error) {
    if (error instanceof RegexRefused) return error.message;
    throw error;
  }
}

// ---------------------------------------------------------------- matching

const OTHER_LINE_TERMINATOR = /[\r\u2028\u2029]/;

/**
 * What JSONata's `RegexEngine` option takes: constructed with the RegExp JSONata parsed, it
 * matches like it (a global RegExp: `exec` from `lastIndex`, which it moves) on the linear engine.
 */
export class LinearRegExp {
  lastIndex = 0;
  readonly source: string;
  readonly flags: string;
  private readonly translation: Translation;
  // The input of the last exec, as RE2 reads it, and its matcher: JSONata calls exec again and
  // again on one string, each time from where the last match ended.
  private last: { input: string; back: Int32Array | undefined; forth: Int32Array | undefined; compiled: Compiled; matcher: ReturnType<RE2JS['matcher']> } | undefined;

  constructor(pattern: RegExp | string, flags?: string) {
    this.source = typeof pattern === 'string' ? pattern : pattern.source;
    this.flags = flags ?? (typeof pattern === 'string' ? '' : pattern.flags);
    this.translation = translated(this.source, this.flags);
  }

  exec(value: string): RegExpExecArray | null {
    const input = String(value);
    const from = this.lastIndex;
    if (from > input.length) {
      this.lastIndex = 0;
      return null;
    }
    let last = this.last;
    if (!last || last.input !== input) {
      const { newlinesOnly } = this.translation;
      const compiled = newlinesOnly && !OTHER_LINE_TERMINATOR.test(input) ? newlinesOnly : this.translation;
      const { text, back, forth } = prepared(input);
      last = { input, back, forth, compiled, matcher: compiled.re2.matcher(text) };
      this.last = last;
    }
    const { matcher, back, forth } = last;
    const { groups, markers } = last.compiled;
    if (!matcher.find(forth ? forth[from]! : from)) {
      this.lastIndex = 0;
      return null;
    }
    const at = (n: number): number => (back ? back[n]! : n);
    const matchStart = at(matcher.start(0));
    const fullEnd = at(matcher.end(0));
    // A final `$` under `m` took a line terminator (one unit) into the match: cut it off again,
    // from the match and from every group that ends with it.
    const cut = markers.some((g) => matcher.start(g) >= 0) ? 1 : 0;
    const end = fullEnd - cut;
    const result = [input.slice(matchStart, end)] as unknown as RegExpExecArray;
    for (const g of groups) {
      const gs = matcher.start(g);
      if (gs < 0) {
        result.push(undefined as unknown as string);
      } else {
        let ge = at(matcher.end(g));
        if (cut && ge === fullEnd) ge -= cut;
        result.push(input.slice(at(gs), ge));
      }
    }
    result.index = matchStart;
    result.input = input;
    this.lastIndex = end;
    return result;
  }

  test(value: string): boolean {
    return this.exec(value) !== null;
  }
}
