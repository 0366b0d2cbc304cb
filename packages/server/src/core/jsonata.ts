/**
 * JSONata, compiled once and cached (compiling costs far more than evaluating). Parse and
 * evaluation errors of JSONata are plain objects; they are wrapped in real Errors here, with the
 * position and token kept for the answer. Every evaluation runs under a budget of time and memory
 * enforced while it runs (protocol §16.8, core/expression-budget.ts). Results are copied to plain
 * JSON before they leave, because JSONata builds objects with a null prototype that serialisers refuse.
 * Regular expressions run on V8's engine or, where the host asks for it, on a linear-time one
 * (core/regex-engine.ts, protocol §16.8).
 */
import jsonata from 'jsonata';
import { RivuletError } from '@rivulet/contract';
import { inputSizeWithin, staticBound, type StaticBound } from './expression-bounds.js';
import { inputFor, mayGroup } from './jsonata-input.js';
import {
  BudgetExceeded,
  Meter,
  STEPS_PER_MS,
  UNMETERED_BYTES_PER_MS,
  UNMETERED_STEP_SHARE,
  defaultExpressionLimits,
  literalRangeOver,
  astNodes,
  needsBacktracking,
  sequenceCap,
  type ExpressionBudget,
  type ExpressionLimits,
} from './expression-budget.js';
import { LinearRegExp, linearRegexRefusal } from './regex-engine.js';

type Expression = ReturnType<typeof jsonata>;

interface JsonataFailure {
  code?: string;
  position?: number;
  token?: string;
  message?: string;
}

export class JsonataError extends Error {
  override readonly name = 'JsonataError';
  constructor(
    message: string,
    readonly position: number | undefined,
    readonly token: string | undefined,
    readonly jsonataCode: string | undefined,
  ) {
    super(message);
  }
}

// JSONata's own refusals of long sequences: D2014 (a range over 1e7), D2015 (over the cap).
const SEQUENCE_CODES = new Set(['D2014', 'D2015']);

function wrap(error: unknown): JsonataError {
  if (error instanceof JsonataError) return error;
  if (error instanceof BudgetExceeded) return new JsonataError(error.message, undefined, undefined, error.code);
  const e = (error ?? {}) as JsonataFailure;
  if (e.code !== undefined && SEQUENCE_CODES.has(e.code)) {
    return new JsonataError(`expression exceeded its memory budget (${e.message ?? 'a sequence too long'})`, e.position, e.token, 'MEMORY_BUDGET');
  }
  const message = typeof e.message === 'string' ? e.message : String(error);
  return new JsonataError(message, e.position, e.token, e.code);
}

const CACHE_LIMIT = 2000;
/** One expression under one sequence cap: its metered form, and for bounded expressions an unmetered one. */
interface Compiled {
  metered: Expression;
  bound: StaticBound | undefined;
  /** Whether it can group, and so write into an input that holds an empty array (jsonata-input.ts). */
  groups: boolean;
  plain?: Expression;
}
// Keyed by sequence cap, then source: the source string is the key itself, so its hash is kept.
const cache = new Map<number, Map<string, Compiled>>();
let cached = 0;
// The binding through which the hooks find the meter of their evaluation: not a JSONata name, so
// no expression can read it.
const METER = 'rivulet meter';
const ENTRY = Symbol.for('jsonata.__evaluate_entry');
const EXIT = Symbol.for('jsonata.__evaluate_exit');

interface Frame {
  base: { lookup(name: string): unknown };
}
type Hook = (node: { type: string }, input: unknown, environment: Frame, result?: unknown) => void;
const onEntry: Hook = (_node, _input, environment) => {
  (environment.base.lookup(METER) as Meter | undefined)?.step();
};
const onExit: Hook = (node, _input, environment, result) => {
  (environment.base.lookup(METER) as Meter | undefined)?.produced(node, result);
};

