/**
 * What one delivery sends (protocol §12.3): the events a subscription owes after
 * its cursor, shaped by its transform, with the call's context (the run's stamp, the delivery id,
 * the attempt) and, for receivers that can, the call itself prepared (a webhook's body). Deliveries
 * that need no call are settled here: nothing owed moves the cursor past what was scanned; a
 * condition or a transform that throws is an ordered failure (failures.ts).
 *
 * Webhooks read ahead (read-ahead.ts), and the sender prepares the next delivery while the one
 * before is under way (`ahead`: the next webhook during a POST, the next copy batch during the
 * receiving stream's sync): it is used only if that delivery succeeds and leaves the cursor exactly
 * where the prepared one was read from.
 */
import type { CommittedEvent, OutboundEntry } from '@rivulet/contract';
import type { ExpressionBudget } from '../../core/expression-budget.js';
import { shapeEvent, unshaped, type ShapedEvent } from '../../core/filter.js';
import { runGeneration, type SubscriptionRow } from '../../core/repair.js';
import { utf8Length } from '../../core/sizes.js';
import { errorText, type DeliveredEvent, type DeliveryContext, type Receiver } from '../receivers/receiver.js';
import type { PreparedCall, PreparingReceiver } from '../receivers/webhook.js';
import { committedJson, rememberJson, storedFieldsJson } from '../event-json.js';
import { recordAttempt } from './attempt-record.js';
import { collectBatch, conditionFailureText, passOver } from './collect.js';
import { ReadAhead, type Owed } from './read-ahead.js';
import type { Flight, SendLoop } from './send-loop.js';

/** One delivery ready to leave: its events, where a success leaves the cursor, the receiver call. */
export interface Prepared {
  ctx: Omit<DeliveryContext, 'signal'>;
  delivered: DeliveredEvent[];
  /** The cursor the delivery was read after; a delivery prepared ahead is used only from there. */
  cursorBefore: number;
  cursorAfter: number;
  bytes: number;
  /** The call with its per-call work done, when the receiver prepares calls (webhooks). */
  call: PreparedCall | undefined;
}

/** The most events one delivery carries: an itx-call or a copy batch (a webhook carries one). */
export const MAX_BATCH_EVENTS = 1000;
/**
 * The most events one copy batch carries (protocol §12.3): as many as an itx-call batch again,
 * since a copy allocates less; it was 500 for a while (docs/architecture.md "Copy batches and V8's
 * young generation"). The backlog threshold follows it (written-through.ts BACKLOG_OFFSETS).
 */
export const COPY_BATCH_EVENTS = MAX_BATCH_EVENTS;
const MAX_BATCH_BYTES = 1_048_576;

/** The most events a delivery of this subscription carries when it is not isolating a failure. */
function batchEvents(entry: OutboundEntry): number {
  const action = entry.configuration.receiver.action;
  return action === 'webhook-post' ? 1 : action === 'copy-to-stream' ? COPY_BATCH_EVENTS : MAX_BATCH_EVENTS;
}

const preparing = (receiver: Receiver | undefined): receiver is PreparingReceiver =>
  receiver !== undefined && typeof (receiver as Partial<PreparingReceiver>).prepare === 'function';

function transformOf(entry: OutboundEntry): string | undefined {
  const receiver = entry.configuration.receiver;
  return 'jsonataTransform' in receiver ? receiver.jsonataTransform : undefined;
}

/** One event after the subscription's transform, within the budget; throws as the transform does (protocol §12.3). */
export function shapeFor(entry: OutboundEntry, event: CommittedEvent, budget: ExpressionBudget): Promise<ShapedEvent> {
  return shapeEvent(transformOf(entry), event, budget);
}

/** The error of an ordered failure whose transform threw (lastError, the dry run). */
export function transformFailureText(offset: number, error: unknown): string {
  return `jsonataTransform failed on offset ${offset}: ${errorText(error)}`;
}

/** Webhooks carry one event per call and read ahead, except while a failure isolates the event. */
export function readsAhead(entry: OutboundEntry, row: SubscriptionRow): boolean {
  return entry.configuration.receiver.action === 'webhook-post' && !row.isolate;
}

/** An event delivered without a transform: the shaped event is the event's own fields (`text`: its stored JSON, when it does not carry it; collect.ts). */
function deliveredAsStored(event: CommittedEvent, text: string | undefined): DeliveredEvent {
  const delivered: DeliveredEvent = { event, shaped: unshaped(event) };
  const fieldsJson = storedFieldsJson(event, text);
  if (fieldsJson !== undefined) delivered.fieldsJson = fieldsJson;
  return delivered;
}

