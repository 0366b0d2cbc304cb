/**
 * Expression budgets (protocol §16.8): a hostile JSONata expression ends with a budget error while
 * it runs — it neither stalls the process for seconds nor exhausts the heap — and legitimate
 * expressions are untouched. The three reported attack expressions are here as they were sent (decision 005).
 */
import { RivuletError } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { Meter, defaultExpressionLimits, expressionBudget, literalRangeOver, needsBacktracking, sequenceCap } from './expression-budget.js';
import { JsonataError, checkJsonata, evaluateJsonata } from './jsonata.js';

const budget = expressionBudget(defaultExpressionLimits, () => performance.now());
// The memory budget's tests give time enough that only memory can run out, however loaded the machine.
const memoryOnly = expressionBudget({ timeMs: 10_000, memoryBytes: defaultExpressionLimits.memoryBytes }, () => performance.now());
const EVENT = { path: '/x', offset: 1, type: 'job', payload: { n: 3, items: [{ price: 2 }, { price: 5 }] } };

async function failure(source: string, b = budget): Promise<{ error: JsonataError; ms: number }> {
  const started = performance.now();
  try {
    await evaluateJsonata(source, EVENT, b);
  } catch (error) {
    expect(error).toBeInstanceOf(JsonataError);
    return { error: error as JsonataError, ms: performance.now() - started };
  }
  throw new Error(`${source} did not fail`);
}

describe('the reported expressions', () => {
  it('a long $reduce over a range is refused statically and, hidden from the check, stopped by the time budget', async () => {
    const reported = '$reduce([1..2000000], function($a,$b){$a+$b}) > 0';
    expect(() => checkJsonata(reported, 'filter.jsonataCondition')).toThrow(RivuletError);
    const { error } = await failure(reported);
    expect(error.jsonataCode).toBe('MEMORY_BUDGET');
    // Within the sequence cap, the steps run out: milliseconds, not seconds.
    const { error: slow, ms } = await failure('$reduce([1..30000], function($a,$b){$a+$b}) > 0');
    expect(slow.message).toMatch(/^expression exceeded its time budget/);
    expect(slow.jsonataCode).toBe('TIME_BUDGET');
    expect(ms).toBeLessThan(1000);
  });

  it('$count([1..9999999].[1..50]) ends with a memory budget error instead of exhausting the heap', async () => {
    const reported = '$count([1..9999999].[1..50]) > 0';
    expect(() => checkJsonata(reported, 'filter.jsonataCondition')).toThrow(/exceeds the expression budget: a range of 9999999 items/);
    const { error } = await failure(reported);
    expect(error.message).toMatch(/^expression exceeded its memory budget/);
    const hidden = await failure('$count([1..$number("9999999")].[1..50]) > 0');
    expect(hidden.error.jsonataCode).toBe('MEMORY_BUDGET');
  });

  it('a product of ranges within the cap is stopped by one of the budgets', async () => {
    const { error } = await failure('$count([1..39999].[1..50]) > 0');
    expect(error.message).toMatch(/^expression exceeded its (time|memory) budget/);
  });
});

describe('the memory budget', () => {
  it('counts a value built by sharing one part many times as the tree it stands for', async () => {
    const doubling = '$reduce([1..40], function($a, $b){[[$a], [$a]]}, [1])';
    for (const source of [`$string(${doubling})`, `${doubling} = ${doubling.replace('[1])', '[2])')}`, doubling]) {
      expect((await failure(source, memoryOnly)).error.jsonataCode).toBe('MEMORY_BUDGET');
    }
  });

  it('stops strings that double, and a padding wider than the budget', async () => {
    expect((await failure('$length($reduce([1..40], function($a, $b){$a & $a}, "x"))', memoryOnly)).error.jsonataCode).toBe('MEMORY_BUDGET');
    expect((await failure('$length($pad("", 40000000))', memoryOnly)).error.jsonataCode).toBe('MEMORY_BUDGET');
  });

  it('caps sequences by both budgets', () => {
    expect(sequenceCap({ timeMs: 25, memoryBytes: 32 * 1024 * 1024 })).toBe(100_000);
    expect(sequenceCap({ timeMs: 1000, memoryBytes: 80_000 })).toBe(10_000);
  });
});

