/**
 * evaluateJsonata throws JsonataError for every failure, also when an expression yields a lambda
 * (alone or inside an object), which is not JSON: the copy to plain JSON used to throw a raw
 * TypeError ("Converting circular structure to JSON …").
 */
import { describe, expect, it } from 'vitest';
import { JsonataError, evaluateJsonata } from './jsonata.js';
import { defaultExpressionLimits, expressionBudget } from './expression-budget.js';

const budget = expressionBudget(defaultExpressionLimits, () => Date.now());

describe('evaluateJsonata on non-JSON results', () => {
  it.each(['function($x){$x}', '{"payload": {"f": function($x){$x}}}'])('%s is a JsonataError, not a raw TypeError', async (source) => {
    await expect(evaluateJsonata(source, {}, budget)).rejects.toBeInstanceOf(JsonataError);
  });
});
