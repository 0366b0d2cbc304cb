/**
 * The core event catalogue: exactly the names of protocol §3.4, under one namespace.
 * Types in this namespace are control events: they are never ephemeral, and a public caller may
 * append only the ones listed in PUBLIC_CONTROL_TYPES.
 */

export const CORE_NAMESPACE = 'events.iterate.com/stream/';

export const EventType = {
  created: `${CORE_NAMESPACE}created`,
  subscriptionConfigured: `${CORE_NAMESPACE}subscription-configured`,
  subscriptionRemoved: `${CORE_NAMESPACE}subscription-removed`,
  subscriptionCursorSet: `${CORE_NAMESPACE}subscription-cursor-set`,
  subscriptionDeliveryHalted: `${CORE_NAMESPACE}subscription-delivery-halted`,
  subscriptionDeliveryResumed: `${CORE_NAMESPACE}subscription-delivery-resumed`,
  errorOccurred: `${CORE_NAMESPACE}error-occurred`,
  paused: `${CORE_NAMESPACE}paused`,
  resumed: `${CORE_NAMESPACE}resumed`,
  connectionOpened: `${CORE_NAMESPACE}connection-opened`,
  connectionClosed: `${CORE_NAMESPACE}connection-closed`,
} as const;

export type CoreEventType = (typeof EventType)[keyof typeof EventType];

const CORE_TYPES: ReadonlySet<string> = new Set(Object.values(EventType));

export function isCoreNamespace(type: string): boolean {
  return type.startsWith(CORE_NAMESPACE);
}

export function isCoreEventType(type: string): type is CoreEventType {
  return CORE_TYPES.has(type);
}

/** Platform facts: only trusted stream internals may append these. */
export const PLATFORM_ONLY_TYPES: ReadonlySet<string> = new Set([
  EventType.created,
  EventType.subscriptionDeliveryHalted,
  EventType.connectionOpened,
  EventType.connectionClosed,
]);

/** Events a paused stream still accepts (protocol §4.5), besides platform facts. */
export const ACCEPTED_WHILE_PAUSED: ReadonlySet<string> = new Set([
  EventType.resumed,
  EventType.subscriptionConfigured,
  EventType.subscriptionRemoved,
  EventType.subscriptionCursorSet,
  EventType.subscriptionDeliveryResumed,
]);

/** Idempotency keys with this prefix are reserved for the platform (protocol §4.2). */
export const INTERNAL_IDEMPOTENCY_PREFIX = 'rivulet-internal/';

/** Generated subscription keys: "subscription:" + the configure event's offset (protocol §9.2). */
export const GENERATED_KEY_PREFIX = 'subscription:';