describe('the time budget', () => {
  it('caps the steps on every host, also when the clock never moves', async () => {
    const frozen = expressionBudget({ timeMs: 2, memoryBytes: 1 << 20 }, () => 0);
    const { error } = await failure('($f := function($n){$f($n + 1)}; $f(0))', frozen);
    expect(error.message).toBe('expression exceeded its time budget (2 ms, 2000 steps)');
  });

  it('reads the clock while it runs', () => {
    let now = 0;
    const meter = new Meter(expressionBudget({ timeMs: 10, memoryBytes: 1 << 20 }, () => now));
    for (let i = 0; i < 100; i++) meter.step();
    now = 11;
    expect(() => {
      for (let i = 0; i < 100; i++) meter.step();
    }).toThrow('expression exceeded its time budget (10 ms)');
  });
});

describe('legitimate expressions', () => {
  it('evaluate as before under the default budget', async () => {
    expect(await evaluateJsonata('payload.n > 2 and type = "job"', EVENT, budget)).toBe(true);
    expect(await evaluateJsonata('$sum(payload.items.price)', EVENT, budget)).toBe(7);
    expect(await evaluateJsonata('{"type": "copy/" & type, "payload": {"total": $sum(payload.items.(price * 2))}}', EVENT, budget)).toEqual({
      type: 'copy/job',
      payload: { total: 14 },
    });
    expect(await evaluateJsonata('$count([1..1000])', EVENT, budget)).toBe(1000);
  });

  it('may walk a large event: its size is counted once', async () => {
    const items = Array.from({ length: 1000 }, (_, i) => ({ price: i, tag: `t${i}` }));
    const big = { ...EVENT, payload: { items } };
    // Each item object is sized once, however many nodes read it (the walk itself is the cost).
    expect(await evaluateJsonata('$count(payload.items) = 1000 and payload.items[999].tag = "t999" and $exists(payload)', big, budget)).toBe(true);
  });
});

describe('the static check', () => {
  it('finds a literal range over the cap anywhere in the tree', () => {
    const ast = { type: 'function', arguments: [{ type: 'unary', expressions: [{ type: 'binary', value: '..', lhs: { type: 'number', value: 1 }, rhs: { type: 'number', value: 500 } }] }] };
    expect(literalRangeOver(ast, 100)).toBe(500);
    expect(literalRangeOver(ast, 1000)).toBeUndefined();
    expect(() => checkJsonata('[1..100]', 'f')).not.toThrow();
  });
});

describe('regular expressions the linear-time fallback cannot run', () => {
  it.each([
    ['(a)\\1', true],
    ['(?<x>a)\\k<x>', true],
    ['a(?=b)', true],
    ['a(?!b)', true],
    ['(?<=b)a', true],
    ['(?<!b)a', true],
    ['(a+)+$', false],
    ['\\\\1', false],
    ['(?<name>a)b', false],
    ['(?:a|b)*', false],
    ['[\\d]+', false],
  ])('%s: %s', (source, refused) => {
    expect(needsBacktracking(source)).toBe(refused);
  });

  it('checkJsonata refuses a backreference anywhere in the expression, naming it', () => {
    expect(() => checkJsonata('payload.a and $contains(payload.s, /(a)\\1/)', 'filter.jsonataCondition')).toThrow(
      'filter.jsonataCondition uses a regular expression with a backreference or a lookaround, which cannot be bounded in time: /(a)\\1/',
    );
    expect(() => checkJsonata('$contains(payload.s, /(a+)+$/)', 'filter.jsonataCondition')).not.toThrow();
  });
});
