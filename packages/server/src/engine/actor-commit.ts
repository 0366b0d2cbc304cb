/**
 * The commit step of an append (protocol §4.1): the rows, the streams-row
 * checkpoint, the ephemeral prune and the subscription rows of one decision written in one
 * transaction, and the actor's in-memory copy brought to the decision. Deciding happens before
 * (core/decide-append.ts), publishing after durability (actor.ts).
 */
import type { CoreState } from '@rivulet/contract';
import type { AppendDecision } from '../core/decide-append.js';
import type { EngineConfig } from './config.js';
import { rememberJson } from './event-json.js';
import type { StreamStore } from './stream-store.js';
import type { SubscriptionRuntime } from './subscription-runtime.js';

/** What the actor keeps of its stream between appends (reloaded when the storage epoch changes). */
export interface Loaded {
  epoch: number;
  sid: number | null;
  state: CoreState | null;
  stateBytes: number;
  head: number;
  /** The head saved in the streams row (its checkpoint, StreamStore.find). */
  checkpoint: number;
  lastCreatedMs: number;
  lastPruneMs: number;
  subscriptions: SubscriptionRuntime;
}

const PRUNE_INTERVAL_MS = 10_000;
const SINGLE_WRITE = { singleWrite: true } as const;

// createdAt of the last millisecond asked for: the appends of one millisecond (a group commit's
// worth) share one Date and one toISOString.
let isoMs = Number.NaN;
let isoText = '';
export function isoAt(ms: number): string {
  if (ms !== isoMs) {
    isoText = new Date(ms).toISOString();
    isoMs = ms;
  }
  return isoText;
}

/** Writes a decision with fresh events in one transaction and updates `loaded` to it. */
export function writeDecision(
  store: StreamStore,
  config: EngineConfig,
  projectId: string | null,
  path: string,
  loaded: Loaded,
  decision: AppendDecision,
  nowMs: number,
): void {
  const prune = nowMs - loaded.lastPruneMs >= PRUNE_INTERVAL_MS;
  // The streams row is a checkpoint (schema.ts): an append that changes only the counters
  // leaves it until it is checkpointEvery behind. A prune deletes events, so it saves the
  // checkpoint at the new head first: the head is derived from the rows above it.
  const saveHead = decision.stateJson !== null || prune || decision.head - loaded.checkpoint >= store.checkpointEvery;
  const repair = decision.state.subscriptions.outbound !== loaded.state?.subscriptions.outbound;
  // The common append (one event, an existing stream, nothing else due) is one INSERT, which
  // undoes itself if it fails: the storage may skip the savepoint of a group member.
  const singleWrite = loaded.sid !== null && decision.fresh.length === 1 && !saveHead && !prune && !repair;
  store.storage.transaction(
    () => {
      let sid = loaded.sid;
      if (sid === null) {
        const created = decision.fresh[0]!.event;
        sid = store.create(projectId, path, (created.payload as { streamId: string }).streamId, created.createdAt);
      }
      for (const { event, json } of decision.fresh) {
        store.insertEvent(sid, {
          offset: event.offset,
          type: event.type,
          ephemeral: event.ephemeral === true,
          idempotencyKey: event.idempotencyKey,
          createdMs: nowMs,
          json,
        });
      }
      if (saveHead) store.saveHead(sid, decision.head, decision.state, decision.stateJson);
      if (prune) store.pruneEphemeral(sid, nowMs - config.ephemeralRetentionMs, config.ephemeralRetentionCount, decision.head);
      if (repair) loaded.subscriptions.repair(decision.state, sid);
      loaded.sid = sid;
    },
    singleWrite ? SINGLE_WRITE : undefined,
  );
  for (const { event, json } of decision.fresh) rememberJson(event, json);
  loaded.state = decision.state;
  loaded.stateBytes = decision.stateBytes;
  loaded.head = decision.head;
  if (saveHead) loaded.checkpoint = decision.head;
  if (prune) loaded.lastPruneMs = nowMs;
  loaded.lastCreatedMs = nowMs;
}
