/**
 * What the sender hands a receiver, and what it expects back. Receivers only deliver: validation
 * happened at configure time, and the ladder, skip rules and cursors belong to the sender.
 */
import type { CommittedEvent, DeliveryStamp, OutboundEntry } from '@rivulet/contract';
import type { FailureKind } from '../../core/ladder.js';
import type { ShapedEvent } from '../../core/filter.js';

/** The stamp of the delivery (source coordinates, `deliveryId`, `attempt`), and what the sender adds. */
export interface DeliveryContext extends DeliveryStamp {
  streamMaxOffset: number;
  entry: OutboundEntry;
  /** One durable event of the source stream by offset, if it is still there (the webhook envelope's configuredEvent). */
  sourceEvent(offset: number): CommittedEvent | undefined;
  signal: AbortSignal;
}

export interface DeliveredEvent {
  event: CommittedEvent;
  /** The event after the subscription's transform (the event itself when there is none). */
  shaped: ShapedEvent;
  /** With no transform: the event's payload and metadata as stored text (engine/event-json.ts `storedFieldsJson`). */
  fieldsJson?: string;
}

/** What the receiver answered, for the attempt history (protocol §22): a webhook's status and the start of its body. */
export interface AnswerFacts {
  status?: number;
  responseExcerpt?: string;
}

export type DeliveryOutcome =
  | ({
      ok: true;
      /** Events the receiving stream dropped (cycle, hop limit). */
      dropped?: number;
      /** From a receiver durable with its source: settles when what it stored is durable, rejects if that failed. */
      durable?: Promise<void>;
    } & AnswerFacts)
  | ({ ok: false; kind: FailureKind; error: string } & AnswerFacts);

export interface Receiver {
  deliver(ctx: DeliveryContext, events: readonly DeliveredEvent[]): Promise<DeliveryOutcome>;
  /**
   * What this receiver stores becomes durable only together with everything the source wrote
   * before it (a copy into the same SQLite database: one write-ahead log, made durable as a
   * prefix). The sender may then hand it events that are written but not yet durable, so a copy
   * joins its source's group commit (docs/architecture.md "Copies in the source's commit").
   */
  durableWithSource?: boolean;
  /**
   * This receiver never reads `ctx.signal` (a copy is a write into a stream, not a request that a
   * timeout could cut short): it is given a signal that never aborts, and its flights make no
   * AbortController (delivery/flight-calls.ts). The delivery timeout still settles its calls.
   */
  ignoresSignal?: boolean;
}

export type ReceiverAction = 'copy-to-stream' | 'itx-call' | 'webhook-post' | 'processor-wake';

/** Receivers by action; an action without one is unavailable (for example before its capability lands). */
export type Receivers = Partial<Record<ReceiverAction, Receiver>>;

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
