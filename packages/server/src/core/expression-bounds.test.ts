/**
 * Unmetered evaluations (protocol §16.8): the static bound of core/expression-bounds.ts must hold
 * (the meter, run on the same expression and input, never counts more steps or bytes than the
 * bound allows), the two ways of evaluating must agree, and everything that can loop or multiply
 * must stay metered.
 */
import fc from 'fast-check';
import jsonata from 'jsonata';
import { describe, expect, it } from 'vitest';
import { inputSizeWithin, staticBound } from './expression-bounds.js';
import { Meter, expressionBudget } from './expression-budget.js';
import { evaluateJsonata, evaluateJsonataAs, evaluationPlan } from './jsonata.js';

const bound = (source: string) => staticBound(jsonata(source).ast());
const roomy = expressionBudget({ timeMs: 60_000, memoryBytes: 1 << 30 }, () => performance.now());
const EVENT = { path: '/x', offset: 1, type: 'job', payload: { n: 3, user: 'ann', items: [{ price: 2, name: 'a' }, { price: 5, name: 'b' }] } };

describe('the bounded class', () => {
  it.each([
    'payload.n > 2',
    'type = "job" and payload.n >= 1',
    'payload.items[price > 3].name',
    'payload.items.price',
    'payload.*',
    '$.payload.n',
    '{"type": "t", "payload": {"u": $uppercase(payload.user), "n": $length(payload.user), "sum": $sum(payload.items.price)}}',
    'payload.user & "-" & $string(payload.n)',
    'payload.n ? "yes" : "no"',
    '(payload.n; payload.user)',
    '[payload.n, payload.user]',
    'payload.items{name: $sum(price)}',
    '"ann" in payload.items.name',
    '$contains(payload.user, "an")',
    '$split(payload.user, "n")',
    '$join(payload.items.name, ", ")',
    '$substring(payload.user, 0, 2)',
    '-payload.n',
  ])('%s is bounded', (source) => {
    expect(bound(source)).toBeDefined();
  });

  it.each([
    ['a range', '[1..10]'],
    ['a lambda', '$map(payload.items, function($i){$i.price})'],
    ['a binding', '($x := payload.n; $x)'],
    ['the root', '$$.payload'],
    ['a named variable', 'payload.items[$x]'],
    ['the parent operator', 'payload.items.%.n'],
    ['descendants', 'payload.**'],
    ['a chain', 'payload.user ~> $uppercase'],
    ['a regex', '$contains(payload.user, /a+/)'],
    ['a sort', 'payload.items^(price)'],
    ['a focus binding', 'payload.items@$i'],
    ['an index binding', 'payload.items#$i'],
    ['$pad', '$pad(payload.user, 1000000)'],
    ['$replace', '$replace(payload.user, "a", payload.user)'],
    ['$eval', '$eval(payload.user)'],
    ['$distinct', '$distinct(payload.items)'],
    ['$string with indentation', '$string(payload, true)'],
    ['a split on a computed separator', '$split(payload.user, payload.user)'],
    ['a join on a computed separator', '$join(payload.items.name, payload.user)'],
    ['a constructed step before the last', 'payload.[items, items].price'],
    ['a computed first step', '$lookup(payload, "items").price'],
    ['a transform', '$ ~> |payload|{"n": 1}|'],
    ['a function as a value', '$uppercase'],
  ])('%s is metered: %s', (_what, source) => {
    expect(bound(source)).toBeUndefined();
    expect(evaluationPlan(source, EVENT)).toBe('metered');
  });
});

describe('the plan', () => {
  const transform = '{"type": "t", "payload": {"u": $uppercase(payload.user), "n": $length(payload.text)}}';

  it('runs a bounded expression on a small event unmetered', () => {
    expect(evaluationPlan(transform, { payload: { user: 'ann', text: 'x'.repeat(100) } })).toBe('unmetered');
  });

  it('meters the same expression on an event too large for the bound to prove it safe', () => {
    // Estimated bytes × (1 + the memory factor) must stay under 1 MB at a 10 ms budget.
    const factor = 1 + bound(transform)!.memoryFactor;
    const fits = Math.floor(1_000_000 / factor) - 200;
    expect(evaluationPlan(transform, { payload: { user: 'ann', text: 'x'.repeat(fits) } })).toBe('unmetered');
    expect(evaluationPlan(transform, { payload: { user: 'ann', text: 'x'.repeat(fits + 400) } })).toBe('metered');
  });

  it('meters a bounded expression over an input with too many values for the step share', () => {
    const source = 'payload.items[price > 1].name';
    const b = bound(source)!;
    // 10 ms × 1000 steps, a tenth of it: topNodes + innerNodes × values ≤ 1000.
    const maxValues = Math.floor((1000 - b.topNodes) / b.innerNodes);
    // The event, payload and items, then per item its object, price and name: 3 + 3n values.
    const items = (n: number) => ({ payload: { items: Array.from({ length: n }, (_, i) => ({ price: i, name: 'n' })) } });
    const most = Math.floor((maxValues - 3) / 3);
    expect(inputSizeWithin(items(most), Infinity, Infinity)!.values).toBeLessThanOrEqual(maxValues);
    expect(inputSizeWithin(items(most + 1), Infinity, Infinity)!.values).toBeGreaterThan(maxValues);
    expect(evaluationPlan(source, items(most))).toBe('unmetered');
    expect(evaluationPlan(source, items(most + 1))).toBe('metered');
  });

  it('gives the same answers either way on the same event', async () => {
    for (const source of ['payload.items[price > 3].name', 'payload.user & "!"', '$sum(payload.items.price) * 2']) {
      const plain = await evaluateJsonataAs('unmetered', source, EVENT, roomy);
      expect(await evaluateJsonataAs('metered', source, EVENT, roomy)).toEqual(plain);
      expect(await evaluateJsonata(source, EVENT, roomy)).toEqual(plain);
    }
  });
});

