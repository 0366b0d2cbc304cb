/**
 * Static bounds of JSONata expressions that cannot loop or multiply (protocol §16.8, decision 005,
 * "Unmetered evaluations"). Metering every node of every evaluation costs about as much again as
 * the evaluation; most conditions and transforms are plain selections, comparisons and
 * constructors whose cost is bounded by the size of the event. For those, the bound is computed
 * once per expression; an evaluation runs without the meter only when the bound proves that the
 * meter could not have stopped it on this input.
 *
 * The class ("bounded"): field names, `*`, `$` (the context), literals, arithmetic, comparisons,
 * `and`/`or`/`in`/`&`, conditions, blocks without bindings, array and object constructors, filter
 * predicates, group-by on a path, and calls of the built-ins listed in FUNCTIONS with the argument
 * shapes they allow. Excluded, so metered: ranges, lambdas, bindings, `$$` and named variables,
 * `%`, `**`, `~>`, regexes, sorts, `@`/`#` bindings, every other function, and any path whose
 * steps before the last are not field names, `*` or `$`.
 *
 * Why the bound holds. In the bounded class a node is only ever evaluated on a subvalue of the
 * input, and one node's contexts are disjoint subtrees (a selector yields children of its
 * contexts; predicates and group-by take subsets; nothing reaches an outer or the root value).
 * So a node at the top of the expression is evaluated once (once per item if the input is an
 * array), and any other node at most once per value of the input (V values): the steps are at
 * most topNodes + innerNodes × V. Each node's output is at most `outputFactor` × the estimated
 * size of its context; summed over a node's disjoint contexts that is at most outputFactor × N
 * (N the estimated size of the input, as expression-budget.ts estimates it), and the memory the
 * meter would charge is at most N × (1 + Σ outputFactor).
 */

interface AstNode {
  type?: string;
  value?: unknown;
  [key: string]: unknown;
}

export interface StaticBound {
  /** Nodes evaluated once per item of the input. */
  topNodes: number;
  /** Nodes evaluated at most once per value of the input. */
  innerNodes: number;
  /** Σ of every node's output factor: the meter's charges are at most N × (1 + memoryFactor). */
  memoryFactor: number;
}

/** Output factor of a JSON value turned into a string (`&`, $string): escapes grow text up to 6×. */
const STRINGIFY = 6;

interface Analysed {
  /** Bound of the node's output relative to its context's estimated size. */
  out: number;
  /** The node yields a string (its string form is itself). */
  string: boolean;
}

type Args = AstNode[];
/** A built-in: its output factor from its arguments' results, or undefined when the call is not bounded. */
type Rule = (args: Args, out: (node: AstNode) => Analysed) => Analysed | undefined;

const literal = (node: AstNode | undefined): string | undefined => (node?.type === 'string' && typeof node.value === 'string' ? node.value : undefined);

/** The argument factors of a call (the context when there are none). */
function sumOut(args: Args, out: (node: AstNode) => Analysed): number {
  if (args.length === 0) return 3;
  let total = 0;
  for (const arg of args) total += out(arg).out;
  return total;
}

/** A number or a boolean: one element. */
const scalar = (arity: number): Rule => (args) => (args.length > arity ? undefined : { out: 1, string: false });
/** A string at most `factor` × its arguments, plus `constant` (a short fixed text is 5 × 8 bytes at most). */
const text = (arity: number, factor: number, constant = 2): Rule => (args, out) =>
  args.length > arity ? undefined : { out: constant + (factor === 0 ? 0 : factor * sumOut(args, out)), string: true };
const value = (arity: number, factor: number): Rule => (args, out) => (args.length > arity ? undefined : { out: 2 + factor * sumOut(args, out), string: false });
/** A string and a literal string (searched for, split on, cut at): the literal's length bounds the work per character. */
const withLiteral = (factor: number, result: 'string' | 'value'): Rule => (args, out) => {
  const needle = literal(args[1]);
  if (args.length < 2 || args.length > 3 || needle === undefined) return undefined;
  if (args.length === 3 && args[2]?.type !== 'number') return undefined;
  return { out: 2 + factor * (1 + needle.length / 8) * out(args[0]!).out, string: result === 'string' };
};

