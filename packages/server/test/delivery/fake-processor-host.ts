/**
 * A scripted processor host behind the driver's waker port (engine/delivery/processor-driver.ts),
 * for test/delivery/processors.test.ts. By default it behaves like an honest host: a wake for a
 * new lifetime starts over at checkpoint 0; each batch folds its event (recorded in `folded`),
 * commits the checkpoint and reports it, a tick later (never inside the call). Scripts override a
 * wake or a batch: hang, break the connection, report something else, or fail the call.
 */
import type { ItxExpression, ProcessorBatch, ProcessorReportReceipt, ProcessorWakeRequest } from '@rivulet/contract';
import type { HostedCallable, HostedFailure, ProcessorWaker, WakeOutcome } from '../../src/engine/delivery/processor-port.js';

export interface WakeCall {
  projectId: string | null;
  expression: ItxExpression;
  request: ProcessorWakeRequest;
  /** The callable answered (undefined when the wake failed or answered none). */
  callable?: FakeCallable | undefined;
}

export interface BatchCall {
  batch: ProcessorBatch;
  offset: number;
  callable: FakeCallable;
  /** Receipts of every report made for this batch, in order. */
  receipts: ProcessorReportReceipt[];
  report(result: unknown): ProcessorReportReceipt;
}

/** What a batch does: fold honestly, hang (no report), report `result`, break the session, or fail the call. */
export type BatchAction = 'fold' | 'hang' | 'break' | { report: unknown } | { fail: HostedFailure };

/** What a wake does: answer honestly, hang, or answer this outcome (fields of the answer may be overridden). */
export type WakeAction = 'answer' | 'hang' | WakeOutcome | { answer: { streamId?: unknown; checkpointOffset?: unknown } | null; callable?: boolean };

export class FakeCallable implements HostedCallable {
  closed = false;
  broken = false;
  private listeners: ((error: string) => void)[] = [];

  constructor(private readonly host: FakeProcessorHost) {}

  send(batch: ProcessorBatch): Promise<HostedFailure | null> {
    return this.host.deliver(this, batch);
  }

  onBroken(listener: (error: string) => void): void {
    this.listeners.push(listener);
  }

  /** The host's session ends. */
  break(error = 'Peer closed WebSocket'): void {
    if (this.broken) return;
    this.broken = true;
    for (const listener of this.listeners.splice(0)) listener(error);
  }

  close(): void {
    this.closed = true;
  }
}

export class FakeProcessorHost implements ProcessorWaker {
  readonly wakes: WakeCall[] = [];
  readonly batches: BatchCall[] = [];
  /** The host's stored lifetime and checkpoint, and every offset it folded (in order). */
  streamId: string | null = null;
  checkpoint = 0;
  folded: number[] = [];
  wakeScript: (request: ProcessorWakeRequest, index: number) => WakeAction = () => 'answer';
  batchScript: (call: BatchCall, index: number) => BatchAction = () => 'fold';
  /** Runs inside processEventBatch before anything else (a processor appending to its own stream). */
  during?: (call: BatchCall) => Promise<void>;

  async wake(projectId: string | null, expression: ItxExpression, request: ProcessorWakeRequest): Promise<WakeOutcome> {
    const call: WakeCall = { projectId, expression, request };
    this.wakes.push(call);
    const action = this.wakeScript(request, this.wakes.length - 1);
    await Promise.resolve();
    if (action === 'hang') return new Promise<WakeOutcome>(() => undefined);
    if (action === 'answer') {
      if (this.streamId !== request.stream.streamId) {
        this.streamId = request.stream.streamId;
        this.checkpoint = 0;
        this.folded = [];
      }
      call.callable = new FakeCallable(this);
      return { ok: true, answer: { streamId: this.streamId, checkpointOffset: this.checkpoint }, callable: call.callable };
    }
    if ('ok' in action) {
      if (action.ok) call.callable = action.callable as FakeCallable | undefined;
      return action;
    }
    const callable = action.callable === false ? undefined : new FakeCallable(this);
    call.callable = callable;
    const answer = action.answer === null ? null : { streamId: request.stream.streamId, checkpointOffset: this.checkpoint, ...action.answer };
    return { ok: true, answer, callable };
  }

  /** processEventBatch: not awaited by the source for its result; the report comes a tick later. */
  async deliver(callable: FakeCallable, batch: ProcessorBatch): Promise<HostedFailure | null> {
    const call: BatchCall = {
      batch,
      offset: batch.events[0]!.offset,
      callable,
      receipts: [],
      report: (result) => {
        const receipt = batch.reportDeliveryResult(result as never) as ProcessorReportReceipt;
        call.receipts.push(receipt);
        return receipt;
      },
    };
    this.batches.push(call);
    const action = this.batchScript(call, this.batches.length - 1);
    if (this.during) await this.during(call);
    if (action === 'hang') return null;
    if (action === 'break') {
      setTimeout(() => callable.break(), 0);
      return new Promise<HostedFailure | null>(() => undefined);
    }
    if (typeof action === 'object' && 'fail' in action) return action.fail;
    setTimeout(() => {
      if (action === 'fold') {
        for (const event of batch.events) {
          if (batch.streamId === this.streamId && event.offset > this.checkpoint) {
            this.folded.push(event.offset);
            this.checkpoint = event.offset;
          }
        }
        call.report({ outcome: 'ok', checkpointOffset: this.checkpoint });
      } else {
        call.report(action.report);
      }
    }, 0);
    return null;
  }

  /** Offsets of every batch sent, in order. */
  get offsets(): number[] {
    return this.batches.map((b) => b.offset);
  }

  /** Breaks every connection still open. */
  breakAll(): void {
    for (const wake of this.wakes) if (wake.callable && !wake.callable.closed) wake.callable.break();
  }
}
