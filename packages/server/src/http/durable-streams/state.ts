/**
 * The Durable Streams state of one Rivulet stream, folded from its events (docs/durable-streams.md
 * "State"): its settings, its closure, the last `Stream-Seq` and each producer's epoch and last
 * sequence number. Pure: folding the same events always gives the same state.
 */
import { CLOSED_TYPE, CONFIGURED_TYPE, DELETED_TYPE, FORK_ADDED_TYPE, FORK_REMOVED_TYPE, stampOf, type ProducerStamp } from './messages.js';

/** What a fork was made from (docs/durable-streams.md "Forks"). */
export interface ForkOrigin {
  /** The source's Rivulet path, in the same project. */
  from: string;
  /** The source offset the fork inherits through (after the sub-offset, if one was given). */
  offset: number;
  /** What the creating request asked for, to judge a repeated create. */
  askedOffset: number | null;
  subOffset: number;
}

export interface DsConfig {
  contentType: string;
  ttlSeconds?: number;
  expiresAt?: string;
  fork?: ForkOrigin;
}

export interface ProducerState {
  epoch: number;
  lastSeq: number;
}

export interface DsState {
  /** The lifetime folded (docs: a new lifetime is a new stream). */
  streamId: string;
  /** The Rivulet offset through which events are folded. */
  head: number;
  /** Null for a stream that no Durable Streams client created: it reads as JSON. */
  config: DsConfig | null;
  closed: boolean;
  closedBy: ProducerStamp | null;
  lastSeq: string | null;
  producers: Map<string, ProducerState>;
  /** `createdAt` of the newest event, in Unix ms: the TTL counts from here after a restart. */
  lastEventMs: number;
  /** Forks that still read this stream. */
  forks: Set<string>;
  /** Deleted while forks still read it. */
  softDeleted: boolean;
}

/**
 * Offsets of a fork's own events are shifted past the offset it forked at, so that the offsets a
 * reader sees keep increasing from the inherited part into the fork's own.
 */
export function baseOf(state: DsState): number {
  return state.config?.fork?.offset ?? 0;
}

/** The offset a reader at the head of the stream holds. */
export function headOf(state: DsState): number {
  return baseOf(state) + state.head;
}

/** The settings a stream that no Durable Streams client created answers with. */
export const UNCONFIGURED: DsConfig = { contentType: 'application/json' };

export function configOf(state: DsState): DsConfig {
  return state.config ?? UNCONFIGURED;
}

export function emptyState(streamId: string): DsState {
  return {
    streamId,
    head: 0,
    config: null,
    closed: false,
    closedBy: null,
    lastSeq: null,
    producers: new Map(),
    lastEventMs: 0,
    forks: new Set(),
    softDeleted: false,
  };
}

/** What folding reads of an event: a committed event as it is, or one parsed from the log. */
export interface FoldedEvent {
  offset: number;
  type: string;
  createdAt: string;
  payload?: Record<string, unknown> | undefined;
  metadata?: Record<string, unknown> | undefined;
}

/**
 * `Date.parse` of the last `createdAt` seen: the engine makes one date string per millisecond, so
 * the events of one group commit (and of one page of the log) mostly share it.
 */
let lastCreatedAt = '';
let lastCreatedMs = NaN;
function createdMs(createdAt: string): number {
  if (createdAt !== lastCreatedAt) {
    lastCreatedMs = Date.parse(createdAt);
    lastCreatedAt = createdAt;
  }
  return lastCreatedMs;
}

export function foldEvent(state: DsState, event: FoldedEvent): void {
  state.head = Math.max(state.head, event.offset);
  const ms = createdMs(event.createdAt);
  if (Number.isFinite(ms)) state.lastEventMs = Math.max(state.lastEventMs, ms);
  if (event.type === CONFIGURED_TYPE && state.config === null && event.payload !== undefined) {
    const { contentType, ttlSeconds, expiresAt, fork } = event.payload;
    const config: DsConfig = { contentType: typeof contentType === 'string' ? contentType : 'application/octet-stream' };
    if (typeof ttlSeconds === 'number') config.ttlSeconds = ttlSeconds;
    if (typeof expiresAt === 'string') config.expiresAt = expiresAt;
    if (fork !== null && typeof fork === 'object') config.fork = fork as unknown as ForkOrigin;
    state.config = config;
  }
  const forkPath = event.payload?.path;
  if (event.type === FORK_ADDED_TYPE && typeof forkPath === 'string') state.forks.add(forkPath);
  if (event.type === FORK_REMOVED_TYPE && typeof forkPath === 'string') state.forks.delete(forkPath);
  if (event.type === DELETED_TYPE) state.softDeleted = true;
  const stamp = stampOf(event);
  if (stamp?.seq !== undefined && typeof stamp.seq === 'string') state.lastSeq = stamp.seq;
  const producer = stamp?.producer;
  if (producer !== undefined && typeof producer.id === 'string') {
    state.producers.set(producer.id, { epoch: producer.epoch, lastSeq: producer.seq });
  }
  if (event.type === CLOSED_TYPE) {
    state.closed = true;
    state.closedBy = producer ?? null;
  }
}

/** When the stream expires (Unix ms), or null for never; `lastAccessMs` is the newest read or write. */
export function expiryMs(config: DsConfig, lastAccessMs: number): number | null {
  if (config.expiresAt !== undefined) {
    const at = Date.parse(config.expiresAt);
    return Number.isFinite(at) ? at : 0;
  }
  if (config.ttlSeconds !== undefined) return lastAccessMs + config.ttlSeconds * 1000;
  return null;
}

export type ProducerVerdict =
  | { kind: 'accept'; next: ProducerState }
  | { kind: 'duplicate'; lastSeq: number }
  | { kind: 'stale-epoch'; currentEpoch: number }
  | { kind: 'epoch-must-start-at-zero' }
  | { kind: 'gap'; expected: number; received: number };

/** Judges one producer request against the producer's state (docs/durable-streams.md "Producers"). */
export function judgeProducer(known: ProducerState | undefined, epoch: number, seq: number): ProducerVerdict {
  if (known === undefined) {
    return seq === 0 ? { kind: 'accept', next: { epoch, lastSeq: 0 } } : { kind: 'gap', expected: 0, received: seq };
  }
  if (epoch < known.epoch) return { kind: 'stale-epoch', currentEpoch: known.epoch };
  if (epoch > known.epoch) {
    return seq === 0 ? { kind: 'accept', next: { epoch, lastSeq: 0 } } : { kind: 'epoch-must-start-at-zero' };
  }
  if (seq <= known.lastSeq) return { kind: 'duplicate', lastSeq: known.lastSeq };
  if (seq === known.lastSeq + 1) return { kind: 'accept', next: { epoch, lastSeq: seq } };
  return { kind: 'gap', expected: known.lastSeq + 1, received: seq };
}
