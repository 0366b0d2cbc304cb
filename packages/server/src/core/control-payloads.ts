/** Payload schemas of the control events a public caller may append (protocol §3.4, §9). */
import {
  ErrorOccurredPayloadSchema,
  EventType,
  PausedPayloadSchema,
  ResumedPayloadSchema,
  SubscriptionConfiguredPayloadSchema,
  SubscriptionCursorSetPayloadSchema,
  SubscriptionDeliveryResumedPayloadSchema,
  SubscriptionRemovedPayloadSchema,
} from '@rivulet/contract';
import type { z } from 'zod';

export const controlPayloadSchemas: Partial<Record<string, z.ZodType>> = {
  [EventType.paused]: PausedPayloadSchema,
  [EventType.resumed]: ResumedPayloadSchema,
  [EventType.errorOccurred]: ErrorOccurredPayloadSchema,
  [EventType.subscriptionConfigured]: SubscriptionConfiguredPayloadSchema,
  [EventType.subscriptionRemoved]: SubscriptionRemovedPayloadSchema,
  [EventType.subscriptionCursorSet]: SubscriptionCursorSetPayloadSchema,
  [EventType.subscriptionDeliveryResumed]: SubscriptionDeliveryResumedPayloadSchema,
};
