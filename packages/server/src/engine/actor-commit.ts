/**
 * The commit step of an append (protocol §4.1): the rows, the streams-row
 * checkpoint, the ephemeral prune and the subscription rows of one decision written in one
 * transaction, and the actor's in-memory copy brought to the decision. Deciding happens before
 * (core/decide-append.ts), publishing after durability (actor.ts).
 */
import { RivuletError, type CommittedEvent, type CoreState } from '@rivulet/contract';
import type { AppendInput, Authority } from '../core/append-input.js';
import { decideAppend, type AppendDecision } from '../core/decide-append.js';
import type { EngineConfig } from './config.js';
import type { EventRowInput } from './event-rows.js';
import { rememberJson } from './event-json.js';
import type { StreamStore } from './stream-store.js';
import type { SubscriptionRuntime } from './subscription-runtime.js';
import { WrittenEvents } from './written-events.js';

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
  /** The last events written, held while the stream has outbound subscriptions and its sender may want them (written-events.ts). */
  written: WrittenEvents | undefined;
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

/** Thrown inside the transaction of an optimistic write whose key is stored: undoes what it wrote. */
class KeyStored extends Error {}

/**
 * Writes a decision with fresh events in one transaction and updates `loaded` to it.
 *
 * `keysUnchecked`: the decision was made without looking its idempotency keys up (every key taken
 * for new, docs/architecture.md "Storage"), so each keyed row is inserted only if its key is not
 * stored in the stream. If one is, nothing of the decision is written, `loaded` is left as it was,
 * and the answer is false: the caller decides again against the stored keys. Otherwise (and always
 * without `keysUnchecked`) the answer is true.
 */
export function writeDecision(
  store: StreamStore,
  config: EngineConfig,
  projectId: string | null,
  path: string,
  loaded: Loaded,
  decision: AppendDecision,
  nowMs: number,
  keysUnchecked = false,
): boolean {
  const prune = nowMs - loaded.lastPruneMs >= PRUNE_INTERVAL_MS;
  // The streams row is a checkpoint (schema.ts): an append that changes only the counters
  // leaves it until it is checkpointEvery behind. A prune deletes events, so it saves the
  // checkpoint at the new head first: the head is derived from the rows above it.
  const saveHead = decision.stateJson !== null || prune || decision.head - loaded.checkpoint >= store.checkpointEvery;
  const repair = decision.state.subscriptions.outbound !== loaded.state?.subscriptions.outbound;
  // The common append (one event, an existing stream, nothing else due) is one INSERT, which
  // undoes itself if it fails: the storage may skip the savepoint of a group member.
  // (A copy is never one: it changes its inbound record, so its decision saves the state, and its
  // key's claim is a write of its own, copy-claims.ts.)
  const singleWrite = loaded.sid !== null && decision.fresh.length === 1 && !saveHead && !prune && !repair;
  let written: boolean;
  try {
    written = store.storage.transaction(
      () => {
        let sid = loaded.sid;
        if (sid === null) {
          const created = decision.fresh[0]!.event;
          sid = store.create(projectId, path, (created.payload as { streamId: string }).streamId, created.createdAt);
        }
        const rows = decision.fresh.map((fresh) => ({
          offset: fresh.event.offset,
          type: fresh.event.type,
          ephemeral: fresh.event.ephemeral === true,
          idempotencyKey: fresh.event.idempotencyKey,
          createdMs: nowMs,
          json: fresh.json,
          stored: fresh.parts === undefined ? undefined : (fresh as EventRowInput['stored']),
        }));
        if (!keysUnchecked) store.events.insertAll(sid, rows);
        else if (!store.events.insertIfNewKeys(sid, rows)) {
          // A single write that did nothing has nothing to undo (and a singleWrite transaction
          // must not fail after its write, TransactionOptions); anything else is undone.
          if (singleWrite) return false;
          throw new KeyStored();
        }
        if (saveHead) store.saveHead(sid, decision.head, decision.state, decision.stateJson);
        if (prune) store.events.pruneEphemeral(sid, nowMs - config.ephemeralRetentionMs, config.ephemeralRetentionCount, decision.head);
        if (repair) loaded.subscriptions.repair(decision.state, sid);
        loaded.sid = sid;
        return true;
      },
      singleWrite ? SINGLE_WRITE : undefined,
    );
  } catch (error) {
    if (!(error instanceof KeyStored)) throw error;
    written = false;
  }
  if (!written) return false;
  for (const { event, json } of decision.fresh) rememberJson(event, json);
  // A commit that changes the subscriptions is not held: its sender starts over from their rows.
  if (loaded.subscriptions.size > 0 && !repair) (loaded.written ??= new WrittenEvents()).add(decision.fresh);
  else loaded.written = undefined;
  loaded.state = decision.state;
  loaded.stateBytes = decision.stateBytes;
  loaded.head = decision.head;
  if (saveHead) loaded.checkpoint = decision.head;
  if (prune) loaded.lastPruneMs = nowMs;
  loaded.lastCreatedMs = nowMs;
  return true;
}

