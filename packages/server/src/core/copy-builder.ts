/**
 * The receiving side of copy-to-stream (protocol §13.1–§13.4), as pure functions: validate a batch,
 * judge its stamp against the passive fence, and build the appends — one copy per event with its
 * new provenance hop and per-run idempotency identity, stamped after the transform so that a
 * transform can forge neither, or a drop (cycle, hop limit) with one idempotent audit line per
 * batch.
 */
import {
  EventType,
  INTERNAL_IDEMPOTENCY_PREFIX,
  Limits,
  RivuletError,
  type CopyHop,
  type CoreState,
  type EventSource,
} from '@rivulet/contract';
import type { AppendInput } from './append-input.js';
import { DROP_AUDIT_PREFIX, type ShapedEvent } from './filter.js';
import { compareStamps, type Stamp } from './stamps.js';

export interface CopyBatchEvent {
  /** Coordinates of the source event (never transformed). */
  offset: number;
  type: string;
  createdAt: string;
  source?: EventSource;
  /** What the receiver stores: the source event's type/payload/metadata after the transform. */
  shaped: ShapedEvent;
  /**
   * With no transform: `shaped`'s payload and metadata members as the source stored them,
   * `,"payload":…,"metadata":…` ('' when it has neither; engine/event-json.ts `storedFieldsJson`).
   * The copy's text is spliced from it instead of serialising them again.
   */
  fieldsJson?: string;
}

export interface CopyBatch extends Stamp {
  projectId: string | null;
  /** Source stream path. */
  path: string;
  subscriptionKey: string;
  receivingStreamPath: string;
  events: CopyBatchEvent[];
}

/**
 * The texts every copy of one batch shares, for storing its copies as parts (engine/copy-rows.ts):
 * `head` is the receiving stream's `{"path":…,"offset":`, `key` is `,"idempotencyKey":"…` up to the
 * source offset, `hopHead` the key's end and the hop up to the source offset, `hopTail` the hop's
 * last members and the event's end (see afterTypeJson). `keyHead` is the copies' idempotency key up
 * to the source offset, as the key spells it (one string for the batch: its copies' key claims
 * compare it by reference, engine/copy-claims.ts).
 */
export interface CopyRunTexts {
  head: string;
  keyHead: string;
  key: string;
  hopHead: string;
  hopTail: string;
}

export interface CopyPlan {
  inputs: AppendInput[];
  dropped: Array<{ offset: number; reason: 'cycle' | 'hop-limit' }>;
}

export function copyIdempotencyKey(batch: CopyBatch, offset: number): string {
  return `${copyKeyHead(batch)}${offset}]`;
}

/**
 * What the copy keys of one batch share: the key's JSON array of [key, cursorChangedAt, projectId,
 * sourcePath, streamId, offset] up to its offset. A batch builds it once; the offset (a safe
 * integer, validateCopyBatch) serialises as its digits.
 */
function copyKeyHead(batch: CopyBatch): string {
  const shared = JSON.stringify([batch.subscriptionKey, batch.cursorChangedAtSourceOffset, batch.projectId, batch.path, batch.streamId]);
  return `${INTERNAL_IDEMPOTENCY_PREFIX}copy:${shared.slice(0, -1)},`;
}

export function validateCopyBatch(batch: CopyBatch, receiver: { projectId: string | null; path: string }): void {
  const bad = (why: string) => new RivuletError('INVALID_INPUT', `copy batch refused: ${why}`);
  if (batch.receivingStreamPath !== receiver.path || batch.projectId !== receiver.projectId) {
    const where = (projectId: string | null, path: string) => (projectId === null ? path : `${path} of project ${projectId}`);
    throw bad(`addressed to ${where(batch.projectId, batch.receivingStreamPath)}, not ${where(receiver.projectId, receiver.path)}`);
  }
  if (!batch.streamId || !batch.streamCreatedAt || !Number.isSafeInteger(batch.cursorChangedAtSourceOffset) || batch.cursorChangedAtSourceOffset < 1) {
    throw bad('stamp fields missing or invalid');
  }
  let previous = 0;
  for (const e of batch.events) {
    if (!Number.isSafeInteger(e.offset) || e.offset <= previous) throw bad('events are not in increasing offset order');
    previous = e.offset;
  }
}

