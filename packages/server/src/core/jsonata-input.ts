/**
 * Keeping an evaluation's input its own (protocol §16.8). JSONata 2.2 writes into its input in one
 * place: grouping (`items{…}`, or an object constructor over a context) pushes a placeholder into
 * the sequence it groups when that sequence is empty, and when the sequence is an empty array of
 * the event itself, the event is changed: `payload.items{"k": 1}` on `{"items": []}` leaves
 * `{"items": [null]}` behind, for the next expression and for the copy that is stored. An
 * expression that can group is therefore given a copy of an input that holds an empty array; any
 * other evaluation reads the event as it is, at no cost.
 */
import { astNodes } from './expression-budget.js';

/** Whether an expression groups anywhere: a `group` clause on a path or step, or an object constructor. */
export function mayGroup(ast: unknown): boolean {
  for (const node of astNodes(ast) as Iterable<{ type?: unknown; value?: unknown }>) {
    if (Object.prototype.hasOwnProperty.call(node, 'group') || (node.type === 'unary' && node.value === '{')) return true;
  }
  return false;
}

/** Whether a JSON value holds an empty array anywhere (itself included). */
export function holdsEmptyArray(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const v = pending.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      if (v.length === 0) return true;
      for (const item of v) if (typeof item === 'object' && item !== null) pending.push(item);
    } else {
      for (const key in v) {
        const item = (v as Record<string, unknown>)[key];
        if (typeof item === 'object' && item !== null) pending.push(item);
      }
    }
  }
  return false;
}

/** The input an evaluation may be given: the value itself, or a copy when the expression could write into it. */
export function inputFor(groups: boolean, input: unknown): unknown {
  return groups && holdsEmptyArray(input) ? structuredClone(input) : input;
}
