/**
 * What one NDJSON line means (docs/operations.md, "Export and import"). A line is one of:
 * - an exported event: a committed event (protocol §3.2) with the `streamId` of its lifetime
 *   (§2.2), as `rivulet export`, `read --all --json` and `tail --json` print it;
 * - a read document `{streamId, streamMaxOffset, events}` (`read --json` of one page, `--last`),
 *   which stands for its events;
 * - for `append` only, an append input (protocol §3.1).
 * Committed events of the core namespace (§3.4) are facts of their source stream; both commands
 * skip them unless `import --include-control` asks for the ones a caller may append.
 */
import type { AppendEvent, CommittedEvent } from '@rivulet/client';
import { INTERNAL_IDEMPOTENCY_PREFIX, isCoreNamespace, PLATFORM_ONLY_TYPES, type JsonObject } from '@rivulet/contract';

/** A line the command cannot use; reported with its number, exit code 1. */
export class LineError extends Error {
  constructor(
    readonly line: number,
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** An exported event: a committed event and, when known, its lifetime. */
export type ExportedEvent = CommittedEvent & { streamId?: string };

/** The NDJSON line of one committed event of the lifetime `streamId` (export, read --all --json, tail --json). */
export function exportLine(event: CommittedEvent, streamId: string | null | undefined): string {
  return JSON.stringify(streamId ? { ...event, streamId } : event);
}

export function parseLine(text: string, line: number): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new LineError(line, `not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function isReadDocument(value: Record<string, unknown>): boolean {
  return Array.isArray(value.events) && 'streamMaxOffset' in value && !('type' in value);
}

/** A committed event carries what only the server stamps: its path, offset and time. */
export function isCommitted(value: Record<string, unknown>): boolean {
  return typeof value.path === 'string' && typeof value.createdAt === 'string' && typeof value.offset === 'number';
}

/** The events a parsed line stands for (a read document stands for its events), not yet checked. */
export function exportedEvents(value: unknown, line: number): Record<string, unknown>[] {
  if (!isObject(value)) throw new LineError(line, 'not an event object');
  if (!isReadDocument(value)) return [value];
  const streamId = typeof value.streamId === 'string' ? value.streamId : undefined;
  return (value.events as unknown[]).map((event) => {
    if (!isObject(event)) throw new LineError(line, 'the document holds an entry that is not an event object');
    return streamId === undefined ? event : { ...event, streamId };
  });
}

export function isExported(value: Record<string, unknown>): boolean {
  return isCommitted(value) && typeof value.type === 'string' && Number.isSafeInteger(value.offset) && (value.offset as number) >= 1;
}

/** Control events a caller may append, which `import --include-control` replays (§3.4, §3.5). */
export function replayableControl(event: ExportedEvent): boolean {
  return isCoreNamespace(event.type) && !PLATFORM_ONLY_TYPES.has(event.type) && event.source === undefined;
}

/**
 * `append --file`: the append input a line holds. A committed event (a line of `tail --json` or
 * `read --all --json`) is appended again as its type, payload, metadata, ephemeral flag and
 * public idempotency key; its offset and time are its source's, not assertions here. Answers
 * null for a committed control event, which is skipped.
 */
export function appendInput(value: Record<string, unknown>): AppendEvent | null {
  if (!isCommitted(value)) return value as AppendEvent;
  const event = value as unknown as ExportedEvent;
  if (isCoreNamespace(event.type)) return null;
  const input: AppendEvent = { type: event.type };
  if (event.payload !== undefined) input.payload = event.payload;
  if (event.metadata !== undefined) input.metadata = event.metadata;
  if (event.ephemeral) input.ephemeral = true;
  const key = event.idempotencyKey;
  if (key !== undefined && !key.startsWith(INTERNAL_IDEMPOTENCY_PREFIX)) input.idempotencyKey = key;
  return input;
}

/** One hop of `metadata.importedFrom`: where an imported event was read (the names of a copy's hop, §13.2). */
export interface ImportHop {
  path: string;
  streamId?: string;
  offset: number;
  createdAt: string;
  idempotencyKey?: string;
  copiedFrom?: unknown;
}

/**
 * The idempotency key of an imported event: its source lifetime (or, when the line does not
 * name one, its source path) and its offset. Paths start with "/" and hold no ":" (§2.3); stream
 * ids do neither, so the two forms cannot collide.
 */
export function importKey(event: ExportedEvent): string {
  return `import:${event.streamId ?? event.path}:${event.offset}`;
}

/** `import`: the event to append for an exported one, with its key and provenance. */
export function importInput(event: ExportedEvent, line: number): AppendEvent {
  const hop: ImportHop = { path: event.path, offset: event.offset, createdAt: event.createdAt };
  if (event.streamId !== undefined) hop.streamId = event.streamId;
  if (event.idempotencyKey !== undefined) hop.idempotencyKey = event.idempotencyKey;
  if (event.source !== undefined) hop.copiedFrom = event.source.copiedFrom;
  const earlier = event.metadata?.importedFrom;
  if (earlier !== undefined && !Array.isArray(earlier)) {
    throw new LineError(line, 'metadata.importedFrom is taken by something that is not a list of import hops');
  }
  const metadata: JsonObject = { ...event.metadata, importedFrom: [...(earlier ?? []), hop as unknown as JsonObject] };
  const input: AppendEvent = { type: event.type, metadata, idempotencyKey: importKey(event) };
  if (event.payload !== undefined) input.payload = event.payload;
  return input;
}
