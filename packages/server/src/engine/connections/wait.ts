/**
 * `waitForEvent` (protocol §19.7): a temporary connection of kind `wait`
 * that answers the first matching event — a durable one after `afterOffset` when given (replayed
 * from storage), else the first live one — or `TIMEOUT` with a message saying what it saw. Like
 * any connection it records one `connection-opened` and one `connection-closed` (reason `matched`,
 * `timed-out` or `cancelled`), and the answer is given once the close is recorded.
 */
import {
  RivuletError,
  type CommittedEvent,
  type ConnectionClosed,
  type SubscriptionFilter,
  type WaitForEventBody,
  type WaitForEventResponse,
} from '@rivulet/contract';
import { whenAborted } from '../../core/when-aborted.js';
import type { StreamActor } from '../actor.js';
import type { ConnectionHub } from './hub.js';
import type { LiveConnection } from './connection.js';

type Ending = { kind: 'matched' } | { kind: 'timeout' } | { kind: 'aborted' } | { kind: 'closed'; closed: ConnectionClosed };

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** The TIMEOUT message: how many events it saw, and what they lacked. */
function timeoutError(actor: StreamActor, body: WaitForEventBody, connection: LiveConnection): RivuletError {
  const start = body.afterOffset ?? connection.openedAt;
  const head = actor.durableHead;
  // Its own connection-opened fact lies inside the range when it replayed from afterOffset.
  const seen = Math.max(0, head - start - (body.afterOffset !== undefined && connection.openedAt > start ? 1 : 0));
  let message = `waitForEvent on ${actor.path} timed out after ${body.timeoutMs} ms: `;
  message += seen === 0 ? `no event was appended after offset ${start}` : `it saw ${plural(seen, 'event')} after offset ${start} (through offset ${head})`;
  if (seen > 0) {
    const types = body.eventTypes;
    if (body.jsonataCondition !== undefined) {
      const typed = types ? `${connection.candidates} of type ${types.join(', ')}` : `${plural(connection.candidates, 'event')} examined`;
      message += `; ${typed}, none satisfied the jsonataCondition`;
    } else if (types) {
      message += `, none of type ${types.join(', ')}`;
    }
  }
  return new RivuletError('TIMEOUT', message, {
    timeoutMs: body.timeoutMs,
    afterOffset: start,
    streamMaxOffset: head,
    eventsSeen: seen,
    eventsOfRequestedTypes: connection.candidates,
  });
}

function closedError(actor: StreamActor, closed: ConnectionClosed): RivuletError {
  switch (closed.reason) {
    case 'destroyed':
      return new RivuletError('CONFLICT', `${actor.path} was destroyed while waitForEvent waited`);
    case 'delivery-failed':
      return new RivuletError('INVALID_INPUT', `waitForEvent on ${actor.path} failed: ${closed.error ?? 'the filter failed'}`);
    default:
      return new RivuletError('UNAVAILABLE', `waitForEvent on ${actor.path} ended early (${closed.reason}${closed.error ? `: ${closed.error}` : ''})`);
  }
}

export async function waitForEvent(
  hub: ConnectionHub,
  actor: StreamActor,
  body: WaitForEventBody,
  signal?: AbortSignal,
): Promise<WaitForEventResponse> {
  if (signal?.aborted) throw new RivuletError('UNAVAILABLE', 'waitForEvent was cancelled before it started');
  let filter: SubscriptionFilter | undefined;
  if (body.eventTypes !== undefined || body.jsonataCondition !== undefined) {
    filter = {};
    if (body.eventTypes !== undefined) filter.eventTypes = body.eventTypes;
    if (body.jsonataCondition !== undefined) filter.jsonataCondition = body.jsonataCondition;
  }
  let matched: CommittedEvent | undefined;
  let onMatch!: () => void;
  const matchedPromise = new Promise<Ending>((resolve) => {
    onMatch = () => resolve({ kind: 'matched' });
  });
  const { connection, handle } = await hub.openInternal(
    actor,
    {
      ...(body.afterOffset !== undefined ? { replayAfterOffset: body.afterOffset } : {}),
      ...(filter ? { filter } : {}),
      state: false,
      maxDeliveryEvents: 1,
    },
    (batch) => {
      const event = batch.events[0];
      if (event && !matched) {
        matched = event;
        onMatch();
      }
    },
    { kind: 'wait', timeoutMs: body.timeoutMs },
  );
  let cancelTimer: (() => void) | undefined;
  let stopListening: (() => void) | undefined;
  const ending = await Promise.race<Ending>([
    matchedPromise,
    handle.closed.then((closed): Ending => ({ kind: 'closed', closed })),
    new Promise<Ending>((resolve) => {
      cancelTimer = hub.timer.set(body.timeoutMs, () => resolve({ kind: 'timeout' }));
    }),
    new Promise<Ending>((resolve) => {
      // The caller may have gone while the opening fact was made durable: the wait is listed
      // from its commit, so a caller can see it and leave before this line.
      stopListening = whenAborted(signal, () => resolve({ kind: 'aborted' }));
    }),
  ]);
  cancelTimer?.();
  stopListening?.();
  if (matched) {
    await handle.close('matched');
    return { event: matched };
  }
  switch (ending.kind) {
    case 'timeout': {
      const error = timeoutError(actor, body, connection);
      await handle.close('timed-out');
      throw error;
    }
    case 'aborted':
      await handle.close('cancelled');
      throw new RivuletError('UNAVAILABLE', `waitForEvent on ${actor.path} was cancelled: its caller went away`);
    case 'closed':
      throw closedError(actor, ending.closed);
    case 'matched':
      throw new RivuletError('INTERNAL', 'waitForEvent matched without an event');
  }
}