/** Which engine runs JSONata's regular expressions: V8's own, or the linear-time one (protocol §16.8). */
export type RegexEngineChoice = 'native' | 'linear';
let regexEngine: RegexEngineChoice = 'native';

/**
 * Chooses the engine of every regular expression evaluated from now on (a host chooses once, at
 * start: the Worker host the linear one, since workerd takes no V8 flags).
 */
export function useRegexEngine(engine: RegexEngineChoice): void {
  if (engine === regexEngine) return;
  regexEngine = engine;
  cache.clear();
  cached = 0;
}

function parse(source: string, cap: number): Expression {
  try {
    return jsonata(source, regexEngine === 'linear' ? { sequence: cap, RegexEngine: LinearRegExp as unknown as RegExpConstructor } : { sequence: cap });
  } catch (error) {
    throw wrap(error);
  }
}

function compiled(source: string, limits: ExpressionLimits): Compiled {
  const cap = sequenceCap(limits);
  let forCap = cache.get(cap);
  const hit = forCap?.get(source);
  if (hit) return hit;
  const metered = parse(source, cap);
  const assign = metered.assign as unknown as (name: symbol, value: Hook) => void;
  assign(ENTRY, onEntry);
  assign(EXIT, onExit);
  const entry: Compiled = { metered, bound: staticBound(metered.ast()), groups: mayGroup(metered.ast()) };
  if (cached >= CACHE_LIMIT) {
    cache.clear();
    cached = 0;
  }
  if (!forCap) {
    forCap = new Map();
    cache.set(cap, forCap);
  }
  forCap.set(source, entry);
  cached++;
  return entry;
}

/**
 * Compiles (or answers the cached compilation of) an expression; throws JsonataError on bad syntax.
 * The sequence cap is part of the compilation (JSONata checks it before allocating).
 */
export function compileJsonata(source: string, limits: ExpressionLimits = defaultExpressionLimits): Expression {
  return compiled(source, limits).metered;
}

/**
 * Whether this evaluation may run without the meter: the expression is bounded and its bound on
 * this input stays inside a share of the budget the meter enforces (protocol §16.8).
 */
function unmetered(entry: Compiled, input: unknown, limits: ExpressionLimits): boolean {
  const bound = entry.bound;
  if (!bound) return false;
  const maxSteps = Math.floor((limits.timeMs * STEPS_PER_MS) / UNMETERED_STEP_SHARE);
  const perValue = Array.isArray(input) ? bound.topNodes + bound.innerNodes : bound.innerNodes;
  const fixed = Array.isArray(input) ? 0 : bound.topNodes;
  if (fixed > maxSteps) return false;
  const maxValues = perValue === 0 ? Number.MAX_SAFE_INTEGER : Math.floor((maxSteps - fixed) / perValue);
  const maxBytes = Math.floor(Math.min(limits.memoryBytes, limits.timeMs * UNMETERED_BYTES_PER_MS) / (1 + bound.memoryFactor));
  return inputSizeWithin(input, maxValues, maxBytes) !== undefined;
}

/** How an evaluation of `source` on `input` would run (for tests and diagnostics). */
export function evaluationPlan(source: string, input: unknown, limits: ExpressionLimits = defaultExpressionLimits): 'metered' | 'unmetered' {
  return unmetered(compiled(source, limits), input, limits) ? 'unmetered' : 'metered';
}

/**
 * INVALID_INPUT naming the field, with JSONata's message and position (protocol §9.3); also when a
 * literal range is longer than the memory budget allows any sequence to be, or a regular expression
 * could backtrack without bound (protocol §16.8).
 */
