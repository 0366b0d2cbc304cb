/**
 * Shapes of the HTTP interface (protocol §4–§6, §14). Query schemas take strings (URL parameters)
 * and produce typed values; the same schemas feed /v1/openapi.json.
 */
import { z } from 'zod';
import { Limits } from './limits.js';
import type { CommittedEvent } from './events.js';

const intParam = (name: string, min: number, max?: number) =>
  z
    .string()
    .regex(/^\d{1,16}$/, `${name} must be a non-negative integer`)
    // What a query value means once parsed: generated clients then take a number (protocol §15.3).
    .meta({ type: 'integer', minimum: min, ...(max === undefined ? {} : { maximum: max }), pattern: undefined })
    .transform(Number)
    .pipe(z.int(`${name} must be a safe integer`).min(min, `${name} must be at least ${min}`));

export const ReadQuerySchema = z.strictObject({
  afterOffset: intParam('afterOffset', 0).optional(),
  beforeOffset: intParam('beforeOffset', 1).optional(),
  limit: intParam('limit', 1, Limits.readPageMax)
    .pipe(z.int().max(Limits.readPageMax, `limit must be at most ${Limits.readPageMax}`))
    .optional(),
  eventTypes: z.string().min(1).max(16_384).optional(),
  includeEphemeral: z.enum(['true', 'false']).optional(),
  live: z.literal('sse', { error: 'live must be "sse"' }).optional(),
  expectedStreamId: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .meta({ description: 'live=sse only: the lifetime the cursor belongs to; another lifetime answers event: destroyed' }),
});

export const ListQuerySchema = z.strictObject({
  prefix: z.string().min(1).max(Limits.pathMaxLength * 3).optional(),
  limit: intParam('limit', 1, 10_000).pipe(z.int().max(10_000, 'limit must be at most 10000')).optional(),
  after: z.string().min(1).max(Limits.pathMaxLength * 3).optional(),
});

export interface ReadResponse {
  streamId: string | null;
  streamMaxOffset: number;
  events: CommittedEvent[];
}

export interface AppendResponse {
  events: CommittedEvent[];
}

export interface StreamListEntry {
  path: string;
  streamId: string;
  createdAt: string;
  maxOffset: number;
}

export interface ListResponse {
  streams: StreamListEntry[];
  /** Present when more streams follow: pass it as `after` to read the next page. */
  nextAfter?: string;
}

/** getEvents over RPC (protocol §18.2): the read query as a JSON object instead of URL parameters. */
export const RpcReadOptionsSchema = z.strictObject({
  afterOffset: z.int().min(0).optional(),
  beforeOffset: z.int().min(1).optional(),
  limit: z.int().min(1).max(Limits.readPageMax, `limit must be at most ${Limits.readPageMax}`).optional(),
  eventTypes: z.array(z.string().min(1).max(Limits.typeMaxLength)).max(256).optional(),
  includeEphemeral: z.boolean().optional(),
});

/** A worker or processor name (protocol §18.2 `workers.register(name, target)`). */
export const CallableNameSchema = z
  .string()
  .min(1, 'a name must not be empty')
  .max(200, 'a name is at most 200 characters')
  .regex(/^[^\s]+$/, 'a name may not contain whitespace');
