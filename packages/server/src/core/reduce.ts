/**
 * The core reducer: a pure (state, event) → state fold. Time comes from event.createdAt, never a
 * clock, so replaying the log rebuilds the state exactly (protocol §10.1).
 *
 * - Ephemeral events are never folded (§4.4); callers do not pass them.
 * - A copied event (one carrying source.copiedFrom) is data: it changes nothing but the inbound
 *   fence record of its last hop (§3.5, §10.3), even when its type is a stream/* control type.
 * - Subscription reducers ignore unknown keys (§9.8); commands reject them before appending.
 * - Branches that change are copied; the rest is shared with the previous state.
 */
import {
  EventType,
  GENERATED_KEY_PREFIX,
  Limits,
  type CommittedEvent,
  type CopyHop,
  type CoreState,
  type EffectiveSubscriptionConfiguration,
  type InboundRecord,
  type OutboundEntry,
  type SubscriptionConfiguredPayload,
} from '@rivulet/contract';
import { initialState } from './state.js';
import { compareStamps, sameLifetime } from './stamps.js';

type Payload = Record<string, unknown>;

export function reduce(state: CoreState | null, event: CommittedEvent): CoreState {
  if (state === null) {
    if (event.type !== EventType.created || event.source) {
      throw new Error(`a stream's first event must be ${EventType.created}, got ${event.type} at ${event.offset}`);
    }
    const p = event.payload as { projectId: string | null; streamId: string; path: string };
    state = initialState({ projectId: p.projectId, path: event.path, streamId: p.streamId, createdAt: event.createdAt });
  }
  if (event.ephemeral) return state;
  const next = counted(state, event.offset);
  const hops = event.source?.copiedFrom;
  if (hops && hops.length > 0) return foldInbound(next, hops[hops.length - 1]!, event.createdAt);

  const payload = (event.payload ?? {}) as Payload;
  switch (event.type) {
    case EventType.paused:
      return { ...next, paused: true, pauseReason: typeof payload.reason === 'string' ? payload.reason : null };
    case EventType.resumed:
      return { ...next, paused: false, pauseReason: null };
    case EventType.subscriptionConfigured:
      return foldConfigured(next, event, payload as unknown as SubscriptionConfiguredPayload);
    case EventType.subscriptionRemoved:
      return updateOutbound(next, payload.subscriptionKey, () => undefined);
    case EventType.subscriptionCursorSet:
      return updateOutbound(next, payload.subscriptionKey, (entry) => ({
        ...entry,
        cursorSet: { afterOffset: payload.afterOffset as number, setAtSourceOffset: event.offset },
      }));
    case EventType.subscriptionDeliveryHalted:
      return updateOutbound(next, payload.subscriptionKey, (entry) => ({
        ...entry,
        deliveryHalted: {
          reason: 'delivery-failed',
          afterOffset: payload.afterOffset as number,
          attempts: payload.attempts as number,
          ...(typeof payload.error === 'string' ? { error: payload.error } : {}),
        },
      }));
    case EventType.subscriptionDeliveryResumed:
      return updateOutbound(next, payload.subscriptionKey, (entry) => {
        const { deliveryHalted: _halted, ...rest } = entry;
        return rest;
      });
    default:
      return next;
  }
}

/** The event types `reduce` folds into more than the counters (its switch; a test holds the two together). */
export const FOLDED_TYPES: ReadonlySet<string> = new Set([
  EventType.created,
  EventType.paused,
  EventType.resumed,
  EventType.subscriptionConfigured,
  EventType.subscriptionRemoved,
  EventType.subscriptionCursorSet,
  EventType.subscriptionDeliveryHalted,
  EventType.subscriptionDeliveryResumed,
]);

/**
 * `reduce` over the events of one decision, one at a time, with the same answer as folding them
 * with `reduce` (reduce-fold.test.ts compares the two on generated runs). What a step of the fold
 * made is seen by nobody but the next step until `state` is read at the end, so where the next
 * step would only copy it with its counters raised (an event of no folded type), or with the same
 * inbound record one event further on (a copy of the same run, as a copy batch is), it is changed
 * in place instead of copied: a copy batch of 500 made 500 states of seven objects each
 * (docs/performance.md "A decision folds its own states in place"). The state the fold starts
 * from, and every branch it shares with it, is never changed.
 */
export class StateFold {
  /** The state made by the last step, and the inbound record it made; changed in place by the next step. */
  private own: CoreState | null = null;
  private ownRecord: InboundRecord | undefined;

  constructor(public state: CoreState | null) {}

  add(event: CommittedEvent): void {
    if (event.ephemeral) return;
    const state = this.state;
    const hops = event.source?.copiedFrom;
    const hop = hops !== undefined && hops.length > 0 ? hops[hops.length - 1]! : undefined;
    if (state !== null && state === this.own) {
      if (hop === undefined) {
        if (!FOLDED_TYPES.has(event.type)) {
          state.eventCount++;
          state.maxOffset = event.offset;
          return;
        }
      } else {
        const record = inboundRecord(state, hop);
        if (record !== undefined && record === this.ownRecord && compareStamps(hop, record) === 0 && sameLifetime(hop, record)) {
          state.eventCount++;
          state.maxOffset = event.offset;
          record.numEventsReceived++;
          record.lastEventReceivedAt = event.createdAt;
          return;
        }
      }
    }
    const next = reduce(state, event);
    // A record is this step's own only when reduce made it (it is not the one the state had).
    const record = hop === undefined ? undefined : inboundRecord(next, hop);
    this.ownRecord = record !== undefined && (state === null || record !== inboundRecord(state, hop!)) ? record : undefined;
    this.own = next;
    this.state = next;
  }
}

