/**
 * Decide one atomic append (protocol §4.1–§4.6): given the current state and the
 * checked inputs, assign offsets, fold, and answer the events to commit — or throw a typed
 * rejection, in which case nothing is written. Pure apart from the injected lookups.
 *
 * Order of judgement, per input in input order: idempotent repeat (same body → the stored event;
 * other body → CONFLICT), pause rule, control-event rules, offset assertion, event size. After the
 * batch: the core-state byte limit (growing past it is rejected; shrinking is always allowed).
 */
import {
  ACCEPTED_WHILE_PAUSED,
  EventType,
  INTERNAL_IDEMPOTENCY_PREFIX,
  RivuletError,
  type CommittedEvent,
  type CopyHop,
  type CoreState,
} from '@rivulet/contract';
import type { AppendInput, Authority } from './append-input.js';
import type { CopyRunTexts } from './copy-builder.js';
import { canonicalJson } from './canonical-json.js';
import { StateFold } from './reduce.js';
import { utf8Length } from './sizes.js';

export interface DecideEnv {
  projectId: string | null;
  path: string;
  state: CoreState | null;
  /** Bytes of the current core state as JSON. */
  stateBytes: number;
  /** Highest offset assigned so far, ephemeral included (0 for a stream that does not exist). */
  head: number;
  /** createdAt of the events of this append. */
  now: string;
  authority: Authority;
  maxEventBytes: number;
  maxCoreStateBytes: number;
  newStreamId(): string;
  lookupIdempotent(key: string): CommittedEvent | undefined;
  /** Stateless normalisation of control events, before idempotent repeats are compared. */
  normalizeControl?(input: AppendInput): AppendInput;
  /** Stateful rules of control events (subscriptions); throws a typed rejection. */
  checkControl?(input: AppendInput, state: CoreState, head: number): void;
}

export interface FreshEvent {
  event: CommittedEvent;
  json: string;
  /** UTF-8 bytes of `json`. */
  bytes: number;
  /**
   * For a copy whose row can hold parts of `json` instead of all of it (engine/copy-rows.ts): its
   * input, whose `copyRun`, `copyFields` and hop the parts are. Set only where `json` is exactly
   * run.head + offset + `,"createdAt":"` + createdAt + `","type":"` + type + `"` + copyFields +
   * run.key + source offset + run.hopHead + source offset + `,"type":"` + type + `","createdAt":"` +
   * source time + `"` + run.hopTail: the type is JSON as it stands between quotes, both times have
   * 24 characters, and the head is this decision's.
   */
  parts?: CopyParts;
}

/** An input that can be stored as parts (FreshEvent.parts). */
export type CopyParts = AppendInput & { copyRun: CopyRunTexts; copyFields: string; source: { copiedFrom: [CopyHop] } };

export interface AppendDecision {
  /** One committed event per input, in input order (repeats are the stored events). */
  results: CommittedEvent[];
  /** Events to write, in offset order (a new stream's created event first). */
  fresh: FreshEvent[];
  state: CoreState;
  /** The state as JSON, or null when only its counters changed (eventCount, maxOffset). */
  stateJson: string | null;
  /** Bytes of the state as JSON. */
  stateBytes: number;
  head: number;
}

/**
 * Whether two states differ at most in their counters (shared branches are compared by reference).
 * Field by field, not by Object.keys: this runs for every append. Tested against every key of a state.
 */
export function countersOnly(before: CoreState, after: CoreState): boolean {
  return (
    before.projectId === after.projectId &&
    before.path === after.path &&
    before.streamId === after.streamId &&
    before.createdAt === after.createdAt &&
    before.paused === after.paused &&
    before.pauseReason === after.pauseReason &&
    before.subscriptions === after.subscriptions
  );
}

/** Decimal digits of a counter (a safe integer ≥ 0), as String(n).length without building the string. */
export function digits(n: number): number {
  let d = 1;
  for (let p = 10; n >= p; p *= 10) d++;
  return d;
}

function bodyOf(e: { type: string; payload?: unknown; metadata?: unknown; ephemeral?: true }): string {
  return canonicalJson({ type: e.type, payload: e.payload, metadata: e.metadata, ephemeral: e.ephemeral });
}

export function buildEvent(path: string, offset: number, createdAt: string, input: AppendInput): CommittedEvent {
  const event: CommittedEvent = { path, offset, createdAt, type: input.type };
  if (input.payload !== undefined) event.payload = input.payload;
  if (input.metadata !== undefined) event.metadata = input.metadata;
  if (input.idempotencyKey !== undefined) event.idempotencyKey = input.idempotencyKey;
  if (input.ephemeral) event.ephemeral = true;
  if (input.source !== undefined) event.source = input.source;
  return event;
}

const where = (index: number) => `events[${index}]`;

/**
 * The members of a decision's texts that repeat from event to event, serialised once: the path and
 * the time are the decision's, the type is the last one asked (a copy batch repeats its source's).
 */
