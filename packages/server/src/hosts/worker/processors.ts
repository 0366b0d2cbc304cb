/**
 * The ITX port (ports/itx.ts) of a stream's Durable Object: itx-call and processor-wake across
 * Durable Objects (protocol §18.4, §20; docs/cloudflare.md §1.4). The engine's receivers and
 * processor driver run in the source stream's object (its sender), exactly as in the Node host;
 * the workers and processor hosts are capnweb stubs registered in the project's hub. So each call
 * and each wake is sent to the hub, which runs the ITX port over the project's root
 * (rpc/itx-port.ts, the same as the Node host's). A call's outcome crosses as data; a wake answers
 * the host's `processEventBatch` as a `HostedCallableTarget` passed by reference: the stream
 * object's hosted connection calls `send` on it, and the batch's `reportDeliveryResult` — a
 * function of the stream object — crosses to the hub by reference and from there to the host, so
 * the host's report reaches the driver that waits for it. Every failure to reach the hub is
 * *unavailable* (backoff, never a skip).
 */
import { RpcTarget } from 'cloudflare:workers';
import type { ProcessorBatch, ProcessorReportReceipt } from '@rivulet/contract';
import type { HostedCallable, HostedFailure, ItxPort } from '../../ports/itx.js';
import type { HostedCallableApi, HubWakeOutcome, RemoteFunction } from './api.js';
import { release } from './connections.js';
import { projectObjectName, type WorkerEnv } from './env.js';

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const unreachable = (error: unknown) => `the project's RPC hub could not be reached: ${messageOf(error)}`;

/** A value the host answered, as plain data (a stub or a function cannot cross to the stream object). */
export function plainValue(value: unknown): unknown {
  if (value === undefined || value === null || typeof value !== 'object') return typeof value === 'function' ? String(value) : value;
  try {
    return JSON.parse(JSON.stringify(value)) as unknown;
  } catch {
    return String(value);
  }
}

/** In the hub: one hosted connection's processEventBatch, reached by reference from the stream object. */
export class HostedCallableTarget extends RpcTarget implements HostedCallableApi {
  readonly #callable: HostedCallable;
  /**
   * The report function of the latest batch. The driver sends one batch at a time, so a batch is
   * over once the next is sent: its stub is released then (or at close), which holds one at most.
   */
  #report: RemoteFunction<unknown, ProcessorReportReceipt> | null = null;
  readonly #broken: Promise<string | null>;
  #settle!: (error: string | null) => void;
  #closed = false;

  /**
   * `untilReleased` is the stream object's: it settles when that object closes the connection and
   * fails when the object goes away (which releases no stub by itself); either way the host's stub
   * is let go.
   */
  constructor(callable: HostedCallable, untilReleased: RemoteFunction<void, void>) {
    super();
    this.#callable = callable;
    this.#broken = new Promise((resolve) => {
      this.#settle = resolve;
    });
    callable.onBroken((error) => this.#settle(error));
    const held = untilReleased.dup();
    const letGo = () => {
      release(held);
      void this.close();
    };
    held(undefined).then(letGo, letGo);
  }

  async send(batch: ProcessorBatch): Promise<HostedFailure | null> {
    if (this.#closed) return { kind: 'unavailable', error: 'the hosted connection was closed' };
    // Released when send returns, as every stub received as an argument: the host may report later.
    const report = (batch.reportDeliveryResult as unknown as RemoteFunction<unknown, ProcessorReportReceipt>).dup();
    if (this.#report) release(this.#report);
    this.#report = report;
    const reportDeliveryResult = (result: unknown): Promise<ProcessorReportReceipt> | ProcessorReportReceipt => {
      if (this.#report !== report) {
        return { accepted: false, reason: 'this batch is no longer in flight (a later batch was sent, or its connection closed)' };
      }
      return report(plainValue(result));
    };
    return this.#callable.send({ ...batch, reportDeliveryResult });
  }

  whenBroken(): Promise<string | null> {
    return this.#broken;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#report) release(this.#report);
    this.#report = null;
    this.#settle(null);
    this.#callable.close();
  }

  /** The stream object released it (closed, evicted or gone): the host's stub goes too. */
  [Symbol.dispose](): void {
    void this.close();
  }
}

/** In the stream object: the driver's view of the hub's HostedCallableTarget; `released` settles the hub's `untilReleased`. */
function remoteCallable(stub: HostedCallableApi, released: () => void): HostedCallable {
  let closed = false;
  let brokenWith: string | null = null;
  const listeners: ((error: string) => void)[] = [];
  const broke = (error: string) => {
    if (closed || brokenWith !== null) return;
    brokenWith = error;
    for (const listener of listeners.splice(0)) listener(error);
  };
  stub.whenBroken().then(
    (error) => {
      if (error !== null) broke(error);
    },
    (error: unknown) => broke(`the project's RPC hub went away: ${messageOf(error)}`),
  );
  return {
    async send(batch) {
      try {
        return await stub.send(batch);
      } catch (error) {
        return { kind: 'unavailable', error: unreachable(error) };
      }
    },
    onBroken(listener) {
      if (brokenWith !== null) listener(brokenWith);
      else listeners.push(listener);
    },
    close() {
      if (closed) return;
      closed = true;
      listeners.length = 0;
      released();
      void stub
        .close()
        .catch(() => undefined)
        .finally(() => release(stub));
    },
  };
}

/** In the stream object: the ITX port, through the project's hub. */
export function hubItx(env: WorkerEnv): ItxPort {
  const hub = (projectId: string | null) => env.RPC_HUB.getByName(projectObjectName(projectId));
  return {
    async call(projectId, expression, batch) {
      try {
        return await hub(projectId).callItx(projectId, expression, batch);
      } catch (error) {
        return { ok: false, kind: 'unavailable', error: unreachable(error) };
      }
    },
    async wake(projectId, expression, request) {
      let released!: () => void;
      const untilReleased = new Promise<void>((resolve) => {
        released = resolve;
      });
      let outcome: HubWakeOutcome;
      try {
        outcome = await hub(projectId).wakeProcessor(projectId, request.stream.path, expression, request, () => untilReleased);
      } catch (error) {
        released();
        return { ok: false, kind: 'unavailable', error: unreachable(error) };
      }
      if (!outcome.ok || !outcome.callable) released();
      if (!outcome.ok) return outcome;
      return { ok: true, answer: outcome.answer, callable: outcome.callable ? remoteCallable(outcome.callable, released) : undefined };
    },
  };
}
