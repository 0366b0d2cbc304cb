/**
 * Budgets of JSONata evaluations (protocol §16.8, decision 005). JSONata evaluates without ever
 * yielding to the event loop, so a timer cannot stop it: the budget is enforced from inside, by
 * JSONata's evaluation hooks, called on entry to and exit from every node of the expression.
 *
 * - Time: every node entered is a step. The steps are capped (STEPS_PER_MS per millisecond of the
 *   time budget, the same count on every host) and the host's clock is read every CLOCK_EVERY
 *   steps against the deadline — a backstop for steps that are slow on their own.
 * - Memory: the value each node produces is measured (memoised, so a value is sized once) and
 *   charged the first time it is seen; the charges of one evaluation may not exceed the budget,
 *   and neither may the size of any one value counted as a tree (a value built by sharing one part
 *   many times is as large as what copying or comparing it walks). Sequences — ranges included —
 *   are capped in length before they are allocated (JSONata's `sequence` option, error D2015),
 *   to what both budgets allow: building a long sequence is one step, however long it takes.
 *
 * Core stays pure: the clock is passed in.
 */

/** Steps per millisecond of the time budget (JSONata ran 1,100–2,000 on a quiet core; decision 005). */
export const STEPS_PER_MS = 1000;
const CLOCK_EVERY = 32;
/**
 * An evaluation runs unmetered only if its static bound stays within 1/UNMETERED_STEP_SHARE of the
 * step cap — so even at a tenth of the calibrated speed it ends inside the time budget — and
 * within UNMETERED_BYTES_PER_MS estimated bytes per millisecond of the budget (10 ns a byte) and
 * the memory budget (core/expression-bounds.ts).
 */
export const UNMETERED_STEP_SHARE = 10;
export const UNMETERED_BYTES_PER_MS = 100_000;
/** Estimated bytes of one array element. */
export const ELEMENT_BYTES = 8;
/**
 * Items a sequence may hold per millisecond of the time budget: a range is built in one step, at
 * about 20 items a microsecond, so a sequence is capped before one step could spend the budget.
 */
export const ITEMS_PER_MS = 4000;
const ARRAY_BYTES = 16;
const OBJECT_BYTES = 32;
const PROPERTY_BYTES = 16;
const STRING_BYTES = 16;

export interface ExpressionLimits {
  /** Time budget of one evaluation, in milliseconds. */
  timeMs: number;
  /** Memory budget of one evaluation, in estimated bytes. */
  memoryBytes: number;
}

export interface ExpressionBudget extends ExpressionLimits {
  /** The host's clock, in milliseconds. */
  now(): number;
}

export const defaultExpressionLimits: ExpressionLimits = { timeMs: 10, memoryBytes: 32 * 1024 * 1024 };

export function expressionBudget(limits: ExpressionLimits, now: () => number): ExpressionBudget {
  return { timeMs: limits.timeMs, memoryBytes: limits.memoryBytes, now };
}

/** The longest sequence (a range included) an evaluation may build under these limits. */
export function sequenceCap(limits: ExpressionLimits): number {
  return Math.max(1, Math.floor(Math.min(limits.memoryBytes / ELEMENT_BYTES, limits.timeMs * ITEMS_PER_MS)));
}

export type BudgetKind = 'time' | 'memory';

export const BUDGET_CODES = { time: 'TIME_BUDGET', memory: 'MEMORY_BUDGET' } as const;

/** Thrown from inside JSONata; evaluateJsonata turns it into a JsonataError with the same message. */
export class BudgetExceeded extends Error {
  override readonly name = 'BudgetExceeded';
  readonly code: string;
  constructor(
    readonly kind: BudgetKind,
    detail: string,
  ) {
    super(`expression exceeded its ${kind} budget (${detail})`);
    this.code = BUDGET_CODES[kind];
  }
}

interface Node {
  type: string;
}

// Nodes whose string result is read, not built: they allocate nothing.
const READS = new Set(['string', 'name', 'path', 'variable', 'parent', 'wildcard', 'descendant']);

/** The state of one evaluation: its steps, its deadline, what it has been charged. */
export class Meter {
  private steps = 0;
  private readonly maxSteps: number;
  private readonly deadline: number;
  private charged = 0;
  private readonly sizes = new WeakMap<object, number>();

  constructor(private readonly budget: ExpressionBudget) {
    this.maxSteps = Math.max(1, Math.floor(budget.timeMs * STEPS_PER_MS));
    this.deadline = budget.now() + budget.timeMs;
  }

