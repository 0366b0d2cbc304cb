/**
 * Finding, inspecting and trying subscriptions (protocol §21–§23): the cross-stream listing, the
 * delivery attempt history and the dry run. Query schemas take strings (URL parameters); the same
 * schemas feed /v1/openapi.json.
 */
import { z } from 'zod';
import { OffsetSchema } from './events.js';
import { Limits } from './limits.js';
import { SubscriptionConfiguredPayloadSchema, SubscriptionKeySchema, type ReceiverAction } from './subscriptions.js';

/** The status of a subscription in the listing, in its default order (protocol §21.2). */
export const SUBSCRIPTION_STATUSES = ['halted', 'retrying', 'lagging', 'healthy'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

export const SubscriptionAdminLimits = {
  listPageDefault: 100,
  listPageMax: 1000,
  attemptsPageMax: 1000,
  previewDefault: 100,
  previewMax: 1000,
  /** The first bytes of a webhook's answer body kept with an attempt. */
  responseExcerptBytes: 1024,
} as const;

const intParam = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,16}$/, `${name} must be a non-negative integer`)
    .transform(Number)
    .pipe(z.int(`${name} must be a safe integer`).min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`));

const statusList = z
  .string()
  .min(1)
  .max(200)
  .transform((value, ctx) => {
    const out: SubscriptionStatus[] = [];
    for (const raw of value.split(',')) {
      const s = raw.trim();
      if (!(SUBSCRIPTION_STATUSES as readonly string[]).includes(s)) {
        ctx.addIssue({ code: 'custom', message: `"${s}" is not a status; use a comma list of ${SUBSCRIPTION_STATUSES.join(', ')}` });
        return z.NEVER;
      }
      if (!out.includes(s as SubscriptionStatus)) out.push(s as SubscriptionStatus);
    }
    return out;
  })
  .meta({ description: `a comma list of ${SUBSCRIPTION_STATUSES.join(', ')} (default: every status)` });

export const ListSubscriptionsQuerySchema = z.strictObject({
  status: statusList.optional(),
  prefix: z.string().min(1).max(Limits.pathMaxLength * 3).optional(),
  limit: intParam('limit', 1, SubscriptionAdminLimits.listPageMax).optional(),
  after: z.string().min(1).max(8192).optional().meta({ description: 'the `next` of the previous page (opaque)' }),
});

/** `listSubscriptions` on the RPC root (protocol §21.5): the listing's query as a JSON object. */
export const RpcListSubscriptionsOptionsSchema = z.strictObject({
  status: z.array(z.enum(SUBSCRIPTION_STATUSES)).max(SUBSCRIPTION_STATUSES.length * 4).optional(),
  prefix: z.string().min(1).max(Limits.pathMaxLength * 3).optional(),
  limit: z.int().min(1).max(SubscriptionAdminLimits.listPageMax, `limit must be at most ${SubscriptionAdminLimits.listPageMax}`).optional(),
  after: z.string().min(1).max(8192).optional(),
});

export interface SubscriptionListEntry {
  sourcePath: string;
  subscriptionKey: string;
  action: ReceiverAction;
  /** The receiving stream path, the webhook URL, or the ITX expression as JSON text. */
  target: string;
  status: SubscriptionStatus;
  acknowledgedOffset: number;
  lag: number;
  attempt: number;
  lastError: string | null;
  deliveryHalted?: { reason: 'delivery-failed'; afterOffset: number; attempts: number; error?: string };
  configuredAt: string;
}

export interface SubscriptionListResponse {
  subscriptions: SubscriptionListEntry[];
  /** Present when more may follow: pass it as `after`. */
  next?: string;
}

export const DELIVERY_OUTCOMES = ['ok', 'failed', 'unavailable', 'skipped', 'dropped'] as const;
export type DeliveryAttemptOutcome = (typeof DELIVERY_OUTCOMES)[number];

export const DeliveryAttemptsQuerySchema = z.strictObject({
  subscriptionKey: SubscriptionKeySchema,
  limit: intParam('limit', 1, SubscriptionAdminLimits.attemptsPageMax).optional(),
});

export interface DeliveryAttempt {
  /** When the attempt started (ISO 8601). */
  at: string;
  /** The run it belonged to (protocol §12.1): `configuredAt:cursorSetAt` offsets. */
  run: string;
  attempt: number;
  fromOffset: number;
  toOffset: number;
  outcome: DeliveryAttemptOutcome;
  /** A webhook's HTTP status, when it answered. */
  status?: number;
  /** The first 1 KiB of a webhook's answer body, when it answered one. */
  responseExcerpt?: string;
  error?: string;
  durationMs: number;
}

export interface DeliveryAttemptsResponse {
  attempts: DeliveryAttempt[];
}

export const PreviewSubscriptionBodySchema = SubscriptionConfiguredPayloadSchema.extend({
  limit: z.int().min(1).max(SubscriptionAdminLimits.previewMax, `limit must be at most ${SubscriptionAdminLimits.previewMax}`).optional(),
  afterOffset: OffsetSchema.optional(),
});
export type PreviewSubscriptionBody = z.infer<typeof PreviewSubscriptionBodySchema>;

export interface PreviewSubscriptionResponse {
  /** Durable events looked at. */
  scanned: number;
  /** Those the filter passed (delivered, or failing in the transform). */
  matched: number;
  deliveries: Array<{ offset: number; event: unknown }>;
  errors: Array<{ offset: number; error: string }>;
}
