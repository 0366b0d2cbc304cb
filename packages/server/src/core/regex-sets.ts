/**
 * Sets of UTF-16 code units for the linear regex engine (regex-engine.ts, protocol §16.8): the
 * classes and escapes of a JavaScript pattern as explicit ranges, JavaScript's case folding under
 * `i`, and how a set is written in RE2 syntax, with each surrogate code unit moved to a code point
 * of its own above the BMP, in a pattern and in an input (`prepared`).
 */

/** Sorted, disjoint, inclusive ranges of code units: [lo0, hi0, lo1, hi1, …]. */
export type Ranges = number[];
const MAX_UNIT = 0xffff;

function normalise(pairs: Array<[number, number]>): Ranges {
  pairs.sort((a, b) => a[0] - b[0]);
  const out: Ranges = [];
  for (const [lo, hi] of pairs) {
    const last = out.length - 1;
    if (last > 0 && lo <= out[last]! + 1) out[last] = Math.max(out[last]!, hi);
    else out.push(lo, hi);
  }
  return out;
}

export function union(sets: Ranges[]): Ranges {
  const pairs: Array<[number, number]> = [];
  for (const set of sets) for (let i = 0; i < set.length; i += 2) pairs.push([set[i]!, set[i + 1]!]);
  return normalise(pairs);
}

export function complement(set: Ranges): Ranges {
  const out: Ranges = [];
  let next = 0;
  for (let i = 0; i < set.length; i += 2) {
    if (set[i]! > next) out.push(next, set[i]! - 1);
    next = set[i + 1]! + 1;
  }
  if (next <= MAX_UNIT) out.push(next, MAX_UNIT);
  return out;
}

export const of = (...units: number[]): Ranges => normalise(units.map((u) => [u, u]));
export const range = (lo: number, hi: number): Ranges => [lo, hi];

export const DIGIT = range(0x30, 0x39);
export const WORD = union([DIGIT, range(0x41, 0x5a), of(0x5f), range(0x61, 0x7a)]);
// JavaScript's WhiteSpace and LineTerminator (what `\s` matches).
export const SPACE = union([range(0x09, 0x0d), of(0x20, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff), range(0x2000, 0x200a)]);
const LINE_TERMINATORS = of(0x0a, 0x0d, 0x2028, 0x2029);
export const DOT = complement(LINE_TERMINATORS);

// ---------------------------------------------------------------- JavaScript's case folding

interface Folding {
  /** Canonicalize(ch) for each code unit. */
  canon: Uint16Array;
  /** The code units that share their canonical form with another, ascending. */
  folding: number[];
  /** For such a canonical form, every code unit that has it. */
  orbit: Map<number, number[]>;
}
let folding: Folding | undefined;

/** ECMAScript's Canonicalize(ch) for a non-`u` pattern with `i`: the upper case, when it is one unit and not ASCII from non-ASCII. */
function foldingTable(): Folding {
  if (!folding) {
    const canon = new Uint16Array(MAX_UNIT + 1);
    const orbit = new Map<number, number[]>();
    for (let ch = 0; ch <= MAX_UNIT; ch++) {
      const upper = String.fromCharCode(ch).toUpperCase();
      const cu = upper.length === 1 ? upper.charCodeAt(0) : ch;
      const c = ch >= 128 && cu < 128 ? ch : cu;
      canon[ch] = c;
      const members = orbit.get(c);
      if (members) members.push(ch);
      else orbit.set(c, [ch]);
    }
    for (const [c, members] of orbit) if (members.length === 1) orbit.delete(c);
    const shared = [...orbit.values()].flat().sort((a, b) => a - b);
    folding = { canon, folding: shared, orbit };
  }
  return folding;
}

function contains(set: Ranges, unit: number): boolean {
  let lo = 0;
  let hi = set.length / 2 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (unit < set[mid * 2]!) hi = mid - 1;
    else if (unit > set[mid * 2 + 1]!) lo = mid + 1;
    else return true;
  }
  return false;
}

/** Every code unit whose canonical form is that of a member of the set: what the set matches under `i`. */
export function caseClosed(set: Ranges): Ranges {
  const { canon, folding: shared, orbit } = foldingTable();
  const extra: Array<[number, number]> = [];
  for (const unit of shared) {
    if (contains(set, unit)) for (const m of orbit.get(canon[unit]!)!) extra.push([m, m]);
  }
  return extra.length === 0 ? set : union([set, normalise(extra)]);
}

// ---------------------------------------------------------------- writing RE2 syntax

// Surrogate code units become code points of their own above the BMP, so that RE2 never reads a
// pair of them as one character (a non-`u` JavaScript pattern sees two).
const SURROGATE_LO = 0xd800;
const SURROGATE_HI = 0xdfff;
const MOVED = 0x10000 - SURROGATE_LO;

const hex = (n: number): string => `\\x{${n.toString(16)}}`;

function runeRanges(set: Ranges): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let i = 0; i < set.length; i += 2) {
    const lo = set[i]!;
    const hi = set[i + 1]!;
    for (const [a, b, shift] of [
      [0, SURROGATE_LO - 1, 0],
      [SURROGATE_LO, SURROGATE_HI, MOVED],
      [SURROGATE_HI + 1, MAX_UNIT, 0],
    ] as const) {
      const from = Math.max(lo, a);
      const to = Math.min(hi, b);
      if (from <= to) out.push([from + shift, to + shift]);
    }
  }
  return out;
}

export function writeSet(set: Ranges): string {
  const runes = runeRanges(set);
  if (runes.length === 0) return '[^\\x{0}-\\x{10ffff}]';
  if (runes.length === 1 && runes[0]![0] === runes[0]![1]) return hex(runes[0]![0]);
  return `[${runes.map(([a, b]) => (a === b ? hex(a) : `${hex(a)}-${hex(b)}`)).join('')}]`;
}

const HAS_SURROGATE = /[\ud800-\udfff]/;
/** The input as RE2 reads it, with the maps of positions between the two (undefined: the same). */
export function prepared(input: string): { text: string; back: Int32Array | undefined; forth: Int32Array | undefined } {
  if (!HAS_SURROGATE.test(input)) return { text: input, back: undefined, forth: undefined };
  const parts: string[] = [];
  const forth = new Int32Array(input.length + 1);
  const back = new Int32Array(input.length * 2 + 1).fill(-1);
  let length = 0;
  for (let i = 0; i < input.length; i++) {
    const unit = input.charCodeAt(i);
    forth[i] = length;
    back[length] = i;
    if (unit >= SURROGATE_LO && unit <= SURROGATE_HI) {
      parts.push(String.fromCodePoint(unit + MOVED));
      length += 2;
    } else {
      parts.push(input[i]!);
      length += 1;
    }
  }
  forth[input.length] = length;
  back[length] = input.length;
  return { text: parts.join(''), back, forth };
}
