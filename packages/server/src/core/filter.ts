/**
 * Filters and transforms of delivery (protocol §9.1, §12.3, §13.2).
 * Cheap checks first: the event-type list, then the compiled JSONata condition. A condition sees
 * the whole committed event; a transform sees it too and shapes { type?, payload?, metadata? }:
 * fields it omits are copied verbatim, anything else it returns is refused.
 */
import { EventType, INTERNAL_IDEMPOTENCY_PREFIX, Limits, type CommittedEvent, type JsonObject, type SubscriptionFilter } from '@rivulet/contract';
import type { ExpressionBudget } from './expression-budget.js';
import { evaluateJsonata, jsonataTruthy } from './jsonata.js';

export const DROP_AUDIT_PREFIX = `${INTERNAL_IDEMPOTENCY_PREFIX}drop:`;

export function typeMatches(filter: SubscriptionFilter | undefined, type: string): boolean {
  return !filter?.eventTypes || filter.eventTypes.includes(type);
}

/**
 * Throws JsonataError when the condition throws or runs out of its budget (an ordered failure,
 * never a pass; protocol §16.8).
 */
export async function conditionMatches(filter: SubscriptionFilter | undefined, event: CommittedEvent, budget: ExpressionBudget): Promise<boolean> {
  if (!filter?.jsonataCondition) return true;
  return jsonataTruthy(await evaluateJsonata(filter.jsonataCondition, event, budget));
}

/** Drop audits and connection facts are never copied onward (protocol §12.3, §13.4). */
export function excludedFromCopy(event: CommittedEvent): boolean {
  if (event.type === EventType.connectionOpened || event.type === EventType.connectionClosed) return true;
  return event.type === EventType.errorOccurred && (event.idempotencyKey?.startsWith(DROP_AUDIT_PREFIX) ?? false);
}

export interface ShapedEvent {
  type: string;
  payload?: JsonObject;
  metadata?: JsonObject;
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export class TransformError extends Error {
  override readonly name = 'TransformError';
}

export function unshaped(event: CommittedEvent): ShapedEvent {
  const out: ShapedEvent = { type: event.type };
  if (event.payload !== undefined) out.payload = event.payload;
  if (event.metadata !== undefined) out.metadata = event.metadata;
  return out;
}

/** Applies a transform within the budget; throws JsonataError or TransformError (an ordered failure of that event). */
export async function shapeEvent(transform: string | undefined, event: CommittedEvent, budget: ExpressionBudget): Promise<ShapedEvent> {
  const base = unshaped(event);
  if (transform === undefined) return base;
  const result = await evaluateJsonata(transform, event, budget);
  if (!isObject(result)) {
    throw new TransformError(`jsonataTransform must produce an object {type?, payload?, metadata?}, got ${result === undefined ? 'nothing' : JSON.stringify(result).slice(0, 100)}`);
  }
  for (const key of Object.keys(result)) {
    if (key !== 'type' && key !== 'payload' && key !== 'metadata') {
      throw new TransformError(`jsonataTransform produced "${key}"; it may shape only type, payload and metadata`);
    }
  }
  const out: ShapedEvent = { ...base };
  if (result.type !== undefined) {
    if (typeof result.type !== 'string' || result.type.length === 0 || result.type.length > Limits.typeMaxLength) {
      throw new TransformError(`jsonataTransform produced a type that is not a string of 1–${Limits.typeMaxLength} characters`);
    }
    out.type = result.type;
  }
  for (const field of ['payload', 'metadata'] as const) {
    const value = result[field];
    if (value === undefined) continue;
    if (!isObject(value)) throw new TransformError(`jsonataTransform produced a ${field} that is not an object`);
    out[field] = value;
  }
  return out;
}