/** Strictly older stamps are rejected; equal and newer are accepted (the passive inbound fence). */
export function checkFence(state: CoreState | null, batch: CopyBatch): void {
  const record = state?.subscriptions.inbound.bySourcePath[batch.path]?.[batch.subscriptionKey];
  if (record && compareStamps(batch, record) < 0) {
    throw new RivuletError(
      'CONFLICT',
      `copy batch refused: ${batch.path} subscription "${batch.subscriptionKey}" already accepted a newer delivery (stamp ${record.streamId}@${record.cursorChangedAtSourceOffset})`,
      { fence: record },
    );
  }
}

export function planCopies(batch: CopyBatch, receiver: { projectId: string | null; path: string }): CopyPlan {
  const inputs: AppendInput[] = [];
  const dropped: CopyPlan['dropped'] = [];
  const keyHead = copyKeyHead(batch);
  let texts: CopyTexts | undefined;
  for (const e of batch.events) {
    // A first-hop copy (no hops before) makes no array and no closure to look at them: this runs
    // for every copy of a drain.
    const previous = e.source?.copiedFrom;
    if (previous !== undefined && passedThrough(previous, receiver)) {
      dropped.push({ offset: e.offset, reason: 'cycle' });
      continue;
    }
    if (previous !== undefined && previous.length >= Limits.maxHops) {
      dropped.push({ offset: e.offset, reason: 'hop-limit' });
      continue;
    }
    const hop: CopyHop = {
      projectId: batch.projectId,
      path: batch.path,
      streamId: batch.streamId,
      streamCreatedAt: batch.streamCreatedAt,
      offset: e.offset,
      type: e.type,
      createdAt: e.createdAt,
      subscriptionKey: batch.subscriptionKey,
      cursorChangedAtSourceOffset: batch.cursorChangedAtSourceOffset,
    };
    const input: AppendInput = {
      type: e.shaped.type,
      idempotencyKey: `${keyHead}${e.offset}]`,
      source: { copiedFrom: previous === undefined ? [hop] : [...previous, hop] },
    };
    if (e.shaped.payload !== undefined) input.payload = e.shaped.payload;
    if (e.shaped.metadata !== undefined) input.metadata = e.shaped.metadata;
    if (e.fieldsJson !== undefined && (previous === undefined || previous.length === 0)) {
      texts ??= copyTexts(batch, keyHead, receiver.path);
      input.jsonAfterType = afterTypeJson(texts, e, e.fieldsJson);
      // References only: a drain makes a thousand of these per batch.
      if (e.shaped.type === e.type) {
        input.copyRun = texts.run;
        input.copyFields = e.fieldsJson;
      }
    }
    inputs.push(input);
  }
  if (dropped.length > 0) inputs.push(dropAudit(batch, dropped));
  return { inputs, dropped };
}

/** Whether one of the hops is the receiver: a copy into it would close a cycle (protocol §13.4). */
function passedThrough(hops: readonly CopyHop[], receiver: { projectId: string | null; path: string }): boolean {
  for (const hop of hops) if (hop.path === receiver.path && hop.projectId === receiver.projectId) return true;
  return false;
}

/** The parts of a batch's copy texts that all its copies share, serialised once per batch. */
interface CopyTexts {
  /**
   * `key`: `,"idempotencyKey":"…` up to the key's offset; `hopHead`: `]","source":{"copiedFrom":[{…,"offset":`,
   * the key's end and the hop up to its offset; `hopTail`: `,"subscriptionKey":…}]}}`, the hop's last
   * members and the event's end. One object per batch, shared by its copies' compact parts.
   */
  run: CopyRunTexts;
  /** The last source type and time seen, and `,"type":…,"createdAt":…` + hopTail for them. */
  type: string;
  createdAt: string;
  tail: string;
}

