/**
 * The dry run of a subscription (protocol §23): what a `subscription-configured` payload would
 * deliver from the source's recent history, appending nothing. The payload is normalised by the
 * rules a configure applies (§9.3); each durable event is judged by delivery's own `judgeEvent`
 * (types, copy exclusions, the condition) and shaped by its own `shapeFor` (the transform) under
 * the stream's expression budget, then put in the form its receiver gets: the event a copy appends
 * (with its hop and idempotency key), a webhook envelope's `event`, an itx-call batch's event, or
 * the committed event for a hosted processor.
 */
import {
  GENERATED_KEY_PREFIX,
  RivuletError,
  SubscriptionAdminLimits,
  type CommittedEvent,
  type OutboundEntry,
  type PreviewSubscriptionBody,
  type PreviewSubscriptionResponse,
} from '@rivulet/contract';
import { planCopies } from '../../core/copy-builder.js';
import { shapedCommittedEvent } from '../../core/webhook-envelope.js';
import type { StreamActor } from '../actor.js';
import { isoAt } from '../actor-commit.js';
import { copyBatchEvent } from '../receivers/copy.js';
import { itxEvent } from '../receivers/itx.js';
import type { DeliveredEvent } from '../receivers/receiver.js';
import { conditionFailureText, judgeEvent } from './collect.js';
import { cut } from './failures.js';
import { shapeFor, transformFailureText } from './prepare.js';

function received(actor: StreamActor, entry: OutboundEntry, delivered: DeliveredEvent): { event: unknown } | { error: string } {
  const receiver = entry.configuration.receiver;
  switch (receiver.action) {
    case 'copy-to-stream': {
      const state = actor.coreState!;
      const plan = planCopies(
        {
          projectId: actor.projectId,
          path: actor.path,
          streamId: state.streamId,
          streamCreatedAt: state.createdAt,
          subscriptionKey: entry.configuration.subscriptionKey,
          cursorChangedAtSourceOffset: entry.configuredAtOffset,
          receivingStreamPath: receiver.receivingStreamPath,
          events: [copyBatchEvent(delivered)],
        },
        { projectId: actor.projectId, path: receiver.receivingStreamPath },
      );
      const drop = plan.dropped[0];
      return drop ? { error: `the receiving stream would drop it: ${drop.reason}` } : { event: plan.inputs[0] };
    }
    case 'webhook-post':
      return { event: shapedCommittedEvent(delivered.event, delivered.shaped) };
    case 'itx-call':
      return { event: itxEvent(delivered) };
    case 'processor-wake':
      return { event: delivered.event };
  }
}

export async function previewSubscription(actor: StreamActor, body: PreviewSubscriptionBody, nowMs: number): Promise<PreviewSubscriptionResponse> {
  const { limit = SubscriptionAdminLimits.previewDefault, afterOffset, ...payload } = body;
  const configuration = actor.normalizeSubscription(payload);
  const head = actor.durableHead;
  if (afterOffset !== undefined && afterOffset > head) {
    throw new RivuletError('INVALID_INPUT', `afterOffset ${afterOffset} is beyond this stream's current maximum offset ${head}`, { afterOffset, maxOffset: head });
  }
  const answer: PreviewSubscriptionResponse = { scanned: 0, matched: 0, deliveries: [], errors: [] };
  const sid = actor.sid;
  if (sid === null || !actor.exists) return answer;
  // As if configured now: the configure event would take the next offset.
  const configuredAtOffset = head + 1;
  const entry: OutboundEntry = {
    configuration: { ...configuration, subscriptionKey: configuration.subscriptionKey ?? `${GENERATED_KEY_PREFIX}${configuredAtOffset}` },
    configuredAtOffset,
    configuredAt: isoAt(nowMs),
  };
  const rows = actor.store.events.range(sid, {
    afterOffset: afterOffset ?? Math.max(0, head - limit),
    beforeOffset: head + 1,
    limit,
    includeEphemeral: false,
  });
  for (const row of rows) {
    const event = JSON.parse(row.json) as CommittedEvent;
    answer.scanned += 1;
    const judged = await judgeEvent(entry, event, actor.expressionBudget);
    if (judged === 'skip') continue;
    if (typeof judged === 'object') {
      answer.errors.push({ offset: event.offset, error: cut(conditionFailureText(event.offset, judged.error)) });
      continue;
    }
    answer.matched += 1;
    let delivered: DeliveredEvent;
    try {
      delivered = { event, shaped: await shapeFor(entry, event, actor.expressionBudget) };
    } catch (error) {
      answer.errors.push({ offset: event.offset, error: cut(transformFailureText(event.offset, error)) });
      continue;
    }
    const out = received(actor, entry, delivered);
    if ('error' in out) answer.errors.push({ offset: event.offset, error: out.error });
    // Plain JSON, as delivery copies what a transform produced before it leaves (protocol §12.3).
    else answer.deliveries.push({ offset: event.offset, event: JSON.parse(JSON.stringify(out.event)) as unknown });
  }
  return answer;
}
