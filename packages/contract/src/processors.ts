/**
 * The hosted processor protocol (protocol §20): what a source stream
 * sends a processor host when it wakes it, what the host answers, the one-event batches that
 * follow, and the result a host reports for each batch. Shared by the server that sends them and
 * the SDK that hosts processors.
 */
import { z } from 'zod';
import type { CommittedEvent } from './events.js';

/** The stream a wake is about: the source's lifetime and head at the time of the wake. */
export interface ProcessorWakeStream {
  projectId: string | null;
  path: string;
  streamId: string;
  streamMaxOffset: number;
}

/** The argument of `host.wakeStreamProcessor(request)`. */
export interface ProcessorWakeRequest {
  stream: ProcessorWakeStream;
  subscriptionKey: string;
  /** Which processor of the host; absent when the subscription does not name one (this server never does: the host picks by expression or key). */
  processorSlug?: string;
}

/** What a host answers a wake with. `processEventBatch` is a function passed by reference. */
export interface ProcessorWakeResponse {
  /** Must equal `request.stream.streamId`: a host whose stored checkpoint belongs to another lifetime starts over. */
  streamId: string;
  /** The completed source offset stored with the processor's state (0 = nothing folded yet); at most the head. */
  checkpointOffset: number;
  processEventBatch(batch: ProcessorBatch): unknown;
}

/** The result a host reports for one batch, once its state and checkpoint are committed (or not). */
export type ProcessorDeliveryResult =
  | { outcome: 'ok'; checkpointOffset: number }
  | { outcome: 'error'; error: { message: string; retryable?: boolean } };

/** One batch: exactly one matching committed event, never ephemeral, never transformed. */
export interface ProcessorBatch {
  projectId: string | null;
  path: string;
  streamId: string;
  subscriptionKey: string;
  events: CommittedEvent[];
  streamMaxOffset: number;
  /** Report the batch's result; the source does not await `processEventBatch` itself. */
  reportDeliveryResult(result: ProcessorDeliveryResult): unknown;
}

/** What `reportDeliveryResult` answers: whether the report was taken for the batch in flight. */
export interface ProcessorReportReceipt {
  accepted: boolean;
  /** Why a report was not taken (late, superseded, malformed). */
  reason?: string;
}

export const ProcessorDeliveryResultSchema = z.discriminatedUnion('outcome', [
  z.strictObject({ outcome: z.literal('ok'), checkpointOffset: z.int().min(0) }),
  z.strictObject({
    outcome: z.literal('error'),
    error: z.object({ message: z.string(), retryable: z.boolean().optional() }),
  }),
]);