/** What was owed, delivered without a transform: each event with the stored text handed over beside it, if any. */
function allAsStored({ events, texts }: { events: readonly CommittedEvent[]; texts?: readonly string[] }): DeliveredEvent[] {
  const delivered: DeliveredEvent[] = [];
  for (let i = 0; i < events.length; i++) delivered.push(deliveredAsStored(events[i]!, texts?.[i]));
  return delivered;
}

/**
 * The UTF-8 bytes of `JSON.stringify(d.shaped)` (a delivery's size, protocol §11 `bytesSent`),
 * measured on the stored text when there is one: `{"type":…` then the payload and metadata
 * members, then `}`.
 */
export function shapedLength(d: DeliveredEvent): number {
  if (d.fieldsJson === undefined) return utf8Length(JSON.stringify(d.shaped));
  return TYPE_MEMBER + utf8Length(JSON.stringify(d.shaped.type)) + utf8Length(d.fieldsJson) + 1;
}

const TYPE_MEMBER = '{"type":'.length;

export class DeliveryPreparer {
  private readonly readAhead: ReadAhead;
  /** Events of the source read by receivers (the run's configure event): immutable per lifetime. */
  private readonly sourceEvents = new Map<string, CommittedEvent>();

  constructor(private readonly loop: SendLoop) {
    this.readAhead = new ReadAhead(loop.actor);
  }

  /** Forgets what was read ahead for keys that are no longer configured (all keys without `configured`). */
  retain(configured?: (key: string) => boolean): void {
    if (configured) this.readAhead.retain(configured);
    else this.readAhead.clear();
  }

  /**
   * Reads what `key` owes after its cursor and shapes it, or settles what needs no call: nothing
   * owed (the cursor moves past what was scanned), a condition or a transform that threw.
   */
  async prepare(key: string, entry: OutboundEntry, row: SubscriptionRow, flight: Flight): Promise<Prepared | undefined> {
    const { actor, failures } = this.loop;
    const collected: Owed = readsAhead(entry, row)
      ? await this.readAhead.next(key, flight.run, entry, row.cursor)
      : await collectBatch(actor, entry, row.cursor, { maxEvents: row.isolate ? 1 : batchEvents(entry), maxBytes: MAX_BATCH_BYTES, scanRows: 1000, head: this.loop.headFor(entry) });
    const current = this.loop.current(key, flight);
    if (!current) return undefined;
    if (collected.kind === 'none') {
      // With copies still waiting for durability, the cursor passes these events when they are durable.
      if (!this.loop.writtenThrough.passed(key, flight.run, collected.scannedTo)) passOver(actor, (r) => this.loop.write(r), current, collected.scannedTo);
      return undefined;
    }
    if (collected.kind === 'condition-error' && collected.events.length === 0) {
      const offset = collected.failingOffset;
      const error = conditionFailureText(offset, collected.error);
      recordAttempt(this.loop, key, current, { startedMs: this.loop.clock.now(), attempt: row.attempt + 1, fromOffset: offset, toOffset: offset, outcome: 'failed', error, durationMs: 0 });
      await failures.conditionFailed(key, entry, flight, row, collected.failingOffset, collected.error);
      return undefined;
    }
    if (transformOf(entry) === undefined) {
      // Nothing to shape: the events go as they are, with the stored text of what they carry.
      const delivered = allAsStored(collected);
      const last = delivered[delivered.length - 1]!.event.offset;
      return this.prepared(key, entry, row.cursor, collected.kind === 'events' ? collected.scannedTo : last, row.attempt + 1, delivered);
    }
    const delivered: DeliveredEvent[] = [];
    for (const event of collected.events) {
      try {
        delivered.push({ event, shaped: await shapeFor(entry, event, actor.expressionBudget) });
      } catch (error) {
        if (delivered.length > 0) break;
        const at = this.loop.clock.now();
        recordAttempt(this.loop, key, current, { startedMs: at, attempt: row.attempt + 1, fromOffset: event.offset, toOffset: event.offset, outcome: 'failed', error: transformFailureText(event.offset, error), durationMs: 0 });
        await failures.failed(key, entry, flight, { kind: 'failing', batchSize: 1, firstOffset: event.offset }, transformFailureText(event.offset, error));
        return undefined;
      }
    }
    const complete = collected.kind === 'events' && delivered.length === collected.events.length;
    const last = delivered[delivered.length - 1]!.event.offset;
    return this.prepared(key, entry, row.cursor, complete ? collected.scannedTo : last, row.attempt + 1, delivered);
  }