  /** Nodes entered so far. */
  get stepsTaken(): number {
    return this.steps;
  }

  /** Estimated bytes charged so far. */
  get bytesCharged(): number {
    return this.charged;
  }

  /** On entry to a node. */
  step(): void {
    this.steps++;
    if (this.steps > this.maxSteps) throw new BudgetExceeded('time', `${this.budget.timeMs} ms, ${this.maxSteps} steps`);
    if (this.steps % CLOCK_EVERY === 0 && this.budget.now() > this.deadline) {
      throw new BudgetExceeded('time', `${this.budget.timeMs} ms`);
    }
  }

  /** On exit from a node, with what it produced. */
  produced(node: Node, value: unknown): void {
    if (typeof value === 'string') {
      if (!READS.has(node.type)) this.charge(STRING_BYTES + value.length);
      if (STRING_BYTES + value.length > this.budget.memoryBytes) this.over();
    } else if (typeof value === 'object' && value !== null) {
      this.sizeOf(value);
    }
  }

  /** Estimated size of a value counted as a tree; charges each array or object once, when first seen. */
  sizeOf(value: unknown): number {
    if (typeof value === 'string') return STRING_BYTES + value.length;
    if (typeof value !== 'object' || value === null) return ELEMENT_BYTES;
    const known = this.sizes.get(value);
    if (known !== undefined) return known;
    // Lambdas and built-in functions carry their environment: not data, never walked.
    if ('_jsonata_lambda' in value || '_jsonata_function' in value) {
      this.sizes.set(value, OBJECT_BYTES);
      return OBJECT_BYTES;
    }
    let own: number;
    let children: unknown[];
    if (Array.isArray(value)) {
      own = ARRAY_BYTES + ELEMENT_BYTES * value.length;
      children = value;
    } else {
      const keys = Object.keys(value);
      own = OBJECT_BYTES;
      for (const key of keys) own += PROPERTY_BYTES + key.length;
      children = keys.map((key) => (value as Record<string, unknown>)[key]);
    }
    // Recorded before the walk, so that a cycle ends.
    this.sizes.set(value, own);
    this.charge(own);
    let total = own;
    for (const child of children) {
      if ((typeof child === 'object' && child !== null) || typeof child === 'string') total += this.sizeOf(child);
      if (total > this.budget.memoryBytes) this.over();
    }
    this.sizes.set(value, total);
    return total;
  }

  private charge(bytes: number): void {
    this.charged += bytes;
    if (this.charged > this.budget.memoryBytes) this.over();
  }

  private over(): never {
    throw new BudgetExceeded('memory', `${this.budget.memoryBytes} bytes`);
  }
}

/**
 * The first literal range in an expression's syntax tree longer than `cap` (`[1..9999999]`), for
 * refusing it when the expression is configured; undefined when there is none.
 */
export function literalRangeOver(ast: unknown, cap: number): number | undefined {
  for (const node of astNodes(ast)) {
    const n = node as { type?: unknown; value?: unknown; lhs?: { type?: unknown; value?: unknown }; rhs?: { type?: unknown; value?: unknown } };
    if (n.type === 'binary' && n.value === '..' && n.lhs?.type === 'number' && n.rhs?.type === 'number') {
      const size = Number(n.rhs.value) - Number(n.lhs.value) + 1;
      if (size > cap) return size;
    }
  }
  return undefined;
}

/** Every object in a JSONata syntax tree, each once. */
export function* astNodes(ast: unknown): Generator<object> {
  const pending: unknown[] = [ast];
  const seen = new Set<object>();
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node !== 'object' || node === null || seen.has(node)) continue;
    seen.add(node);
    yield node;
    for (const child of Object.values(node)) if (typeof child === 'object' && child !== null) pending.push(child);
  }
}

/** A backreference (`\1`, `\k<name>`) or a lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`) in a pattern's source. */
export function needsBacktracking(source: string): boolean {
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') {
      const next = source[i + 1] ?? '';
      if ((next >= '1' && next <= '9') || (next === 'k' && source[i + 2] === '<')) return true;
      i++;
    } else if (c === '(' && source[i + 1] === '?') {
      const kind = source.slice(i + 2, i + 4);
      if (kind.startsWith('=') || kind.startsWith('!') || kind === '<=' || kind === '<!') return true;
    }
  }
  return false;
}
