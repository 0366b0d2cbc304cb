/**
 * Reaching a project's ITX root, the port itx-call and processor-wake deliveries go through
 * (protocol §18.4, §20.3). Each host decides *how* the root is reached — the Node host evaluates
 * the expression against its in-process ITX root (rpc/itx-port.ts), the Worker host sends the call
 * to the project's RPC hub, which does the same there (hosts/worker/processors.ts) — so the engine's
 * receivers (engine/receivers/itx.ts) stay free of RPC sessions and stubs.
 *
 * The contract every adapter keeps:
 * - the expression is evaluated on every call from the root of the project named (a stored
 *   expression is a name, not a capability), and its final method is called with the payload;
 * - a call never rejects: a failure is answered, classified as protocol §18.5 says —
 *   *unavailable* when the target cannot be reached (no worker or host of that name connected in
 *   the project, a session that broke during the call, the way to the root is down) or the error
 *   carries `unavailable: true`; *fatal* when it carries `retryable: false`; *failing* otherwise.
 *   The kind comes from the error's flags and from whether the session broke, never from its text
 *   alone (only the RPC library's own "session is gone" messages are recognised);
 * - timing belongs to the caller (the sender's delivery timeout): an adapter does not time out.
 */
import type { ItxBatch, ItxExpression, ProcessorBatch, ProcessorWakeRequest } from '@rivulet/contract';
import type { FailureKind } from '../core/ladder.js';
import type { WakeAnswer } from '../core/processor-wake.js';

/** A call that did not succeed, classified (the rules above). */
export interface ItxFailure {
  kind: FailureKind;
  error: string;
}

export type ItxCallOutcome = { ok: true } | ({ ok: false } & ItxFailure);

/** A failure a processor host's call reports without a result (its call threw, or its session broke). */
export type HostedFailure = ItxFailure;

/** The processEventBatch callback a host answered a wake with (an RPC stub behind this port). */
export interface HostedCallable {
  /**
   * Calls processEventBatch(batch). Answers null once the call returned (its value is ignored: the
   * result comes through `batch.reportDeliveryResult`), or the failure when it threw or broke.
   */
  send(batch: ProcessorBatch): Promise<HostedFailure | null>;
  /** Calls `listener` once when the host's session breaks. */
  onBroken(listener: (error: string) => void): void;
  /** Releases the reference (idempotent). */
  close(): void;
}

export type WakeOutcome =
  | { ok: true; answer: WakeAnswer | null; callable: HostedCallable | undefined }
  | ({ ok: false } & HostedFailure);

export interface ItxPort {
  /** itx-call: calls the expression's final method with `batch`; the resolved call acknowledges it. */
  call(projectId: string | null, expression: ItxExpression, batch: ItxBatch): Promise<ItxCallOutcome>;
  /**
   * processor-wake: calls the expression's final method with the wake request and answers the
   * answer's `streamId` and `checkpointOffset` as data (null when it is no object), with its
   * `processEventBatch` held as a HostedCallable (undefined when it is no function).
   */
  wake(projectId: string | null, expression: ItxExpression, request: ProcessorWakeRequest): Promise<WakeOutcome>;
}
