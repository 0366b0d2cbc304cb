/**
 * `rivulet subscribe`: configure a copy-to-stream, webhook-post or itx-call subscription on a
 * source stream from flags (appends subscription-configured there, protocol §9.1). Without --key
 * the server generates one (`subscription:<offset>`), which is printed.
 */
import { EventType, type Receiver, type SubscriptionConfiguredPayload } from '@rivulet/contract';
import { UsageError } from '../command.js';
import { connectionUsage, remoteCommand, typesOption, type connectionOptions } from './remote.js';

const usage = `Usage: rivulet subscribe SOURCE (--copy-to PATH | --webhook URL | --itx-call EXPRESSION) [options]

Configures a subscription on the source stream SOURCE and prints its key. Exactly one receiver:
  --copy-to PATH           copy matching events into the stream PATH
  --webhook URL            POST each matching event to URL (signed, protocol §17)
  --itx-call EXPRESSION    call a connected worker: a JSON ITX expression such as
                           '["workers",["get","billing"],"onEvents"]'

Options:
  --key KEY                the subscription key (configuring an existing key replaces it;
                           default: generated from the event's offset)
  --types a,b              only these event types
  --condition JSONATA      only events for which this JSONata expression is truthy
  --transform JSONATA      shape each delivered {type, payload, metadata}
  --start beginning|now    deliver the existing events too, or only new ones (default now)
  --on-failing-event halt|skip
                           webhook and itx-call only: skip an event that keeps failing (default halt)
  --description TEXT       a note kept with the configuration

${connectionUsage}`;

const options = {
  'copy-to': { type: 'string' },
  webhook: { type: 'string' },
  'itx-call': { type: 'string' },
  key: { type: 'string' },
  types: { type: 'string' },
  condition: { type: 'string' },
  transform: { type: 'string' },
  start: { type: 'string' },
  'on-failing-event': { type: 'string' },
  description: { type: 'string' },
} as const;

type Flags = typeof connectionOptions & typeof options;
type Values = { [K in keyof Flags]?: Flags[K]['type'] extends 'boolean' ? boolean : string };

function expressionOption(text: string): unknown[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError(`--itx-call must be a JSON array, like '["workers",["get","name"],"method"]'`);
  }
  if (!Array.isArray(value)) throw new UsageError(`--itx-call must be a JSON array, like '["workers",["get","name"],"method"]'`);
  return value;
}

export function receiverFrom(values: Values): Receiver {
  const chosen = (['copy-to', 'webhook', 'itx-call'] as const).filter((k) => values[k] !== undefined);
  if (chosen.length !== 1) throw new UsageError('give exactly one of --copy-to, --webhook, --itx-call');
  const start = values.start ?? 'now';
  if (start !== 'beginning' && start !== 'now') throw new UsageError(`--start must be beginning or now, got "${start}"`);
  const onFailingEvent = values['on-failing-event'] ?? 'halt';
  if (onFailingEvent !== 'halt' && onFailingEvent !== 'skip') throw new UsageError(`--on-failing-event must be halt or skip, got "${onFailingEvent}"`);
  const transform = values.transform === undefined ? {} : { jsonataTransform: values.transform };
  switch (chosen[0]!) {
    case 'copy-to':
      if (onFailingEvent !== 'halt') throw new UsageError('--on-failing-event skip is for --webhook and --itx-call: an ordered copy cannot skip an event');
      return { action: 'copy-to-stream', receivingStreamPath: values['copy-to']!, ...transform, delivery: { start, onFailingEvent: 'halt' } };
    case 'webhook':
      return { action: 'webhook-post', url: values.webhook!, ...transform, delivery: { start, onFailingEvent } };
    case 'itx-call':
      return { action: 'itx-call', expression: expressionOption(values['itx-call']!) as never, ...transform, delivery: { start, onFailingEvent } };
  }
}

export const subscribeCommand = remoteCommand(
  { name: 'subscribe', summary: 'configure a copy, webhook or itx-call subscription from flags', usage, positionals: ['SOURCE'], options },
  async ({ values, args: [source], io, client }) => {
    const types = typesOption(values.types);
    const filter = { ...(types ? { eventTypes: types } : {}), ...(values.condition !== undefined ? { jsonataCondition: values.condition } : {}) };
    const payload: SubscriptionConfiguredPayload = {
      ...(values.key !== undefined ? { subscriptionKey: values.key } : {}),
      ...(values.description !== undefined ? { description: values.description } : {}),
      ...(Object.keys(filter).length > 0 ? { filter } : {}),
      receiver: receiverFrom(values),
    };
    const [event] = await client().append(source, { type: EventType.subscriptionConfigured, payload: payload as never });
    const key = values.key ?? `subscription:${event!.offset}`;
    io.out(values.json ? JSON.stringify({ subscriptionKey: key, event }) : `subscribed ${key} on ${source} (offset ${event!.offset})`);
    return 0;
  },
);