function copyTexts(batch: CopyBatch, keyHead: string, receivingPath: string): CopyTexts {
  const j = JSON.stringify;
  return {
    run: {
      head: `{"path":${j(receivingPath)},"offset":`,
      keyHead,
      key: `,"idempotencyKey":${j(keyHead).slice(0, -1)}`,
      hopHead:
        `]","source":{"copiedFrom":[{"projectId":${j(batch.projectId)},"path":${j(batch.path)},"streamId":${j(batch.streamId)}` +
        `,"streamCreatedAt":${j(batch.streamCreatedAt)},"offset":`,
      hopTail: `,"subscriptionKey":${j(batch.subscriptionKey)},"cursorChangedAtSourceOffset":${batch.cursorChangedAtSourceOffset}}]}}`,
    },
    type: '',
    createdAt: '',
    tail: '',
  };
}

/**
 * A first-hop copy's JSON text after its type (AppendInput `jsonAfterType`): its payload and
 * metadata as the source stored them, its identity and its one hop, in the order and the spelling
 * `JSON.stringify` gives the event planCopies builds (offsets are safe integers, validateCopyBatch:
 * digits; the key's offset and `]` need no escaping). copy-builder.test.ts compares the two.
 *
 * Six parts, the constant ones joined once per batch: each join of two texts is a string of its
 * own until the whole is flattened to be stored, and this runs for every copy.
 */
function afterTypeJson(texts: CopyTexts, e: CopyBatchEvent, fieldsJson: string): string {
  // The source's type and time repeat from event to event: serialised when they change.
  if (texts.type !== e.type || texts.createdAt !== e.createdAt || texts.tail === '') {
    texts.type = e.type;
    texts.createdAt = e.createdAt;
    texts.tail = `,"type":${JSON.stringify(e.type)},"createdAt":${JSON.stringify(e.createdAt)}${texts.run.hopTail}`;
  }
  return `${fieldsJson}${texts.run.key}${e.offset}${texts.run.hopHead}${e.offset}${texts.tail}`;
}

function dropAudit(batch: CopyBatch, dropped: CopyPlan['dropped']): AppendInput {
  const cycles = dropped.filter((d) => d.reason === 'cycle').length;
  const hopLimits = dropped.length - cycles;
  // The audit has one `reason` (protocol §13.4); a batch with both names the cycle there, and says
  // how many of each in the message and in `reasons`, so nothing is hidden.
  const reason = cycles > 0 ? 'cycle' : 'hop-limit';
  const firstOffset = dropped[0]!.offset;
  const lastOffset = dropped[dropped.length - 1]!.offset;
  const why = cycles > 0 && hopLimits > 0 ? `cycle (${cycles}) and hop-limit (${hopLimits})` : reason;
  const message = `dropped ${dropped.length} copied event(s) from "${batch.path}" subscription "${batch.subscriptionKey}" (source offsets ${firstOffset}-${lastOffset}): ${why}`;
  return {
    type: EventType.errorOccurred,
    idempotencyKey: `${DROP_AUDIT_PREFIX}${JSON.stringify([
      batch.path,
      batch.subscriptionKey,
      batch.streamId,
      batch.cursorChangedAtSourceOffset,
      firstOffset,
      lastOffset,
    ])}`,
    payload: {
      message,
      drop: {
        reason,
        sourcePath: batch.path,
        subscriptionKey: batch.subscriptionKey,
        count: dropped.length,
        firstOffset,
        lastOffset,
        ...(cycles > 0 && hopLimits > 0 ? { reasons: { cycle: cycles, 'hop-limit': hopLimits } } : {}),
      },
    },
  };
}
