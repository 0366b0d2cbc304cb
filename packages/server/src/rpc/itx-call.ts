/**
 * Evaluating an ITX expression (protocol §18.3) against a project's root, as the RPC peer would:
 * every step goes through an RpcStub of the root, so exactly the surface an RPC client sees is
 * reachable (prototype methods and getters, never private state), and the root is the source
 * stream's own project, so another project is unreachable (protocol §18.4). The expression is a
 * name resolved on every delivery, not a stored capability. Each intermediate step is awaited so
 * that a failure names the step that failed; every stub taken on the way is disposed.
 */
import type { ItxExpression, ItxStep } from '@rivulet/contract';
import { RpcStub } from 'capnweb';
import type { ItxFailure } from '../ports/itx.js';
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

/** Errors capnweb raises when the peer's session is gone (its own, unexported messages). */
const BROKEN_SESSION = /Peer closed WebSocket|WebSocket connection failed|RPC session was shut down|RPC session failed/i;

/**
 * The outcome of a failed ITX call (protocol §18.5; ports/itx.ts): itx-call deliveries, processor
 * wakes and processor batches alike. `broken` says the target's session broke during the call.
 */
export function classify(error: unknown, broken: boolean): ItxFailure {
  const cause = error instanceof ItxStepError ? error.cause : error;
  const props = (cause ?? {}) as { code?: unknown; unavailable?: unknown; retryable?: unknown };
  const message = messageOf(error);
  if (broken || props.unavailable === true || props.code === 'UNAVAILABLE' || BROKEN_SESSION.test(message)) {
    return { kind: 'unavailable', error: message };
  }
  if (props.retryable === false) return { kind: 'fatal', error: message };
  return { kind: 'failing', error: message };
}

/** callItx with its failure classified, counting a break of the target's session during the call. */
export async function callClassified(
  root: ItxRoot,
  expression: ItxExpression,
  payload: unknown,
): Promise<{ ok: true; value: unknown } | ({ ok: false } & ItxFailure)> {
  let broken = false;
  try {
    const value = await callItx(root, expression, payload, (target) => {
      const watch = (target as { onRpcBroken?: (cb: () => void) => void }).onRpcBroken;
      if (typeof watch === 'function') watch.call(target, () => (broken = true));
    });
    return { ok: true, value };
  } catch (error) {
    return { ok: false, ...classify(error, broken) };
  }
}
