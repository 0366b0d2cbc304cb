/**
 * What the helpers of one stream's send loop (sender.ts) share of it, as one object the sender is:
 * the failure handling (failures.ts), the preparation of deliveries (prepare.ts) and the processor
 * driver (processor-driver.ts) each take the SendLoop and nothing else. It holds what the sender
 * was composed with (actor, clock, random, configuration, receivers), the flights under way, and
 * the few things the helpers ask of the loop: whether a delivery is still the current one of its
 * run, writing delivery progress, logging, and looking again.
 */
import type { OutboundEntry } from '@rivulet/contract';
import type { Failure, LadderKnobs } from '../../core/ladder.js';
import type { SubscriptionRow } from '../../core/repair.js';
import type { Clock, Random } from '../../ports/clock.js';
import type { Timer } from '../../ports/timer.js';
import type { StreamActor } from '../actor.js';
import type { EngineConfig } from '../config.js';
import type { ServerMetrics } from '../metrics.js';
import type { Receivers } from '../receivers/receiver.js';
import type { FlightCalls } from './flight-calls.js';
import type { ProcessorWaker } from './processor-port.js';
import type { WrittenThrough } from './written-through.js';

/** One delivery of one key, started in one run (a run: protocol §12.1). */
export interface Flight {
  run: string;
  /** Its receiver calls, their signal and timeout (flight-calls.ts), from its first call on. */
  calls?: FlightCalls;
}

/** What a failed delivery does to its row (failures.ts). */
export interface FailureHandling {
  failed(key: string, entry: OutboundEntry, flight: Flight, failure: Failure, error: string): Promise<void>;
  /** A JSONata condition threw on `offset`: its audit, then an ordered failure. */
  conditionFailed(key: string, entry: OutboundEntry, flight: Flight, row: SubscriptionRow, offset: number, error: string): Promise<void>;
}

export interface SendLoop {
  readonly actor: StreamActor;
  readonly clock: Clock;
  /** In-memory timers (call and wake timeouts). */
  readonly timer: Timer;
  readonly random: Random;
  readonly config: EngineConfig;
  readonly metrics: ServerMetrics | undefined;
  readonly receivers: Receivers;
  /** Wakes hosted processors (processor-wake); without it they are unavailable. */
  readonly processorWaker: ProcessorWaker | undefined;
  /** The ladder's knobs, from the configuration. */
  readonly knobs: LadderKnobs;
  /** The delivery under way per key (a processor step counts as one). */
  readonly flights: Map<string, Flight>;
  /** Copies written and not yet durable, per key (written-through.ts). */
  readonly writtenThrough: WrittenThrough;
  readonly failures: FailureHandling;
  /** The run of `row` in the lifetime `streamId`. */
  runOf(streamId: string, row: SubscriptionRow): string;
  /**
   * How far `entry` may read: the durable head, or the written head for copies whose receiver is
   * durable with its source (Receiver.durableWithSource).
   */
  headFor(entry: OutboundEntry): number;
  /** The row, while `flight` is still the current delivery of its run. */
  current(key: string, flight: Flight): SubscriptionRow | undefined;
  /** Writes delivery progress (not synced on its own, protocol §12.9). */
  write(row: SubscriptionRow): void;
  log(message: string, error?: unknown): void;
  /** A send check on the next microtask (a flight ended: the next batch may be owed at once). */
  recheck(): void;
  /** A send check soon, outside the caller's promise chain. */
  poke(): void;
}