describe('inputSizeWithin', () => {
  it('counts values and estimated bytes, and stops past either limit', () => {
    const size = inputSizeWithin({ a: 'xy', b: [1, 2] }, 100, 1000)!;
    // object 32 + keys (16+1)×2; "xy" 18; array 16 + 2×8; 1 and 2: 8 each.
    expect(size).toEqual({ values: 5, bytes: 32 + 34 + 18 + 32 + 16 });
    expect(inputSizeWithin({ a: 'xy', b: [1, 2] }, 5, 1000)).toBeDefined();
    expect(inputSizeWithin({ a: 'xy', b: [1, 2] }, 4, 1000)).toBeUndefined();
    expect(inputSizeWithin({ a: 'xy', b: [1, 2] }, 100, 132)).toBeDefined();
    expect(inputSizeWithin({ a: 'xy', b: [1, 2] }, 100, 131)).toBeUndefined();
  });
});

// Expressions of the bounded class, over inputs whose keys they name.
const KEYS = ['a', 'b', 'items', 'price', 'name'];
const input = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.integer({ min: -5, max: 20 }),
    fc.constantFrom('ann', 'b,c', 'x', ''),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom(...KEYS), tie('value'), { maxKeys: 4 }),
  ),
})).value;
const root = fc.dictionary(fc.constantFrom(...KEYS), input, { minKeys: 1, maxKeys: 5 });

const expression = fc.letrec<{ expr: string; path: string }>((tie) => ({
  path: fc.oneof(
    fc.constantFrom(...KEYS),
    fc.tuple(fc.constantFrom(...KEYS, '*', '$'), fc.constantFrom(...KEYS)).map(([x, y]) => `${x}.${y}`),
    fc.tuple(fc.constantFrom(...KEYS), tie('expr')).map(([x, p]) => `${x}[${p}]`),
    fc.tuple(fc.constantFrom(...KEYS), tie('expr')).map(([x, last]) => `${x}.(${last})`),
    fc.tuple(fc.constantFrom(...KEYS), fc.constantFrom(...KEYS), tie('expr')).map(([x, k, v]) => `${x}{${k}: ${v}}`),
  ),
  expr: fc.oneof(
    { depthSize: 'small', maxDepth: 4 },
    tie('path'),
    fc.constantFrom('1', '2', '"x"', '"ann"', 'true', 'null', '$'),
    fc.tuple(tie('expr'), fc.constantFrom('+', '*', '=', '!=', '<', 'and', 'or', '&', 'in'), tie('expr')).map(([l, op, r]) => `(${l} ${op} ${r})`),
    fc.tuple(fc.constantFrom('$length', '$string', '$uppercase', '$count', '$sum', '$keys', '$exists', '$reverse', '$type', '$not', '$number', '$trim', '$append'), tie('expr')).map(([f, x]) => `${f}(${x})`),
    tie('expr').map((x) => `$join(${x}, ",")`),
    tie('expr').map((x) => `$split(${x}, ",")`),
    tie('expr').map((x) => `$contains(${x}, "a")`),
    fc.tuple(tie('expr'), tie('expr'), tie('expr')).map(([c, t, e]) => `(${c} ? ${t} : ${e})`),
    fc.tuple(tie('expr'), tie('expr')).map(([x, y]) => `[${x}, ${y}]`),
    fc.tuple(tie('expr'), tie('expr')).map(([x, y]) => `{"k": ${x}, "l": ${y}}`),
    fc.tuple(tie('expr'), tie('expr')).map(([x, y]) => `(${x}; ${y})`),
  ),
})).expr;

async function outcome(run: () => Promise<unknown>): Promise<{ value?: unknown; error?: string }> {
  try {
    return { value: await run() };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

describe('the bound holds (property)', () => {
  it('the meter never counts more steps or bytes than the static bound, and both ways agree', async () => {
    await fc.assert(
      fc.asyncProperty(expression, root, async (source, data) => {
        // JSONata settles on microtasks alone: without a turn of the event loop per run, no timer
        // (this test's timeout among them) could fire until fast-check is done, shrinking included.
        await new Promise((resolve) => setImmediate(resolve));
        const b = bound(source);
        expect(b, source).toBeDefined();
        const size = inputSizeWithin(data, Infinity, Infinity)!;
        const meter = new Meter(roomy);
        const metered = await outcome(() => evaluateJsonataAs('metered', source, data, roomy, meter));
        const plain = await outcome(() => evaluateJsonataAs('unmetered', source, data, roomy));
        // Values must be equal. Errors need not name the same part: JSONata evaluates the members
        // of a constructor concurrently, so with two failing members the meter's extra awaits can
        // change which failure surfaces first.
        if (metered.error === undefined || plain.error === undefined) expect(metered, source).toEqual(plain);
        expect(meter.stepsTaken, source).toBeLessThanOrEqual(b!.topNodes + b!.innerNodes * size.values);
        expect(meter.bytesCharged, source).toBeLessThanOrEqual(size.bytes * (1 + b!.memoryFactor));
      }),
      // A run (or a shrink) that goes on this long fails, naming its seed, rather than running on.
      { numRuns: 800, interruptAfterTimeLimit: 90_000, markInterruptAsFailure: true },
    );
  }, 120_000);
});
