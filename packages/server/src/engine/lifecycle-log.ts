/**
 * The info lines an operator follows (docs/operations.md, "Logs"): a subscription halted, resumed,
 * its cursor set, an event skipped (protocol §12.6), copied events dropped by a cycle or the hop
 * limit (§13.4), a stream destroyed (§2.5). The first five are events committed to a stream (§9),
 * so they are logged from one place, the actors' afterCommit (compose.ts), on every host alike and
 * whoever appended them (the delivery engine, a command, a raw append); a destroy commits no event
 * and is logged from the actors' afterDestroy.
 *
 * What a commit costs here when it holds none of them: one prefix test of each event's type. A
 * copied `stream/*` event is data on its receiving stream (§3.5) and is not logged as a fact of it.
 */
import { CORE_NAMESPACE, EventType, INTERNAL_IDEMPOTENCY_PREFIX, type CommittedEvent } from '@rivulet/contract';
import type { LogFields, Logger } from '../ports/logger.js';

/** The stream a line is about. */
export interface LoggedStream {
  readonly projectId: string | null;
  readonly path: string;
}

export interface LifecycleLog {
  committed(stream: LoggedStream, events: readonly CommittedEvent[]): void;
  destroyed(stream: LoggedStream): void;
}

const SKIP_AUDIT = `${INTERNAL_IDEMPOTENCY_PREFIX}skip:`;
const DROP_AUDIT = `${INTERNAL_IDEMPOTENCY_PREFIX}drop:`;

type Payload = Record<string, unknown>;

function where(stream: LoggedStream, event?: CommittedEvent): Record<string, unknown> {
  const fields: Record<string, unknown> = stream.projectId === null ? {} : { project: stream.projectId };
  fields.stream = stream.path;
  if (event) fields.offset = event.offset;
  return fields;
}

/** The message and fields of one committed event, or undefined for an event that is not logged. */
export function lifecycleLine(stream: LoggedStream, event: CommittedEvent): [string, LogFields] | undefined {
  if (event.source !== undefined) return undefined;
  const p = (event.payload ?? {}) as Payload;
  switch (event.type) {
    case EventType.subscriptionDeliveryHalted:
      return [
        'subscription halted',
        { ...where(stream, event), subscriptionKey: p.subscriptionKey, afterOffset: p.afterOffset, attempts: p.attempts, error: p.error },
      ];
    case EventType.subscriptionDeliveryResumed:
      return ['subscription resumed', { ...where(stream, event), subscriptionKey: p.subscriptionKey }];
    case EventType.subscriptionCursorSet:
      return ['subscription cursor set', { ...where(stream, event), subscriptionKey: p.subscriptionKey, afterOffset: p.afterOffset }];
    case EventType.errorOccurred: {
      const key = event.idempotencyKey;
      if (key?.startsWith(SKIP_AUDIT)) {
        return ['subscription skipped an event', { ...where(stream, event), subscriptionKey: p.subscriptionKey, skippedOffset: p.offset, error: p.error }];
      }
      if (key?.startsWith(DROP_AUDIT)) {
        const drop = (p.drop ?? {}) as Payload;
        return [
          'copied events dropped',
          {
            ...where(stream, event),
            sourcePath: drop.sourcePath,
            subscriptionKey: drop.subscriptionKey,
            reason: drop.reason,
            count: drop.count,
            firstOffset: drop.firstOffset,
            lastOffset: drop.lastOffset,
            ...(drop.reasons !== undefined ? { reasons: drop.reasons } : {}),
          },
        ];
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

/** The lifecycle lines over a logger; without an info level there is nothing to do at all. */
export function lifecycleLog(logger: Logger): LifecycleLog | undefined {
  const info = logger.info?.bind(logger);
  if (!info) return undefined;
  return {
    committed(stream, events) {
      for (let i = 0; i < events.length; i++) {
        const event = events[i]!;
        if (!event.type.startsWith(CORE_NAMESPACE)) continue;
        const line = lifecycleLine(stream, event);
        if (line) info(line[0], line[1]);
      }
    },
    destroyed(stream) {
      info('stream destroyed', where(stream));
    },
  };
}
