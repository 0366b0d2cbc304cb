/**
 * Event shapes (API.md §2). The input schema validates public appends at the edges; committed
 * events are produced by the server and read back from storage it wrote, so they are typed, not
 * re-validated.
 */
import { z } from 'zod';
import type { JsonObject } from './json.js';
import { Limits } from './limits.js';

export const JsonObjectSchema = z
  .record(z.string(), z.unknown())
  .meta({ description: 'Any JSON object' }) as unknown as z.ZodType<JsonObject>;

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

export const AppendBodySchema = z.union([EventInputSchema, z.array(EventInputSchema).min(1).max(10_000)]);

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
