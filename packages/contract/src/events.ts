/**
 * Event shapes (API.md §2). The input schema validates public appends at the edges; committed
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

export const MAX_BATCH_EVENTS = 10_000;

export const EventBatchSchema = z
  .array(EventInputSchema)
  .min(1, 'a batch needs at least one event')
  .max(MAX_BATCH_EVENTS, `a batch holds at most ${MAX_BATCH_EVENTS} events`);

/** One event, or an array of events appended atomically. */
export const AppendBodySchema = z.union([EventInputSchema, EventBatchSchema]);

/** One hop of provenance on a copied event (design page: "Copied event validation"). */
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