interface HeadTexts {
  /** `{"path":…,"offset":` */
  path: string;
  /** UTF-8 bytes of `path`. */
  pathBytes: number;
  /** The last type asked, and `,"createdAt":…,"type":…` for it. */
  type: string;
  createdAtType: string;
  /** UTF-8 bytes of `createdAtType` and of the type alone (between its quotes). */
  createdAtTypeBytes: number;
  typeBytes: number;
}

function headTexts(env: DecideEnv): HeadTexts {
  const path = `{"path":${JSON.stringify(env.path)},"offset":`;
  return { path, pathBytes: utf8Length(path), type: '', createdAtType: '', createdAtTypeBytes: 0, typeBytes: 0 };
}

/** The event at `offset` for an input, its JSON text and size; PAYLOAD_TOO_LARGE past the event limit. */
function freshEvent(env: DecideEnv, offset: number, input: AppendInput, heads?: HeadTexts): FreshEvent {
  const event = buildEvent(env.path, offset, env.now, input);
  let json: string;
  let parts: CopyParts | undefined;
  let bytes: number;
  if (input.jsonAfterType === undefined) {
    json = JSON.stringify(event);
    bytes = utf8Length(json);
  } else {
    const h = heads ?? headTexts(env);
    if (h.type !== input.type || h.createdAtType === '') {
      h.type = input.type;
      h.createdAtType = `,"createdAt":${JSON.stringify(env.now)},"type":${JSON.stringify(input.type)}`;
      h.createdAtTypeBytes = utf8Length(h.createdAtType);
      h.typeBytes = utf8Length(input.type);
    }
    json = `${h.path}${offset}${h.createdAtType}${input.jsonAfterType}`;
    const run = input.copyRun;
    const hop = input.source?.copiedFrom[0];
    let timeBytes = -1;
    if (run !== undefined && input.copyFields !== undefined && hop !== undefined && input.source!.copiedFrom.length === 1 && run.head === h.path) {
      if (env.now.length === 24 && hop.createdAt.length === 24 && quotesAsItStands(input.type)) timeBytes = plainTimeBytes(hop.createdAt);
      if (timeBytes >= 0) parts = input as CopyParts;
    }
    // A copy stored as parts is measured from its parts: its text stays the join of texts it is
    // made of, never one flat string of ~770 characters per copy (docs/performance.md "A copy's
    // size from its parts").
    bytes = parts === undefined ? utf8Length(json) : partsBytes(h, offset, parts, timeBytes);
  }
  if (bytes > env.maxEventBytes) {
    throw new RivuletError('PAYLOAD_TOO_LARGE', `an event is ${bytes} bytes as JSON; the limit is ${env.maxEventBytes} bytes`, {
      bytes,
      limit: env.maxEventBytes,
    });
  }
  return parts === undefined ? { event, json, bytes } : { event, json, bytes, parts };
}

/**
 * UTF-8 bytes of a copy's text stored as parts, the sum of its parts' (FreshEvent.parts spells the
 * text): the head, the offset's digits, `,"createdAt":…,"type":…`, the fields, the run's key,
 * hop head and hop tail, the source offset's digits twice, and the hop's type and time (the type
 * is the copy's, the time a plain 24-character text). What repeats is measured once: the run's
 * texts per run, the type with the head texts, the time while it stays the same.
 */
function partsBytes(h: HeadTexts, offset: number, input: CopyParts, timeBytes: number): number {
  const hop = input.source.copiedFrom[0];
  if (input.copyRun !== lastRun) {
    lastRun = input.copyRun;
    lastRunBytes = utf8Length(lastRun.key) + utf8Length(lastRun.hopHead) + utf8Length(lastRun.hopTail);
  }
  return (
    h.pathBytes +
    digits(offset) +
    h.createdAtTypeBytes +
    utf8Length(input.copyFields) +
    lastRunBytes +
    2 * digits(hop.offset) +
    HOP_TYPE_TIME_BYTES +
    h.typeBytes +
    timeBytes
  );
}
let lastRun: CopyRunTexts | undefined;
let lastRunBytes = 0;
/** `,"type":""` and `,"createdAt":""` around the hop's type and time. */
const HOP_TYPE_TIME_BYTES = ',"type":""'.length + ',"createdAt":""'.length;

/** The UTF-8 bytes of a source time that is JSON as it stands between quotes (quotesAsItStands), -1 for any other; the last one is remembered. */
function plainTimeBytes(text: string): number {
  if (text === lastTime) return lastTimeBytes;
  if (!quotesAsItStands(text)) return -1;
  lastTime = text;
  lastTimeBytes = utf8Length(text);
  return lastTimeBytes;
}
let lastTime = '';
let lastTimeBytes = 0;

/**
 * Whether `JSON.stringify(text)` is `text` between quotes: no quote, backslash, control character
 * or surrogate (which JSON escapes or SQLite's UTF-8 could not hold). The last text asked is
 * remembered: a copy batch asks its source type a thousand times.
 */
function quotesAsItStands(text: string): boolean {
  if (text === lastPlain) return true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return false;
  }
  lastPlain = text;
  return true;
}
let lastPlain = '';

function refusedWhilePaused(input: AppendInput, authority: Authority): boolean {
  if (ACCEPTED_WHILE_PAUSED.has(input.type) && input.source === undefined) return false;
  // Platform facts are accepted; copies (platform, with source) are refused like caller events.
  return !(authority === 'platform' && input.source === undefined);
}

