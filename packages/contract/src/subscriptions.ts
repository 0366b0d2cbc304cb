/**
 * Subscription control events and commands, exactly as protocol §9 and §14 define them.
 * The action union forbids invalid combinations structurally: processor-wake carries neither a
 * start nor a transform, copy-to-stream never skips.
 */
import { z } from 'zod';
import { Limits } from './limits.js';
import { OffsetSchema } from './events.js';

export const SubscriptionKeySchema = z
  .string()
  .trim()
  .min(1, 'subscriptionKey must not be empty')
  .max(Limits.subscriptionKeyMaxLength, `subscriptionKey is longer than ${Limits.subscriptionKeyMaxLength} characters`);

export const JsonataSchema = z
  .string()
  .min(1, 'a JSONata expression must not be empty')
  .max(Limits.jsonataMaxLength, `a JSONata expression is longer than ${Limits.jsonataMaxLength} characters`);

export const FilterSchema = z.strictObject({
  eventTypes: z
    .array(z.string().min(1).max(Limits.typeMaxLength))
    .min(1, 'filter.eventTypes must list at least one type (omit it to match every type)')
    .max(256)
    .optional(),
  jsonataCondition: JsonataSchema.optional(),
});
export type SubscriptionFilter = z.infer<typeof FilterSchema>;

/** One ITX step: a string reads a property, [method, ...jsonArgs] calls a method (protocol §18.3). */
export const ItxStepSchema = z.union([
  z.string().min(1).max(256),
  z.tuple([z.string().min(1).max(256)], z.unknown()),
]);
export const ItxExpressionSchema = z
  .array(ItxStepSchema)
  .min(1, 'an ITX expression needs at least one step')
  .max(Limits.expressionMaxSteps, `an ITX expression has at most ${Limits.expressionMaxSteps} steps`);
export type ItxStep = z.infer<typeof ItxStepSchema>;
export type ItxExpression = z.infer<typeof ItxExpressionSchema>;

export const StartSchema = z.enum(['beginning', 'now']);

const copyDelivery = z.strictObject({
  start: StartSchema,
  onFailingEvent: z.literal('halt', {
    error: 'copy-to-stream delivery only supports onFailingEvent "halt": an ordered copy cannot skip an event',
  }),
});
const pushDelivery = z.strictObject({
  start: StartSchema,
  onFailingEvent: z.enum(['halt', 'skip']),
});

export const ProcessorWakeReceiverSchema = z.strictObject(
  {
    action: z.literal('processor-wake'),
    expression: ItxExpressionSchema,
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `processor-wake takes only "action" and "expression" (got ${issue.keys.map((k) => `"${k}"`).join(', ')}): ` +
          'a hosted processor keeps its own checkpoint and folds its stream untransformed, so it carries no delivery start and no transform'
        : undefined,
  },
);

export const CopyToStreamReceiverSchema = z.strictObject({
  action: z.literal('copy-to-stream'),
  receivingStreamPath: z.string().min(1).max(Limits.pathMaxLength * 3),
  jsonataTransform: JsonataSchema.optional(),
  delivery: copyDelivery,
});

export const ItxCallReceiverSchema = z.strictObject({
  action: z.literal('itx-call'),
  expression: ItxExpressionSchema,
  jsonataTransform: JsonataSchema.optional(),
  delivery: pushDelivery,
});

export const WebhookPostReceiverSchema = z.strictObject({
  action: z.literal('webhook-post'),
  url: z.string().min(1).max(Limits.urlMaxLength),
  jsonataTransform: JsonataSchema.optional(),
  delivery: pushDelivery,
});

export const ReceiverSchema = z.discriminatedUnion('action', [
  ProcessorWakeReceiverSchema,
  CopyToStreamReceiverSchema,
  ItxCallReceiverSchema,
  WebhookPostReceiverSchema,
]);
export type Receiver = z.infer<typeof ReceiverSchema>;
export type ReceiverAction = Receiver['action'];
export type PushReceiver = Exclude<Receiver, { action: 'processor-wake' }>;

export const SubscriptionConfiguredPayloadSchema = z.strictObject({
  subscriptionKey: SubscriptionKeySchema.optional(),
  description: z.string().max(Limits.descriptionMaxLength).optional(),
  filter: FilterSchema.optional(),
  receiver: ReceiverSchema,
});
export type SubscriptionConfiguredPayload = z.infer<typeof SubscriptionConfiguredPayloadSchema>;

/** Reduced outbound state stores the effective key inside its normalized configuration. */
export type EffectiveSubscriptionConfiguration = SubscriptionConfiguredPayload & { subscriptionKey: string };

export const SubscriptionRemovedPayloadSchema = z.strictObject({
  subscriptionKey: SubscriptionKeySchema,
  reason: z.literal('requested').default('requested'),
});

export const SubscriptionCursorSetPayloadSchema = z.strictObject({
  subscriptionKey: SubscriptionKeySchema,
  afterOffset: OffsetSchema,
});

export const SubscriptionDeliveryHaltedPayloadSchema = z.strictObject({
  subscriptionKey: SubscriptionKeySchema,
  reason: z.literal('delivery-failed'),
  afterOffset: OffsetSchema,
  attempts: z.int().min(0),
  error: z.string().max(Limits.errorTextMax).optional(),
});

export const SubscriptionDeliveryResumedPayloadSchema = z.strictObject({
  subscriptionKey: SubscriptionKeySchema,
});

export const PausedPayloadSchema = z.strictObject({
  reason: z.string().max(Limits.descriptionMaxLength).optional(),
});
export const ResumedPayloadSchema = z.strictObject({
  reason: z.string().max(Limits.descriptionMaxLength).optional(),
});
export const ErrorOccurredPayloadSchema = z.looseObject({
  message: z.string().min(1).max(Limits.errorTextMax * 4),
});

// ---- commands (protocol §14 custom methods) ----

export const SubscribeToEventsFromBodySchema = z.strictObject({
  sourceStreamPath: z.string().min(1).max(Limits.pathMaxLength * 3),
  subscriptionKey: SubscriptionKeySchema.optional(),
  idempotencyKey: z.string().min(1).max(Limits.idempotencyKeyMaxLength).optional(),
  description: z.string().max(Limits.descriptionMaxLength).optional(),
  filter: FilterSchema.optional(),
  jsonataTransform: JsonataSchema.optional(),
  delivery: z.strictObject({ start: StartSchema.optional() }).optional(),
});
export type SubscribeToEventsFromBody = z.infer<typeof SubscribeToEventsFromBodySchema>;

export const UnsubscribeFromEventsBodySchema = z.strictObject({
  sourceStreamPath: z.string().min(1).max(Limits.pathMaxLength * 3),
  subscriptionKey: SubscriptionKeySchema,
});

export const SetSubscriptionCursorBodySchema = z.strictObject({
  subscriptionKey: SubscriptionKeySchema,
  afterOffset: OffsetSchema,
});

export const ResumeSubscriptionBodySchema = z.strictObject({
  subscriptionKey: SubscriptionKeySchema,
});

export const WaitForEventBodySchema = z.strictObject({
  afterOffset: OffsetSchema.optional(),
  eventTypes: z.array(z.string().min(1).max(Limits.typeMaxLength)).min(1).max(256).optional(),
  jsonataCondition: JsonataSchema.optional(),
  timeoutMs: z.int().min(1).max(3_600_000),
});
