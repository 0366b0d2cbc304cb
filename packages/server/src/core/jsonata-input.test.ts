import jsonata from 'jsonata';
import { describe, expect, it } from 'vitest';
import { expressionBudget } from './expression-budget.js';
import { holdsEmptyArray, inputFor, mayGroup } from './jsonata-input.js';
import { evaluateJsonata, evaluateJsonataAs } from './jsonata.js';

const roomy = expressionBudget({ timeMs: 60_000, memoryBytes: 1 << 30 }, () => performance.now());

describe('an evaluation keeps its input its own', () => {
  it('JSONata alone writes a placeholder into an empty array it groups (why the copy exists)', async () => {
    const event = { payload: { items: [] as unknown[] } };
    await jsonata('payload.items{"k": 1}').evaluate(event);
    // When this fails, JSONata no longer writes into its input, and jsonata-input.ts can go.
    expect(event.payload.items).toEqual([undefined]);
  });

  it.each(['payload.items{"k": 1}', '$count(payload.items{"k": 1}) >= 0', 'payload.items.{"k": 1}', 'payload.lists.$.{"k": 1}'])('%s leaves the event as it was, either way', async (source) => {
    for (const mode of ['metered', 'unmetered'] as const) {
      const event = { payload: { items: [] as unknown[], lists: [[], [1]], n: 1 } };
      await evaluateJsonataAs(mode, source, event, roomy);
      expect(event, mode).toEqual({ payload: { items: [], lists: [[], [1]], n: 1 } });
    }
  });

  it('the planned evaluation too, and a second expression on the same event sees it unchanged', async () => {
    const event = { payload: { items: [] as unknown[] } };
    expect(await evaluateJsonata('$count(payload.items{"k": 1})', event, roomy)).toBe(1);
    expect(await evaluateJsonata('payload.items', event, roomy)).toEqual([]);
  });
});

describe('mayGroup', () => {
  it.each(['a{"k": 1}', 'a.b{c: d}', '{"k": a}', 'a.{"k": 1}', '$count(a{"k": 1})', '[a, {"k": 1}]'])('%s can group', (source) => {
    expect(mayGroup(jsonata(source).ast())).toBe(true);
  });
  it.each(['a.b', '$count(a)', '[1, 2]', 'a[b > 1].c', '"{}"', '$string(a)'])('%s cannot', (source) => {
    expect(mayGroup(jsonata(source).ast())).toBe(false);
  });
});

describe('holdsEmptyArray and inputFor', () => {
  it('finds an empty array at any depth, and nothing in values without one', () => {
    expect(holdsEmptyArray([])).toBe(true);
    expect(holdsEmptyArray({ a: { b: [1, { c: [] }] } })).toBe(true);
    expect(holdsEmptyArray({ a: { b: [1, { c: [2] }] }, d: 'x', e: null })).toBe(false);
    expect(holdsEmptyArray('[]')).toBe(false);
    expect(holdsEmptyArray({})).toBe(false);
  });

  it('copies only for an expression that groups over an input with an empty array', () => {
    const withEmpty = { a: [] };
    const without = { a: [1] };
    expect(inputFor(false, withEmpty)).toBe(withEmpty);
    expect(inputFor(true, without)).toBe(without);
    const copy = inputFor(true, withEmpty);
    expect(copy).not.toBe(withEmpty);
    expect(copy).toEqual(withEmpty);
  });
});
