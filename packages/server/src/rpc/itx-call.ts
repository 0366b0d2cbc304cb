/**
 * Evaluating an ITX expression (API.md §5) against a project's root, as the RPC peer would: every
 * step goes through an RpcStub of the root, so exactly the surface an RPC client sees is reachable
 * (prototype methods and getters, never private state), and the root is the source stream's own
 * project, so another project is unreachable (S46). The expression is a name resolved on every
 * delivery, not a stored capability. Each intermediate step is awaited so that a failure names the
 * step that failed; every stub taken on the way is disposed.
 */
import type { ItxExpression, ItxStep } from '@rivulet/contract';
import { RpcStub } from 'capnweb';
import type { ItxRoot } from './root.js';

type Callable = Record<string, unknown>;

function describe(step: ItxStep): string {
  return JSON.stringify(step);
}

function dispose(value: unknown): void {
  const d = (value as { [Symbol.dispose]?: () => void } | null)?.[Symbol.dispose];
  if (typeof d === 'function') {
    try {
      d.call(value);
    } catch {
      // Already broken or released.
    }
  }
}

export class ItxStepError extends Error {
  override readonly name = 'ItxStepError';
  constructor(
    message: string,
    readonly step: number,
    override readonly cause: unknown,
  ) {
    super(message);
  }
}

/**
 * Resolves every step but the last, then calls the last (a method name) with `payload`.
 * `onTarget` sees the resolved target before the call (to watch its connection).
 */
export async function callItx(
  root: ItxRoot,
  expression: ItxExpression,
  payload: unknown,
  onTarget?: (target: unknown) => void,
): Promise<unknown> {
  const held: unknown[] = [];
  let current: unknown = new RpcStub(root);
  held.push(current);
  try {
    for (let i = 0; i < expression.length - 1; i++) {
      const step = expression[i]!;
      const on = current as Callable;
      try {
        current =
          typeof step === 'string'
            ? await (on[step] as PromiseLike<unknown>)
            : await (on[step[0]] as (...args: unknown[]) => PromiseLike<unknown>)(...step.slice(1));
      } catch (error) {
        throw new ItxStepError(`ITX expression step ${i} ${describe(step)} failed: ${messageOf(error)}`, i, error);
      }
      if (current === null || current === undefined) {
        throw new ItxStepError(`ITX expression step ${i} ${describe(step)} answered nothing`, i, undefined);
      }
      held.push(current);
    }
    const method = expression[expression.length - 1] as string;
    onTarget?.(current);
    return await ((current as Callable)[method] as (arg: unknown) => PromiseLike<unknown>)(payload);
  } finally {
    for (const h of held.reverse()) dispose(h);
  }
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