const FUNCTIONS: Record<string, Rule> = {
  sum: scalar(1),
  count: scalar(1),
  max: scalar(1),
  min: scalar(1),
  average: scalar(1),
  length: scalar(1),
  number: scalar(1),
  floor: scalar(1),
  ceil: scalar(1),
  round: scalar(2),
  abs: scalar(1),
  sqrt: scalar(1),
  power: scalar(2),
  boolean: scalar(1),
  not: scalar(1),
  exists: scalar(1),
  millis: scalar(0),
  toMillis: scalar(1),
  type: text(1, 0, 4),
  now: text(0, 0, 6),
  fromMillis: text(1, 0, 6),
  string: (args, out) => {
    if (args.length > 1) return undefined;
    const arg = args[0] ? out(args[0]) : { out: 3, string: false };
    return { out: 2 + (arg.string ? 1 : STRINGIFY) * arg.out, string: true };
  },
  substring: (args, out) => (args.length < 1 || args.length > 3 ? undefined : { out: 2 + sumOut(args, out), string: true }),
  trim: text(1, 1),
  uppercase: text(1, 3),
  lowercase: text(1, 3),
  base64encode: text(1, 2),
  base64decode: text(1, 1),
  encodeUrl: text(1, 12),
  encodeUrlComponent: text(1, 12),
  decodeUrl: text(1, 1),
  decodeUrlComponent: text(1, 1),
  contains: withLiteral(1, 'value'),
  substringBefore: withLiteral(1, 'string'),
  substringAfter: withLiteral(1, 'string'),
  // Splitting on a literal makes at most one string per character, each charged 16 bytes.
  split: withLiteral(17, 'value'),
  join: (args, out) => {
    if (args.length === 1) return { out: 2 + 2 * out(args[0]!).out, string: true };
    const separator = literal(args[1]);
    if (args.length !== 2 || separator === undefined) return undefined;
    return { out: 2 + 2 * (1 + separator.length / 8) * out(args[0]!).out, string: true };
  },
  keys: value(1, 2),
  lookup: (args, out) => (args.length === 2 ? { out: 3 + 2 * sumOut(args, out), string: false } : undefined),
  append: value(2, 2),
  reverse: value(1, 2),
  merge: value(1, 3),
  spread: value(1, 4),
  sort: value(1, 2),
  shuffle: value(1, 2),
  zip: value(8, 3),
  clone: value(1, 2),
};

const ARITHMETIC_OR_TEST = new Set(['+', '-', '*', '/', '%', '=', '!=', '<', '<=', '>', '>=', 'and', 'or', 'in']);
// Properties of a node that are structure, not subexpressions.
const PLAIN_KEYS = new Set(['type', 'value', 'position', 'keepArray', 'consarray', 'keepSingletonArray']);

class NotBounded extends Error {}

/** The static bound of a compiled expression's syntax tree, or undefined when it is not in the bounded class. */
export function staticBound(ast: unknown): StaticBound | undefined {
  const bound: StaticBound = { topNodes: 0, innerNodes: 0, memoryFactor: 0 };
  try {
    visit(ast as AstNode, false, bound);
  } catch (error) {
    if (error instanceof NotBounded) return undefined;
    throw error;
  }
  return bound;
}

function refuse(): never {
  throw new NotBounded();
}

function asNode(value: unknown): AstNode {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) refuse();
  return value as AstNode;
}

function only(node: AstNode, keys: string[]): void {
  for (const key of Object.keys(node)) {
    if (!PLAIN_KEYS.has(key) && !keys.includes(key) && node[key] !== undefined) refuse();
  }
}

/** Field names, `*` and `$`: they yield parts of their context and nothing else. */
function isSelector(node: AstNode): boolean {
  return node.type === 'name' || node.type === 'wildcard' || (node.type === 'variable' && node.value === '');
}

function visit(node: AstNode, inner: boolean, bound: StaticBound): Analysed {
  const result = analyse(node, inner, bound);
  if (inner) bound.innerNodes++;
  else bound.topNodes++;
  bound.memoryFactor += result.out;
  return result;
}

/** Filter predicates of a step: evaluated once per item of what the step yields, so inner. */
function stages(node: AstNode, bound: StaticBound): void {
  const list = node.stages ?? node.predicate;
  if (list === undefined) return;
  if (!Array.isArray(list)) refuse();
  for (const stage of list) {
    const s = asNode(stage);
    if (s.type !== undefined && s.type !== 'filter') refuse();
    visit(asNode(s.expr), true, bound);
  }
}

function group(value: unknown, bound: StaticBound): number {
  const g = asNode(value);
  if (!Array.isArray(g.lhs)) refuse();
  let out = 4;
  for (const pair of g.lhs) {
    if (!Array.isArray(pair) || pair.length !== 2) refuse();
    // Keys once per item, values once per group: both on parts of the grouped input.
    out += 2 * visit(asNode(pair[0]), true, bound).out + visit(asNode(pair[1]), true, bound).out;
  }
  return out;
}