export function checkJsonata(source: string, field: string, limits: ExpressionLimits = defaultExpressionLimits): void {
  let expression: Expression;
  try {
    expression = compileJsonata(source, limits);
  } catch (error) {
    const e = wrap(error);
    const at = e.position !== undefined ? ` at position ${e.position}` : '';
    throw new RivuletError('INVALID_INPUT', `${field} is not valid JSONata${at}: ${e.message}`, {
      field,
      position: e.position,
      token: e.token,
      jsonataCode: e.jsonataCode,
    });
  }
  // Every regex runs on a linear-time engine (protocol §16.8): refused are the patterns it cannot run.
  for (const literal of regexLiterals(expression.ast())) {
    if (needsBacktracking(literal.source)) {
      throw new RivuletError('INVALID_INPUT', `${field} uses a regular expression with a backreference or a lookaround, which cannot be bounded in time: /${literal.source}/`, {
        field,
        jsonataCode: 'TIME_BUDGET',
      });
    }
    const reason = linearRegexRefusal(literal.source, literal.flags);
    if (reason !== undefined) {
      throw new RivuletError('INVALID_INPUT', `${field} uses a regular expression that cannot be bounded in time with JavaScript's meaning: ${reason}: /${literal.source}/`, {
        field,
        jsonataCode: 'TIME_BUDGET',
      });
    }
  }
  const cap = sequenceCap(limits);
  const size = literalRangeOver(expression.ast(), cap);
  if (size !== undefined) {
    throw new RivuletError('INVALID_INPUT', `${field} exceeds the expression budget: a range of ${size} items (a sequence holds at most ${cap})`, {
      field,
      jsonataCode: 'MEMORY_BUDGET',
    });
  }
}

/** The regular expression literals of a JSONata syntax tree. */
function regexLiterals(ast: unknown): RegExp[] {
  const found: RegExp[] = [];
  for (const node of astNodes(ast)) {
    const n = node as { type?: unknown; value?: unknown };
    if (n.type === 'regex' && n.value instanceof RegExp) found.push(n.value);
  }
  return found;
}

/**
 * Evaluates to plain JSON (undefined when JSONata yields nothing) within the budget; throws
 * JsonataError — with code TIME_BUDGET or MEMORY_BUDGET when the budget ran out.
 */
export async function evaluateJsonata(source: string, input: unknown, budget: ExpressionBudget): Promise<unknown> {
  const entry = compiled(source, budget);
  return evaluateAs(unmetered(entry, input, budget) ? 'unmetered' : 'metered', entry, source, input, budget);
}

/**
 * Evaluates one way or the other, whatever the plan says: for the tests that hold the two ways
 * against each other and the meter's counts against the static bound.
 */
export function evaluateJsonataAs(mode: 'metered' | 'unmetered', source: string, input: unknown, budget: ExpressionBudget, meter = new Meter(budget)): Promise<unknown> {
  return evaluateAs(mode, compiled(source, budget), source, input, budget, meter);
}

async function evaluateAs(mode: 'metered' | 'unmetered', entry: Compiled, source: string, input: unknown, budget: ExpressionBudget, meter?: Meter): Promise<unknown> {
  let result: unknown;
  const own = inputFor(entry.groups, input);
  try {
    if (mode === 'unmetered') {
      entry.plain ??= parse(source, sequenceCap(budget));
      result = await entry.plain.evaluate(own);
    } else {
      result = await entry.metered.evaluate(own, { [METER]: meter ?? new Meter(budget) });
    }
  } catch (error) {
    throw wrap(error);
  }
  if (result === undefined) return undefined;
  try {
    // Bounded: the exit hook measured this value against the memory budget, or the static bound did.
    const text = JSON.stringify(result);
    return text === undefined ? undefined : (JSON.parse(text) as unknown);
  } catch (error) {
    // A function (lambda) or a circular structure is not JSON.
    throw new JsonataError(`the expression produced a value that is not JSON: ${error instanceof Error ? error.message : String(error)}`, undefined, undefined, 'NOT_JSON');
  }
}

/** JSONata's truthiness, as $boolean() defines it, for filter conditions. */
export function jsonataTruthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false) return false;
  if (typeof value === 'number') return value !== 0;
  if (typeof value === 'string') return value.length > 0;
  if (Array.isArray(value)) return value.some(jsonataTruthy);
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return Boolean(value);
}
