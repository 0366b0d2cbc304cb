/**
 * Event shapes (protocol §3). The input schema validates public appends at the edges; committed
 * events are produced by the server and read back from storage it wrote, so they are typed, not
 * re-validated.
 */
import { z } from 'zod';
import type { JsonObject } from './json.js';
import { Limits } from './limits.js';

/**
 * A JSON object, accepted as it is (not rebuilt): a rebuilt record would turn an own "__proto__"
 * key, which JSON.parse creates faithfully, into a prototype assignment and lose it.
 */
export const JsonObjectSchema = z
  .custom<JsonObject>((v) => typeof v === 'object' && v !== null && !Array.isArray(v), {
    error: (issue) => `expected a JSON object, got ${issue.input === null ? 'null' : Array.isArray(issue.input) ? 'an array' : typeof issue.input}`,
  })
  .meta({ type: 'object', description: 'Any JSON object' });

export const OffsetSchema = z.int().min(0).meta({ description: 'A stream offset (safe integer ≥ 0)' });

export const EventInputSchema = z.strictObject({
  type: z.string().min(1).max(Limits.typeMaxLength),
  payload: JsonObjectSchema.optional(),
  metadata: JsonObjectSchema.optional(),
  idempotencyKey: z.string().min(1).max(Limits.idempotencyKeyMaxLength).optional(),
  ephemeral: z.literal(true).optional(),
  offset: z
    .int()
    .min(1)
    .optional()
    .meta({ description: 'Optimistic assertion: the offset this event must be committed at (CONFLICT otherwise)' }),
  source: z.unknown().optional().meta({ description: 'Platform-authored provenance; FORBIDDEN from public callers' }),
});

export type EventInput = z.infer<typeof EventInputSchema>;

const isJsonObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The common event of a parsed JSON body, checked by hand: what EventInputSchema would answer for
 * it (the same keys in the same order, the same payload objects), or undefined for anything it does
 * not vouch for — another prototype, an unknown or undefined-valued key, any value the schema
 * would refuse — which the caller then parses with the schema, so that every rejection is the
 * schema's. Every append runs this, hence no zod on the common path (events.test.ts compares it
 * with the schema over generated inputs).
 */
export function plainEventInput(value: unknown): EventInput | undefined {
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return undefined;
  const input = value as Record<string, unknown>;
  let type: string | undefined;
  let payload: JsonObject | undefined;
  let metadata: JsonObject | undefined;
  let idempotencyKey: string | undefined;
  let ephemeral: true | undefined;
  let offset: number | undefined;
  let source: unknown;
  let hasSource = false;
  for (const key in input) {
    const v = input[key];
    switch (key) {
      case 'type':
        if (typeof v !== 'string' || v.length < 1 || v.length > Limits.typeMaxLength) return undefined;
        type = v;
        break;
      case 'payload':
        if (!isJsonObject(v)) return undefined;
        payload = v;
        break;
      case 'metadata':
        if (!isJsonObject(v)) return undefined;
        metadata = v;
        break;
      case 'idempotencyKey':
        if (typeof v !== 'string' || v.length < 1 || v.length > Limits.idempotencyKeyMaxLength) return undefined;
        idempotencyKey = v;
        break;
      case 'ephemeral':
        if (v !== true) return undefined;
        ephemeral = v;
        break;
      case 'offset':
        if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) return undefined;
        offset = v;
        break;
      case 'source':
        if (v === undefined) return undefined;
        source = v;
        hasSource = true;
        break;
      default:
        return undefined;
    }
  }
  if (type === undefined) return undefined;
  // The schema's key order: type, payload, metadata, idempotencyKey, ephemeral, offset, source.
  const out: EventInput = { type };
  if (payload !== undefined) out.payload = payload;
  if (metadata !== undefined) out.metadata = metadata;
  if (idempotencyKey !== undefined) out.idempotencyKey = idempotencyKey;
  if (ephemeral !== undefined) out.ephemeral = ephemeral;
  if (offset !== undefined) out.offset = offset;
  if (hasSource) out.source = source;
  return out;
}

export const MAX_BATCH_EVENTS = 10_000;

export const EventBatchSchema = z
  .array(EventInputSchema)
  .min(1, 'a batch needs at least one event')
  .max(MAX_BATCH_EVENTS, `a batch holds at most ${MAX_BATCH_EVENTS} events`);

/** A batch as plainEventInput judges its events: the schema's answer, or undefined (parse it with the schema). */
export function plainEventBatch(value: readonly unknown[]): EventInput[] | undefined {
  if (value.length < 1 || value.length > MAX_BATCH_EVENTS) return undefined;
  const out: EventInput[] = [];
  for (let i = 0; i < value.length; i++) {
    const input = plainEventInput(value[i]);
    if (input === undefined) return undefined;
    out.push(input);
  }
  return out;
}

/** One event, or an array of events appended atomically. */
export const AppendBodySchema = z.union([EventInputSchema, EventBatchSchema]);

/** One hop of provenance on a copied event (protocol §13.2). */
export interface CopyHop {
  projectId: string | null;
  path: string;
  streamId: string;
  streamCreatedAt: string;
  offset: number;
  type: string;
  createdAt: string;
  subscriptionKey: string;
  cursorChangedAtSourceOffset: number;
}

export interface EventSource {
  copiedFrom: CopyHop[];
}

export interface CommittedEvent {
  path: string;
  offset: number;
  createdAt: string;
  type: string;
  payload?: JsonObject;
  metadata?: JsonObject;
  idempotencyKey?: string;
  ephemeral?: true;
  source?: EventSource;
}

export const CommittedEventSchema = z
  .object({
    path: z.string(),
    offset: z.int().min(1),
    createdAt: z.string(),
    type: z.string(),
    payload: JsonObjectSchema.optional(),
    metadata: JsonObjectSchema.optional(),
    idempotencyKey: z.string().optional(),
    ephemeral: z.literal(true).optional(),
    source: z
      .object({ copiedFrom: z.array(z.record(z.string(), z.unknown())) })
      .optional()
      .meta({ description: 'Provenance hops of a copied event' }),
  })
  .meta({ id: 'CommittedEvent' });