export function decideAppend(env: DecideEnv, inputs: readonly AppendInput[]): AppendDecision {
  // The states of the steps are seen by nobody but the next one: folded in place (reduce.ts StateFold).
  const fold = new StateFold(env.state);
  let head = env.head;
  const fresh: FreshEvent[] = [];
  const results: CommittedEvent[] = [];
  // Keys committed earlier in this batch; made only when a batch has more than one keyed input.
  let inBatch: Map<string, CommittedEvent> | undefined;
  // Made at the first input that brings its own text after the type (a copy).
  let heads: HeadTexts | undefined;

  if (fold.state === null) {
    const streamId = env.newStreamId();
    const created = freshEvent(env, head + 1, { type: EventType.created, payload: { projectId: env.projectId, path: env.path, streamId } });
    head = created.event.offset;
    fold.add(created.event);
    fresh.push(created);
  }

  // A plain loop and no closures: this runs for every append (the `where` of a message is built
  // only when it is thrown).
  for (let index = 0; index < inputs.length; index++) {
    const raw = inputs[index]!;
    const input = env.normalizeControl ? env.normalizeControl(raw) : raw;
    if (input.idempotencyKey !== undefined) {
      const stored = inBatch?.get(input.idempotencyKey) ?? env.lookupIdempotent(input.idempotencyKey);
      if (stored) {
        // A platform identity (copy, audit) names one source fact of one run: its repeat is the stored
        // event even if a transform produced a different body ("$now()" in a transform, protocol §13.2).
        const platformIdentity = env.authority === 'platform' && input.idempotencyKey.startsWith(INTERNAL_IDEMPOTENCY_PREFIX);
        if (!platformIdentity && bodyOf(stored) !== bodyOf(input)) {
          throw new RivuletError(
            'CONFLICT',
            `${where(index)}: idempotency key "${input.idempotencyKey}" already names a different event (offset ${stored.offset})`,
            { idempotencyKey: input.idempotencyKey, offset: stored.offset },
          );
        }
        if (input.offset !== undefined && input.offset !== stored.offset) {
          throw new RivuletError(
            'CONFLICT',
            `${where(index)}: offset assertion failed: idempotency key "${input.idempotencyKey}" is stored at offset ${stored.offset}, not ${input.offset}`,
            { expected: input.offset, actual: stored.offset },
          );
        }
        results.push(stored);
        continue;
      }
    }
    const current = fold.state!;
    if (current.paused && refusedWhilePaused(input, env.authority)) {
      const reason = current.pauseReason ? ` (${current.pauseReason})` : '';
      throw new RivuletError(
        'PRECONDITION_FAILED',
        `${where(index)}: stream ${env.path} is paused${reason}; it refuses appends until ${EventType.resumed}`,
        { paused: true, pauseReason: current.pauseReason },
      );
    }
    env.checkControl?.(input, current, head);
    if (input.offset !== undefined && input.offset !== head + 1) {
      throw new RivuletError(
        'CONFLICT',
        `${where(index)}: offset assertion failed: expected offset ${input.offset}, but the next offset is ${head + 1}`,
        { expected: input.offset, actual: head + 1 },
      );
    }
    if (input.jsonAfterType !== undefined) heads ??= headTexts(env);
    const f = freshEvent(env, head + 1, input, heads);
    const event = f.event;
    head = event.offset;
    fold.add(event);
    fresh.push(f);
    // A copy's key is its batch's key head and its source offset, which increase within a batch
    // (validateCopyBatch), and no other input of a batch has a copy key: no later input can repeat
    // it, so copies are not remembered (a Map entry, and the hash of a ~100-character key, per copy).
    if (event.idempotencyKey !== undefined && index + 1 < inputs.length && input.source === undefined) {
      (inBatch ??= new Map()).set(event.idempotencyKey, event);
    }
    results.push(event);
  }

  const finalState = fold.state!;
  if (fresh.length === 0) return { results, fresh, state: finalState, stateJson: null, stateBytes: env.stateBytes, head };
  // The common append changes only the counters: its size follows from their digits, and the state
  // text need not be serialised at all. Anything else is serialised and measured (protocol §4.6).
  let stateJson: string | null = null;
  let bytes: number;
  if (env.state !== null && countersOnly(env.state, finalState)) {
    bytes =
      env.stateBytes -
      digits(env.state.eventCount) -
      digits(env.state.maxOffset) +
      digits(finalState.eventCount) +
      digits(finalState.maxOffset);
  } else {
    stateJson = JSON.stringify(finalState);
    bytes = utf8Length(stateJson);
  }
  if (bytes > env.maxCoreStateBytes && bytes > env.stateBytes) {
    throw new RivuletError(
      'LIMIT_EXCEEDED',
      `this append would grow the stream's core state to ${bytes} bytes; the limit is ${env.maxCoreStateBytes} bytes`,
      { bytes, limit: env.maxCoreStateBytes },
    );
  }
  return { results, fresh, state: finalState, stateJson, stateBytes: bytes, head };
}