/** The inbound record a copy's last hop names in `state`, if there is one. */
function inboundRecord(state: CoreState, hop: CopyHop): InboundRecord | undefined {
  return state.subscriptions.inbound.bySourcePath[hop.path]?.[hop.subscriptionKey];
}

/** The state with one more durable event folded at `offset`. */
export function counted(state: CoreState, offset: number): CoreState {
  return rebuilt(state, state.eventCount + 1, offset, state.subscriptions);
}

/**
 * A copy of the state with its counters and subscriptions replaced. Written as a literal, not
 * `{ ...state, … }`: V8 in Node 20 takes ~500 ns for an object spread followed by overrides and
 * ~12 ns for the literal, and this runs for every event (docs/performance.md "The reducer copies
 * its state with a literal" has the gain on 100-event batches). It names every key of CoreState; a
 * test compares `counted` with the spread, key for key.
 */
function rebuilt(state: CoreState, eventCount: number, maxOffset: number, subscriptions: CoreState['subscriptions']): CoreState {
  return {
    projectId: state.projectId,
    path: state.path,
    streamId: state.streamId,
    createdAt: state.createdAt,
    eventCount,
    maxOffset,
    paused: state.paused,
    pauseReason: state.pauseReason,
    subscriptions,
  };
}

/** The effective key of a configure event (protocol §9.2). */
export function effectiveKey(payload: { subscriptionKey?: string | undefined }, offset: number): string {
  return payload.subscriptionKey ?? `${GENERATED_KEY_PREFIX}${offset}`;
}

function foldConfigured(state: CoreState, event: CommittedEvent, payload: SubscriptionConfiguredPayload): CoreState {
  const key = effectiveKey(payload, event.offset);
  const previous = state.subscriptions.outbound.byKey[key];
  const generated =
    payload.subscriptionKey === undefined ||
    (key.startsWith(GENERATED_KEY_PREFIX) && previous?.subscriptionKeyWasGenerated === true);
  const configuration = { ...payload, subscriptionKey: key } as EffectiveSubscriptionConfiguration;
  const entry: OutboundEntry = {
    configuration,
    configuredAtOffset: event.offset,
    configuredAt: event.createdAt,
    ...(generated ? { subscriptionKeyWasGenerated: true as const } : {}),
  };
  return withOutbound(state, { ...state.subscriptions.outbound.byKey, [key]: entry });
}

function updateOutbound(
  state: CoreState,
  key: unknown,
  change: (entry: OutboundEntry) => OutboundEntry | undefined,
): CoreState {
  if (typeof key !== 'string') return state;
  const byKey = state.subscriptions.outbound.byKey;
  const entry = byKey[key];
  if (!entry) return state;
  const changed = change(entry);
  const nextByKey = { ...byKey };
  if (changed) nextByKey[key] = changed;
  else delete nextByKey[key];
  return withOutbound(state, nextByKey);
}

function withOutbound(state: CoreState, byKey: Record<string, OutboundEntry>): CoreState {
  return rebuilt(state, state.eventCount, state.maxOffset, { inbound: state.subscriptions.inbound, outbound: { byKey } });
}

function foldInbound(state: CoreState, hop: CopyHop, receivedAt: string): CoreState {
  const bySourcePath = state.subscriptions.inbound.bySourcePath;
  const forPath = bySourcePath[hop.path] ?? {};
  const previous = forPath[hop.subscriptionKey];
  if (previous && compareStamps(hop, previous) < 0) return state;
  const record: InboundRecord = {
    streamId: hop.streamId,
    streamCreatedAt: hop.streamCreatedAt,
    cursorChangedAtSourceOffset: hop.cursorChangedAtSourceOffset,
    numEventsReceived: previous && sameLifetime(previous, hop) ? previous.numEventsReceived + 1 : 1,
    lastEventReceivedAt: receivedAt,
  };
  let nextBySourcePath = { ...bySourcePath, [hop.path]: { ...forPath, [hop.subscriptionKey]: record } };
  if (!previous) nextBySourcePath = evictOldestInbound(nextBySourcePath, hop.path, hop.subscriptionKey);
  return rebuilt(state, state.eventCount, state.maxOffset, { inbound: { bySourcePath: nextBySourcePath }, outbound: state.subscriptions.outbound });
}

/** At most Limits.inboundRecordsMax records per receiver; the least recently received goes (protocol §10.3). */
function evictOldestInbound(
  bySourcePath: Record<string, Record<string, InboundRecord>>,
  keepPath: string,
  keepKey: string,
): Record<string, Record<string, InboundRecord>> {
  let count = 0;
  let oldest: { path: string; key: string; at: string } | undefined;
  for (const [path, byKey] of Object.entries(bySourcePath)) {
    for (const [key, record] of Object.entries(byKey)) {
      count++;
      // The record just received is never the one evicted (its fence is the one in use).
      if (path === keepPath && key === keepKey) continue;
      const at = record.lastEventReceivedAt ?? '';
      if (!oldest || at < oldest.at || (at === oldest.at && (path < oldest.path || (path === oldest.path && key < oldest.key)))) {
        oldest = { path, key, at };
      }
    }
  }
  if (count <= Limits.inboundRecordsMax || !oldest) return bySourcePath;
  const forPath = { ...bySourcePath[oldest.path] };
  delete forPath[oldest.key];
  const next = { ...bySourcePath, [oldest.path]: forPath };
  if (Object.keys(forPath).length === 0) delete next[oldest.path];
  return next;
}
