/**
 * Opening a live connection (protocol §19.1–19.3): the options judged statelessly first, then the
 * coordinates judged against the very state the opening facts are committed on, inside the actor's
 * synchronous section — so nothing is replaced unless everything holds, and the same key is
 * handed from the old callback to the new one with no event in between (protocol §19.5).
 */
import {
  EventType,
  GENERATED_KEY_PREFIX,
  RivuletError,
  type CommittedEvent,
  type ConnectionOpenedPayload,
  type CoreState,
  type JsonObject,
  type OpenConnectionOptions,
} from '@rivulet/contract';
import type { AppendInput } from '../../core/append-input.js';
import type { ExpressionLimits } from '../../core/expression-budget.js';
import { checkJsonata } from '../../core/jsonata.js';
import { closedFact, DEFAULT_BATCH_EVENTS, type ConnectionSpec } from './connection-spec.js';

/** The options as a connection runs them; refuses combinations that mean nothing (INVALID_INPUT). */
export function resolveSpec(options: OpenConnectionOptions, kind: ConnectionSpec['kind'], generateKey: () => string, expressionLimits?: ExpressionLimits): ConnectionSpec {
  const key = options.connectionKey ?? generateKey();
  if (options.connectionKey !== undefined && key.startsWith(GENERATED_KEY_PREFIX)) {
    throw new RivuletError(
      'INVALID_INPUT',
      `connection keys starting "${GENERATED_KEY_PREFIX}" are reserved for generated subscription keys ("${key}")`,
    );
  }
  const events = options.events ?? true;
  if (!events) {
    for (const name of ['replayAfterOffset', 'maxReplayOffsetGap', 'maxDeliveryEvents'] as const) {
      if (options[name] !== undefined) {
        throw new RivuletError('INVALID_INPUT', `${name} means nothing with events: false (a state-only connection replays and batches no events)`);
      }
    }
  }
  if (options.maxReplayOffsetGap !== undefined && options.replayAfterOffset === undefined) {
    throw new RivuletError('INVALID_INPUT', 'maxReplayOffsetGap bounds a replay: it needs replayAfterOffset');
  }
  if (options.filter?.jsonataCondition !== undefined) checkJsonata(options.filter.jsonataCondition, 'filter.jsonataCondition', expressionLimits);
  return {
    key,
    kind,
    replayAfterOffset: options.replayAfterOffset,
    filter: options.filter,
    events,
    state: options.state ?? true,
    maxDeliveryEvents: options.maxDeliveryEvents ?? DEFAULT_BATCH_EVENTS,
  };
}

/**
 * The stateful checks, against the state and head the opening facts will be committed on:
 * the lifetime (`expectedStreamId`, CONFLICT), the replay position (`replayAfterOffset` within the
 * head, the gap within `maxReplayOffsetGap`, INVALID_INPUT) and the key (held by a subscription:
 * CONFLICT, protocol §19.2).
 */
export function checkCoordinates(
  path: string,
  state: CoreState | null,
  head: number,
  options: OpenConnectionOptions,
  key: string,
): void {
  const streamId = state?.streamId ?? null;
  if (options.expectedStreamId !== undefined && options.expectedStreamId !== streamId) {
    throw new RivuletError(
      'CONFLICT',
      streamId === null
        ? `${path} does not exist (expected the lifetime ${options.expectedStreamId})`
        : `${path} is now the lifetime ${streamId}, not the expected ${options.expectedStreamId}: it was destroyed and recreated`,
      { expectedStreamId: options.expectedStreamId, streamId },
    );
  }
  const replay = options.replayAfterOffset;
  if (replay !== undefined) {
    if (replay > head) {
      throw new RivuletError(
        'INVALID_INPUT',
        `replayAfterOffset ${replay} is beyond this stream's current maximum offset ${head}`,
        { replayAfterOffset: replay, streamMaxOffset: head },
      );
    }
    const gap = options.maxReplayOffsetGap;
    if (gap !== undefined && head - replay > gap) {
      throw new RivuletError(
        'INVALID_INPUT',
        `replaying after offset ${replay} would replay ${head - replay} offsets of ${path} (head ${head}), more than maxReplayOffsetGap ${gap}`,
        { replayAfterOffset: replay, streamMaxOffset: head, maxReplayOffsetGap: gap },
      );
    }
  }
  if (state?.subscriptions.outbound.byKey[key]) {
    throw new RivuletError('CONFLICT', `connection key "${key}" is held by a subscription on ${path}`, { connectionKey: key });
  }
}

export function openedFact(spec: ConnectionSpec, options: OpenConnectionOptions, extra: { timeoutMs?: number } = {}): AppendInput {
  const payload: ConnectionOpenedPayload = { connectionKey: spec.key, kind: spec.kind };
  if (spec.replayAfterOffset !== undefined) payload.replayAfterOffset = spec.replayAfterOffset;
  if (options.expectedStreamId !== undefined) payload.expectedStreamId = options.expectedStreamId;
  if (spec.filter !== undefined) payload.filter = spec.filter;
  if (!spec.events) payload.events = false;
  if (!spec.state) payload.state = false;
  if (options.maxDeliveryEvents !== undefined) payload.maxDeliveryEvents = options.maxDeliveryEvents;
  if (extra.timeoutMs !== undefined) payload.timeoutMs = extra.timeoutMs;
  return { type: EventType.connectionOpened, payload: payload as unknown as JsonObject };
}

/** The facts of one opening: the replaced connection's close (when the key was held), then the open. */
export function openingFacts(spec: ConnectionSpec, options: OpenConnectionOptions, replacing: boolean, extra: { timeoutMs?: number } = {}): AppendInput[] {
  const facts: AppendInput[] = [];
  if (replacing) facts.push(closedFact(spec.key, { reason: 'replaced' }));
  facts.push(openedFact(spec, options, extra));
  return facts;
}

/** The connection-opened event among the committed results of an opening. */
export function openedEvent(results: readonly CommittedEvent[]): CommittedEvent {
  return results[results.length - 1]!;
}
