/**
 * Stateless checks of one append input, before any state is read: authority (protocol §3.5), the
 * reserved idempotency prefix (§4.2), the core namespace (control events are never ephemeral,
 * §3.4) and control payload shapes.
 */
import {

  INTERNAL_IDEMPOTENCY_PREFIX,
  PLATFORM_ONLY_TYPES,
  RivuletError,
  isCoreEventType,
  isCoreNamespace,
  parseOrThrow,
  type EventInput,
  type EventSource,
  type JsonObject,
} from '@rivulet/contract';
import type { z } from 'zod';
import { controlPayloadSchemas } from './control-payloads.js';
import type { CopyRunTexts } from './copy-builder.js';

/**
 * Who is appending: a public caller (HTTP, RPC), or trusted stream internals (delivery, audits,
 * connection facts).
 */
export type Authority = 'public' | 'platform';

export interface AppendInput {
  type: string;
  payload?: JsonObject;
  metadata?: JsonObject;
  idempotencyKey?: string;
  ephemeral?: true;
  /** Optimistic assertion of the offset this event must get. */
  offset?: number;
  source?: EventSource;
  /**
   * Set only by the platform (copies, core/copy-builder.ts): the event's JSON text after its type
   * member, `,"payload":…` to the closing brace, exactly as `JSON.stringify` would write the rest
   * of the event built from this input; core/decide-append.ts splices it instead of serialising.
   */
  jsonAfterType?: string;
  /**
   * Set with `jsonAfterType` for a first-hop copy without a transform, for storing it as parts
   * (engine/copy-rows.ts): the texts its batch's copies share, and the source's payload and
   * metadata members as stored (the start of `jsonAfterType`). The source offset and time are its hop's.
   */
  copyRun?: CopyRunTexts;
  copyFields?: string;
}

export function checkInput(input: EventInput, authority: Authority, index = 0): AppendInput {
  const where = `events[${index}]`;
  if (authority === 'public') {
    if (input.source !== undefined) {
      throw new RivuletError(
        'FORBIDDEN',
        `${where}: "source" is platform-authored: only trusted stream delivery may append an event carrying source.copiedFrom`,
      );
    }
    if (PLATFORM_ONLY_TYPES.has(input.type)) {
      throw new RivuletError('FORBIDDEN', `${where}: ${input.type} is a platform fact; public callers may not append it`);
    }
    if (input.idempotencyKey?.startsWith(INTERNAL_IDEMPOTENCY_PREFIX)) {
      throw new RivuletError(
        'INVALID_INPUT',
        `${where}: idempotency keys starting "${INTERNAL_IDEMPOTENCY_PREFIX}" are reserved for the platform`,
      );
    }
  }
  const out: AppendInput = { type: input.type };
  if (isCoreNamespace(input.type) && input.source === undefined) {
    if (!isCoreEventType(input.type)) {
      throw new RivuletError('INVALID_INPUT', `${where}: ${input.type} is not an event type of the core catalogue`);
    }
    if (input.ephemeral) {
      throw new RivuletError('INVALID_INPUT', `${where}: control events (${input.type}) cannot be ephemeral`);
    }
    const schema = controlPayloadSchemas[input.type];
    if (schema && authority === 'public') {
      const parsed = parseOrThrow(schema as z.ZodType, input.payload ?? {}, `${where}.payload`) as JsonObject;
      // An omitted payload stays omitted (protocol §3.1) unless its schema fills in a default.
      if (input.payload !== undefined || Object.keys(parsed).length > 0) out.payload = parsed;
    } else if (input.payload !== undefined) out.payload = input.payload;
  } else if (input.payload !== undefined) out.payload = input.payload;
  if (input.metadata !== undefined) out.metadata = input.metadata;
  if (input.idempotencyKey !== undefined) out.idempotencyKey = input.idempotencyKey;
  if (input.ephemeral) out.ephemeral = true;
  if (input.offset !== undefined) out.offset = input.offset;
  if (input.source !== undefined) out.source = input.source as EventSource;
  return out;
}

