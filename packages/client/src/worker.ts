/**
 * `serveWorker(itx, name, handlers)`: makes a few functions reachable from itx-call subscriptions
 * as `["workers", ["get", name], "<handler>"]` (protocol §18.4, §18.6). It registers on the current
 * session and again on every session after a reconnect; `stop()` unregisters for good.
 *
 * A handler's resolved call acknowledges the batch. To steer the retry ladder, throw a
 * WorkerError: `{unavailable: true}` backs off without counting towards a skip (an outage of
 * something the worker depends on), `{retryable: false}` halts the subscription at once.
 */
import { RpcTarget } from 'capnweb';
import type { ItxBatch } from './rpc-types.js';
import type { ItxConnection, ItxRoot } from './rpc.js';

export type WorkerHandler = (batch: ItxBatch) => unknown;

export class WorkerError extends Error {
  override readonly name = 'WorkerError';
  readonly retryable: boolean;
  readonly unavailable: boolean;

  constructor(message: string, options: { retryable?: boolean; unavailable?: boolean } = {}) {
    super(message);
    this.retryable = options.retryable ?? true;
    this.unavailable = options.unavailable ?? false;
  }
}

function workerTarget(handlers: Record<string, WorkerHandler>): RpcTarget {
  // RPC reaches prototype methods only: build a class whose prototype holds the handlers.
  class Worker extends RpcTarget {}
  for (const [name, handler] of Object.entries(handlers)) {
    if (typeof handler !== 'function') throw new TypeError(`worker handler "${name}" is not a function`);
    Object.defineProperty(Worker.prototype, name, {
      value: (batch: ItxBatch) => handler(batch),
      enumerable: false,
    });
  }
  return new Worker();
}

export interface ServedWorker {
  /** Resolves once the first registration is in place. */
  readonly ready: Promise<void>;
  stop(): Promise<void>;
}

export function serveWorker(itx: ItxConnection, name: string, handlers: Record<string, WorkerHandler>): ServedWorker {
  const target = workerTarget(handlers);
  let registration: { unregister(): Promise<unknown> } | undefined;
  let stopped = false;
  let markReady!: () => void;
  let failReady!: (error: unknown) => void;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    failReady = reject;
  });
  let first = true;
  const register = async (root: ItxRoot) => {
    if (stopped) return;
    try {
      registration = (await root.workers.register(name, target)) as unknown as { unregister(): Promise<unknown> };
      if (first) markReady();
    } catch (error) {
      if (first) failReady(error);
    }
    first = false;
  };
  const off = itx.onSession(register);
  return {
    ready,
    async stop() {
      stopped = true;
      off();
      await registration?.unregister().catch(() => undefined);
    },
  };
}
