/**
 * The subscription commands of protocol §14, as conveniences that append exactly the events of
 * §9 (keys §9.2, missing keys §9.8, identical configures §14.1, resume §9.7, §14.4–14.5). Each
 * judges current state and appends in one synchronous section of the actor (a plan function), so
 * a check and its append cannot be separated by another writer.
 */
import {
  EventType,
  RivuletError,
  SubscriptionConfiguredPayloadSchema,
  canonicalizePath,
  parseOrThrow,
  type CommittedEvent,
  type CoreState,
  type EventInput,
  type SubscribeToEventsFromBody,
  type SubscriptionConfiguredPayload,
} from '@rivulet/contract';
import { checkInput, type AppendInput } from '../core/append-input.js';
import { jsonEqual } from '../core/canonical-json.js';
import { effectiveKey } from '../core/reduce.js';
import type { StreamActor } from './actor.js';

type ActorOf = (path: string) => StreamActor;

function eventAt(actor: StreamActor, offset: number): CommittedEvent {
  const found = actor.read({ afterOffset: offset - 1, beforeOffset: offset + 1, limit: 1, includeEphemeral: false });
  const event = found.events[0];
  if (!event) throw new RivuletError('INTERNAL', `event ${offset} of ${actor.path} is missing`);
  return event;
}

const publicInput = (input: EventInput): AppendInput => checkInput(input, 'public');

export interface SubscribeResult {
  subscriptionKey: string;
  subscriptionConfiguredEvent: CommittedEvent;
}

export async function subscribeToEventsFrom(
  actorOf: ActorOf,
  receivingPath: string,
  body: SubscribeToEventsFromBody,
): Promise<SubscribeResult> {
  const sourcePath = canonicalizePath(body.sourceStreamPath);
  if (sourcePath === receivingPath) {
    throw new RivuletError('INVALID_INPUT', `a stream cannot receive from itself (${receivingPath})`);
  }
  if (body.subscriptionKey === undefined && body.idempotencyKey === undefined) {
    throw new RivuletError(
      'INVALID_INPUT',
      'subscribeToEventsFrom without a subscriptionKey needs an idempotencyKey, so that a retried call cannot create a second subscription',
    );
  }
  const draft: SubscriptionConfiguredPayload = {
    ...(body.subscriptionKey !== undefined ? { subscriptionKey: body.subscriptionKey } : {}),
    ...(body.description !== undefined ? { description: body.description } : {}),
    ...(body.filter !== undefined ? { filter: body.filter } : {}),
    receiver: {
      action: 'copy-to-stream',
      receivingStreamPath: receivingPath,
      ...(body.jsonataTransform !== undefined ? { jsonataTransform: body.jsonataTransform } : {}),
      delivery: { start: body.delivery?.start ?? 'now', onFailingEvent: 'halt' },
    },
  };
  const payload = parseOrThrow(SubscriptionConfiguredPayloadSchema, draft);
  const source = actorOf(sourcePath);
  const input: EventInput = { type: EventType.subscriptionConfigured, payload: payload as never };
  if (body.idempotencyKey !== undefined) input.idempotencyKey = body.idempotencyKey;
  // Level-triggered (protocol §14.1): an identical configuration of an existing explicit key
  // appends nothing. Judged inside the append's synchronous section, against the state it would
  // be committed on.
  let existingAt: number | undefined;
  const events = await source.append((state) => {
    const key = payload.subscriptionKey;
    const existing = key === undefined ? undefined : state?.subscriptions.outbound.byKey[key];
    if (existing && jsonEqual(existing.configuration, { ...payload, subscriptionKey: key })) {
      existingAt = existing.configuredAtOffset;
      return [];
    }
    return [publicInput(input)];
  }, 'public');
  if (existingAt !== undefined) {
    return { subscriptionKey: payload.subscriptionKey!, subscriptionConfiguredEvent: eventAt(source, existingAt) };
  }
  const event = events[0]!;
  return {
    subscriptionKey: effectiveKey(event.payload as { subscriptionKey?: string }, event.offset),
    subscriptionConfiguredEvent: event,
  };
}

export async function unsubscribeFromEvents(
  actorOf: ActorOf,
  receivingPath: string,
  body: { sourceStreamPath: string; subscriptionKey: string },
): Promise<{ status: 'removed'; subscriptionRemovedEvent: CommittedEvent } | { status: 'already-absent' }> {
  const source = actorOf(canonicalizePath(body.sourceStreamPath));
  const key = body.subscriptionKey;
  const targetsUs = (state: CoreState | null) => {
    const receiver = state?.subscriptions.outbound.byKey[key]?.configuration.receiver;
    return receiver?.action === 'copy-to-stream' && receiver.receivingStreamPath === receivingPath;
  };
  let removed = false;
  const events = await source.append((state) => {
    if (!targetsUs(state)) return [];
    removed = true;
    return [publicInput({ type: EventType.subscriptionRemoved, payload: { subscriptionKey: key, reason: 'requested' } })];
  }, 'public');
  return removed ? { status: 'removed', subscriptionRemovedEvent: events[0]! } : { status: 'already-absent' };
}

function requireEntry(state: CoreState | null, key: string, path: string) {
  const entry = state?.subscriptions.outbound.byKey[key];
  if (!entry) throw new RivuletError('NOT_FOUND', `no subscription "${key}" on ${path}`, { subscriptionKey: key });
  return entry;
}

export async function setSubscriptionCursor(
  actor: StreamActor,
  body: { subscriptionKey: string; afterOffset: number },
): Promise<{ event: CommittedEvent }> {
  const [event] = await actor.append((state) => {
    requireEntry(state, body.subscriptionKey, actor.path);
    return [publicInput({ type: EventType.subscriptionCursorSet, payload: { ...body } })];
  }, 'public');
  return { event: event! };
}

export async function resumeSubscription(actor: StreamActor, body: { subscriptionKey: string }): Promise<{ event: CommittedEvent | null }> {
  let halted = false;
  const events = await actor.append((state) => {
    halted = requireEntry(state, body.subscriptionKey, actor.path).deliveryHalted !== undefined;
    return halted ? [publicInput({ type: EventType.subscriptionDeliveryResumed, payload: { subscriptionKey: body.subscriptionKey } })] : [];
  }, 'public');
  return { event: halted ? events[0]! : null };
}

export async function setSubscriptionCursorAndResume(
  actor: StreamActor,
  body: { subscriptionKey: string; afterOffset: number },
): Promise<{ cursorSet: CommittedEvent; resumed: CommittedEvent | null }> {
  let halted = false;
  const events = await actor.append((state) => {
    halted = requireEntry(state, body.subscriptionKey, actor.path).deliveryHalted !== undefined;
    const inputs = [publicInput({ type: EventType.subscriptionCursorSet, payload: { ...body } })];
    if (halted) inputs.push(publicInput({ type: EventType.subscriptionDeliveryResumed, payload: { subscriptionKey: body.subscriptionKey } }));
    return inputs;
  }, 'public');
  return { cursorSet: events[0]!, resumed: halted ? events[1]! : null };
}