  /**
   * The delivery after `cursor`, prepared while the one before it is under way: a webhook (one
   * event, through read-ahead.ts) while its POST is in flight, a copy batch while the receiving
   * stream commits and syncs the batch before (a copy's call waits for that sync; reading meanwhile
   * uses the core the sync leaves idle). It settles nothing: undefined whenever anything is unusual
   * (nothing owed yet, a condition or transform that throws, the run changed), and the next
   * delivery then prepares itself and settles that on its own. The sender uses it only after the
   * delivery before succeeded and left the cursor exactly at `cursor` (sender.ts), so nothing is
   * sent twice or out of order.
   */
  async ahead(key: string, entry: OutboundEntry, flight: Flight, cursor: number): Promise<Prepared | undefined> {
    try {
      const { actor } = this.loop;
      const head = this.loop.headFor(entry);
      if (cursor >= head) return undefined;
      const owed: Owed =
        entry.configuration.receiver.action === 'webhook-post'
          ? await this.readAhead.next(key, flight.run, entry, cursor)
          : await collectBatch(actor, entry, cursor, { maxEvents: batchEvents(entry), maxBytes: MAX_BATCH_BYTES, scanRows: 1000, head });
      if (owed.kind !== 'events' || !this.loop.current(key, flight)) return undefined;
      let delivered: DeliveredEvent[] = [];
      if (transformOf(entry) === undefined) delivered = allAsStored(owed);
      else for (const event of owed.events) delivered.push({ event, shaped: await shapeFor(entry, event, actor.expressionBudget) });
      return this.prepared(key, entry, cursor, owed.scannedTo, 1, delivered);
    } catch {
      return undefined;
    }
  }

  /**
   * The next copy batch, read while the receiving stream commits and syncs this one: on the next
   * timer tick (after pending I/O), so that the receiving stream's group commit, scheduled by the
   * call, runs first and the read overlaps its sync instead of delaying it (docs/performance.md
   * "The next copy batch is read during the sync").
   */
  copyAhead(key: string, entry: OutboundEntry, flight: Flight, cursor: number): Promise<Prepared | undefined> {
    return new Promise((resolve) => {
      this.loop.timer.set(0, () => resolve(this.ahead(key, entry, flight, cursor)));
    });
  }

  private prepared(key: string, entry: OutboundEntry, cursorBefore: number, cursorAfter: number, attempt: number, delivered: DeliveredEvent[]): Prepared | undefined {
    const { actor } = this.loop;
    const state = actor.coreState;
    const row = actor.subscriptions.get(key);
    if (!state || !row) return undefined;
    const generation = runGeneration(row);
    const first = delivered[0]!.event.offset;
    const last = delivered[delivered.length - 1]!.event.offset;
    const ctx: Omit<DeliveryContext, 'signal'> = {
      projectId: actor.projectId,
      path: actor.path,
      streamId: state.streamId,
      streamCreatedAt: state.createdAt,
      subscriptionKey: key,
      cursorChangedAtSourceOffset: generation,
      deliveryId: `delivery:${JSON.stringify([state.streamId, key, generation, first, last])}`,
      attempt,
      streamMaxOffset: actor.durableHead,
      entry,
      sourceEvent: (offset) => this.sourceEvent(state.streamId, offset),
    };
    const receiver = this.loop.receivers[entry.configuration.receiver.action];
    let bytes = 0;
    for (const d of delivered) bytes += shapedLength(d);
    return { ctx, delivered, cursorBefore, cursorAfter, bytes, call: preparing(receiver) ? receiver.prepare(ctx, delivered) : undefined };
  }

  private sourceEvent(streamId: string, offset: number): CommittedEvent | undefined {
    const key = `${streamId}:${offset}`;
    let event = this.sourceEvents.get(key);
    if (!event) {
      event = this.loop.actor.read({ afterOffset: offset - 1, limit: 1, includeEphemeral: false }).events.find((e) => e.offset === offset);
      if (!event) return undefined;
      // Its text rides along, so that each webhook body splices it in (receivers/webhook-body.ts).
      rememberJson(event, committedJson(event));
      if (this.sourceEvents.size >= 64) this.sourceEvents.delete(this.sourceEvents.keys().next().value as string);
      this.sourceEvents.set(key, event);
    }
    return event;
  }
}
