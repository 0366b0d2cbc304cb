/**
 * The RPC side of processor-wake (protocol §20.3; the driver is engine/delivery/processor-driver.ts),
 * the `wake` half of the ITX port over an ITX root (rpc/itx-port.ts): evaluate the subscription's
 * expression from the source project's root on every wake (the stored expression is a name, not a
 * capability), call `wakeStreamProcessor` with the wake request, and keep the `processEventBatch`
 * stub of the answer as the hosted connection's callable. Failures are classified like itx-call's
 * (rpc/itx-call.ts `classify`, protocol §18.5).
 *
 * Stub ownership (Cap'n Web): a stub returned in a call's result belongs to the caller, so the
 * answer is disposed once its callable is duplicated; the duplicate is released when the hosted
 * connection closes. The batch's `reportDeliveryResult` is a function passed by reference; the host
 * must call it before its `processEventBatch` returns, or keep a `dup()` of it.
 */
import type { ProcessorBatch } from '@rivulet/contract';
import type { HostedCallable, HostedFailure, ItxPort } from '../ports/itx.js';
import { callClassified, classify, messageOf } from './itx-call.js';
import type { ItxRoot } from './root.js';

interface StubLike {
  (...args: unknown[]): unknown;
  dup?: () => StubLike;
  onRpcBroken?: (callback: (error: unknown) => void) => void;
  [Symbol.dispose]?: () => void;
}

function dispose(value: unknown): void {
  const d = (value as { [Symbol.dispose]?: () => void } | null | undefined)?.[Symbol.dispose];
  if (typeof d === 'function') {
    try {
      d.call(value);
    } catch {
      // Already broken or released.
    }
  }
}

/** The hosted connection's view of a processEventBatch stub. */
export function hostedCallable(stub: StubLike): HostedCallable {
  let broken = false;
  let closed = false;
  const brokenListeners: ((error: string) => void)[] = [];
  stub.onRpcBroken?.((error) => {
    broken = true;
    if (closed) return;
    for (const listener of brokenListeners.splice(0)) listener(messageOf(error));
  });
  return {
    send(batch: ProcessorBatch): Promise<HostedFailure | null> {
      let call: unknown;
      try {
        call = stub(batch);
      } catch (error) {
        return Promise.resolve(classify(error, broken));
      }
      return Promise.resolve(call).then(
        (result) => {
          dispose(result);
          return null;
        },
        (error: unknown) => classify(error, broken),
      );
    },
    onBroken(listener) {
      if (broken) listener('the session already ended');
      else brokenListeners.push(listener);
    },
    close() {
      if (closed) return;
      closed = true;
      brokenListeners.length = 0;
      dispose(stub);
    },
  };
}

/** The `wake` of the ITX port over the roots of `rootFor`. */
export function rootWake(rootFor: (projectId: string | null) => ItxRoot): ItxPort['wake'] {
  return async (projectId, expression, request) => {
    const called = await callClassified(rootFor(projectId), expression, request);
    if (!called.ok) return called;
    const answer = called.value;
    try {
      if (typeof answer !== 'object' || answer === null) return { ok: true, answer: null, callable: undefined };
      const fields = answer as { streamId?: unknown; checkpointOffset?: unknown; processEventBatch?: unknown };
      const fn = fields.processEventBatch as StubLike | undefined;
      const callable = typeof fn === 'function' ? hostedCallable(typeof fn.dup === 'function' ? fn.dup() : fn) : undefined;
      return { ok: true, answer: { streamId: fields.streamId, checkpointOffset: fields.checkpointOffset }, callable };
    } finally {
      dispose(answer);
    }
  };
}