/** What deciding and writing an append needs of its actor (made once per actor). */
export interface CommitContext {
  store: StreamStore;
  config: EngineConfig;
  projectId: string | null;
  path: string;
  newStreamId(): string;
  lookupIdempotent(key: string): CommittedEvent | undefined;
  normalizeControl(input: AppendInput): AppendInput;
  checkControl(input: AppendInput, state: CoreState, head: number): void;
}

const assumeNew = (): undefined => undefined;

function hasKey(inputs: readonly AppendInput[]): boolean {
  for (let i = 0; i < inputs.length; i++) if (inputs[i]!.idempotencyKey !== undefined) return true;
  return false;
}

function decide(ctx: CommitContext, loaded: Loaded, inputs: readonly AppendInput[], authority: Authority, nowMs: number, lookupIdempotent: CommitContext['lookupIdempotent']): AppendDecision {
  const { config } = ctx;
  return decideAppend(
    {
      projectId: ctx.projectId,
      path: ctx.path,
      state: loaded.state,
      stateBytes: loaded.stateBytes,
      head: loaded.head,
      now: isoAt(nowMs),
      authority,
      maxEventBytes: config.maxEventBytes,
      maxCoreStateBytes: config.maxCoreStateBytes,
      newStreamId: ctx.newStreamId,
      lookupIdempotent,
      normalizeControl: ctx.normalizeControl,
      checkControl: ctx.checkControl,
    },
    inputs,
  );
}

/**
 * Decides an append and writes it (the actor's synchronous section, minus loading); throws the
 * decision's typed rejection, having written nothing.
 *
 * A fresh key (nearly every keyed append, and copy) costs no lookup: an append with keys to an
 * existing stream is first decided as if every key were new, and its keyed rows are inserted
 * only where the key is not stored (docs/architecture.md "Storage"). A stored key, or a refusal
 * (which a stored key may explain: a repeat is judged before anything else), is decided again
 * against the stored keys, which answers exactly what a decision that looked them up first
 * answers. A new stream has no key stored.
 */
export function decideAndWrite(ctx: CommitContext, loaded: Loaded, inputs: readonly AppendInput[], authority: Authority, nowMs: number): AppendDecision {
  const { store, config, projectId, path } = ctx;
  if (loaded.sid !== null && hasKey(inputs)) {
    let guess: AppendDecision | undefined;
    try {
      guess = decide(ctx, loaded, inputs, authority, nowMs, assumeNew);
    } catch (error) {
      if (!(error instanceof RivuletError)) throw error;
    }
    if (guess !== undefined && (guess.fresh.length === 0 || writeDecision(store, config, projectId, path, loaded, guess, nowMs, true))) return guess;
  }
  const decision = decide(ctx, loaded, inputs, authority, nowMs, ctx.lookupIdempotent);
  if (decision.fresh.length > 0) writeDecision(store, config, projectId, path, loaded, decision, nowMs);
  return decision;
}