function analyse(node: AstNode, inner: boolean, bound: StaticBound): Analysed {
  switch (node.type) {
    case 'name':
    case 'wildcard':
      only(node, ['stages', 'predicate']);
      stages(node, bound);
      return { out: 3, string: false };
    case 'variable':
      if (node.value !== '') refuse();
      only(node, ['stages', 'predicate']);
      stages(node, bound);
      return { out: 3, string: false };
    case 'string':
      only(node, []);
      return { out: 2 + String(node.value).length / 8, string: true };
    case 'number':
    case 'value':
      only(node, []);
      return { out: 1, string: false };
    case 'path': {
      only(node, ['steps', 'group']);
      const steps = node.steps;
      if (!Array.isArray(steps) || steps.length === 0) refuse();
      let last: Analysed = { out: 3, string: false };
      steps.forEach((step, i) => {
        const s = asNode(step);
        const isLast = i === steps.length - 1;
        if (!isLast && !isSelector(s)) refuse();
        // The first step runs on the path's own context; the others on parts of it.
        last = visit(s, inner || i > 0, bound);
      });
      let out = 2 + last.out;
      if (node.group !== undefined) out += group(node.group, bound);
      return { out, string: steps.length === 1 && last.string };
    }
    case 'binary': {
      only(node, ['lhs', 'rhs']);
      const op = String(node.value);
      const lhs = visit(asNode(node.lhs), inner, bound);
      const rhs = visit(asNode(node.rhs), inner, bound);
      if (op === '&') {
        const form = (a: Analysed) => (a.string ? a.out : STRINGIFY * a.out);
        return { out: 2 + form(lhs) + form(rhs), string: true };
      }
      if (!ARITHMETIC_OR_TEST.has(op)) refuse();
      return { out: 1, string: false };
    }
    case 'unary': {
      const op = String(node.value);
      if (op === '-') {
        only(node, ['expression']);
        visit(asNode(node.expression), inner, bound);
        return { out: 1, string: false };
      }
      if (op === '[') {
        only(node, ['expressions', 'stages', 'predicate']);
        if (!Array.isArray(node.expressions)) refuse();
        let out = 2;
        for (const e of node.expressions) out += visit(asNode(e), inner, bound).out;
        if (node.stages !== undefined || node.predicate !== undefined) refuse();
        return { out, string: false };
      }
      if (op === '{') {
        only(node, ['lhs']);
        // An object constructor groups its context: the same accounting as group-by, but keys and
        // values run on the constructor's own context.
        if (!Array.isArray(node.lhs)) refuse();
        let out = 4;
        for (const pair of node.lhs) {
          if (!Array.isArray(pair) || pair.length !== 2) refuse();
          out += 2 * visit(asNode(pair[0]), inner, bound).out + visit(asNode(pair[1]), inner, bound).out;
        }
        return { out, string: false };
      }
      return refuse();
    }
    case 'condition': {
      only(node, ['condition', 'then', 'else']);
      visit(asNode(node.condition), inner, bound);
      const then = visit(asNode(node.then), inner, bound);
      const otherwise = node.else === undefined ? { out: 1, string: false } : visit(asNode(node.else), inner, bound);
      return { out: Math.max(then.out, otherwise.out), string: then.string && otherwise.string };
    }
    case 'block': {
      only(node, ['expressions']);
      if (!Array.isArray(node.expressions) || node.expressions.length === 0) refuse();
      let last: Analysed = { out: 1, string: false };
      for (const e of node.expressions) last = visit(asNode(e), inner, bound);
      return last;
    }
    case 'function': {
      only(node, ['procedure', 'arguments']);
      const procedure = asNode(node.procedure);
      if (procedure.type !== 'variable' || typeof procedure.value !== 'string') refuse();
      only(procedure, []);
      // JSONata evaluates the procedure's name as a node of its own (a step; its value, the built-in, is not data).
      if (inner) bound.innerNodes++;
      else bound.topNodes++;
      bound.memoryFactor += 1;
      const rule = Object.hasOwn(FUNCTIONS, procedure.value) ? FUNCTIONS[procedure.value] : undefined;
      if (!rule || !Array.isArray(node.arguments)) refuse();
      const args = node.arguments.map(asNode);
      // Each argument is a node of its own, visited once; the rule reads the factors found.
      const found = new Map<AstNode, Analysed>();
      for (const arg of args) found.set(arg, visit(arg, inner, bound));
      const result = rule(args, (arg) => found.get(arg)!);
      return result ?? refuse();
    }
    default:
      return refuse();
  }
}

export interface InputSize {
  /** Values in the input (objects, arrays, strings, numbers, booleans, nulls). */
  values: number;
  /** Estimated bytes, as the meter estimates them. */
  bytes: number;
}

const ELEMENT = 8;
const STRING = 16;
const ARRAY = 16;
const OBJECT = 32;
const PROPERTY = 16;

/**
 * The input's size, walked only as far as needed: undefined as soon as it passes either limit (a
 * large input is then metered, at no more cost than this walk).
 */
export function inputSizeWithin(input: unknown, maxValues: number, maxBytes: number): InputSize | undefined {
  let values = 0;
  let bytes = 0;
  const pending: unknown[] = [input];
  while (pending.length > 0) {
    const v = pending.pop();
    values++;
    if (typeof v === 'string') bytes += STRING + v.length;
    else if (Array.isArray(v)) {
      bytes += ARRAY + ELEMENT * v.length;
      for (let i = 0; i < v.length; i++) pending.push(v[i]);
    } else if (typeof v === 'object' && v !== null) {
      bytes += OBJECT;
      for (const key in v) {
        bytes += PROPERTY + key.length;
        pending.push((v as Record<string, unknown>)[key]);
      }
    } else bytes += ELEMENT;
    if (values > maxValues || bytes > maxBytes) return undefined;
  }
  return { values, bytes };
}
