/**
 * Reading what a subscription owes (protocol §12.3): events after the cursor, never ephemeral,
 * without drop audits and connection facts for copies, filtered in order — event types in SQL,
 * then the JSONata condition. Non-matching events are skipped, not deferred: the scan position
 * moves past them. A condition that throws ends the batch there: the healthy prefix is delivered,
 * and the throwing event becomes an ordered failure.
 */
import type { CommittedEvent, OutboundEntry } from '@rivulet/contract';
import { conditionMatches, excludedFromCopy, typeMatches } from '../../core/filter.js';
import type { ExpressionBudget } from '../../core/expression-budget.js';
import { JsonataError } from '../../core/jsonata.js';
import type { SubscriptionRow } from '../../core/repair.js';
import { utf8Length } from '../../core/sizes.js';
import type { StreamActor } from '../actor.js';
import { rememberJson } from '../event-json.js';

export interface CollectLimits {
  maxEvents: number;
  /** UTF-8 bytes of the events' stored JSON at most (the first event always goes). */
  maxBytes: number;
  /** Rows read per round at most. */
  scanRows: number;
  /** Read up to this offset (default: the durable head; SendLoop.headFor). */
  head?: number;
}

/**
 * `texts` are the events' stored JSON texts, one per event. The events of a copy subscription read
 * with SQL do not carry theirs (engine/event-json.ts): a copy batch needs each text once, to cut
 * its payload and metadata out, and attaching it to the event costs more than that.
 */
export type Collected =
  | { kind: 'events'; events: CommittedEvent[]; texts: string[]; bytes: number; scannedTo: number }
  | { kind: 'none'; scannedTo: number }
  | { kind: 'condition-error'; events: CommittedEvent[]; texts: string[]; bytes: number; failingOffset: number; error: string };

/** What judging an event answers: deliver it, pass over it, or the error its condition threw. */
export type Judgement = 'skip' | 'match' | { error: string };

/**
 * Whether a subscription delivers one durable event (protocol §12.3): its type, the copy
 * exclusions, then the JSONata condition; a condition that throws answers its error. Delivery
 * (collectBatch) and the dry run (preview.ts) judge every event here.
 */
export async function judgeEvent(
  entry: OutboundEntry,
  event: CommittedEvent,
  budget: ExpressionBudget,
): Promise<Judgement> {
  return skippedBeforeCondition(entry, event) ? 'skip' : judgeCondition(entry, event, budget);
}

/** The JSONata condition's part of judgeEvent, for an event its type and exclusions let through. */
async function judgeCondition(entry: OutboundEntry, event: CommittedEvent, budget: ExpressionBudget): Promise<Judgement> {
  try {
    return (await conditionMatches(entry.configuration.filter, event, budget)) ? 'match' : 'skip';
  } catch (error) {
    return { error: error instanceof JsonataError ? error.message : String(error) };
  }
}

/** The part of judgeEvent that needs no expression: the event's type and the copy exclusions. */
function skippedBeforeCondition(entry: OutboundEntry, event: CommittedEvent): boolean {
  if (!typeMatches(entry.configuration.filter, event.type)) return true;
  return entry.configuration.receiver.action === 'copy-to-stream' && excludedFromCopy(event);
}

/** The error of an ordered failure whose condition threw (lastError, the audit, the dry run). */
export function conditionFailureText(offset: number, error: string): string {
  return `filter.jsonataCondition threw on offset ${offset}: ${error}`;
}

/** A row to judge: read with SQL (parsed when judged), or an event held since it was written. */
interface Row {
  json: string;
  event?: CommittedEvent;
}

export async function collectBatch(
  actor: StreamActor,
  entry: OutboundEntry,
  cursor: number,
  limits: CollectLimits,
): Promise<Collected> {
  const sid = actor.sid;
  const head = limits.head ?? actor.durableHead;
  if (sid === null || cursor >= head) return { kind: 'none', scannedTo: cursor };
  const filter = entry.configuration.filter;
  const withCondition = Boolean(filter?.jsonataCondition);
  const copying = entry.configuration.receiver.action === 'copy-to-stream';
  const events: CommittedEvent[] = [];
  const texts: string[] = [];
  let bytes = 0;
  let scannedTo = cursor;
  let scanned = 0;
  // Pages start at about the batch size (a webhook needs one event, not a thousand rows read and
  // parsed) and double while filters keep passing rows over, up to scanRows per round.
  let pageSize = Math.min(limits.scanRows, limits.maxEvents + 1);
  // Events just written come from memory when all of (cursor, head] is held (docs/architecture.md
  // "Events just written"), else from SQL.
  const written = actor.writtenEvents(cursor, head);
  for (;;) {
    const rows: readonly Row[] =
      written ??
      actor.store.events.range(sid, {
        afterOffset: scannedTo,
        beforeOffset: head + 1,
        limit: pageSize,
        includeEphemeral: false,
        eventTypes: filter?.eventTypes,
      });
    for (const row of rows) {
      let event = row.event;
      if (event === undefined) {
        event = JSON.parse(row.json) as CommittedEvent;
        if (!copying) rememberJson(event, row.json);
      } else if (event.ephemeral === true) continue; // never delivered: the SQL read leaves them out
      // judgeEvent in two steps, so that without a condition no promise is made and awaited per event.
      let judged: Judgement = skippedBeforeCondition(entry, event) ? 'skip' : 'match';
      if (judged === 'match' && withCondition) judged = await judgeCondition(entry, event, actor.expressionBudget);
      if (typeof judged === 'object') return { kind: 'condition-error', events, texts, bytes, failingOffset: event.offset, error: judged.error };
      if (judged === 'match') {
        // UTF-8 bytes, as every size limit counts (protocol §1.1, §12.3).
        const size = utf8Length(row.json);
        if (events.length > 0 && bytes + size > limits.maxBytes) {
          return { kind: 'events', events, texts, bytes, scannedTo };
        }
        events.push(event);
        texts.push(row.json);
        bytes += size;
      }
      scannedTo = event.offset;
      if (events.length >= limits.maxEvents || bytes >= limits.maxBytes) return { kind: 'events', events, texts, bytes, scannedTo };
    }
    scanned += rows.length;
    // All of the range held in memory, or fewer rows than asked: everything up to the head has been
    // seen (what is left is ephemeral, filtered out by type, or not there).
    if (written !== undefined || rows.length < pageSize) {
      scannedTo = head;
      break;
    }
    if (scanned >= limits.scanRows) break;
    pageSize = Math.min(pageSize * 2, limits.scanRows - scanned);
  }
  if (events.length === 0) return { kind: 'none', scannedTo };
  return { kind: 'events', events, texts, bytes, scannedTo };
}

/**
 * A read that owes nothing up to `scannedTo`: the cursor passes the non-matching events (protocol
 * §12.3) — quietly, unless a watchdog is stored, which is cleared with it through `write`.
 */
export function passOver(actor: StreamActor, write: (row: SubscriptionRow) => void, row: SubscriptionRow, scannedTo: number): void {
  const cursor = Math.max(row.cursor, scannedTo);
  if (row.inflightDeadlineAt !== null) write({ ...row, cursor, inflightDeadlineAt: null });
  else if (cursor !== row.cursor) actor.subscriptions.advanceQuietly(row, cursor);
}
