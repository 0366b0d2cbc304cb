/**
 * The subscription form's fields and the `subscription-configured` payload they stand for (protocol
 * §9.1), both ways: the form builds a payload for the dry run and the configure, and an existing
 * configuration fills the form for editing. Pure, so Node tests cover it; the server judges the
 * rest (JSONata, URLs, expressions) and the form shows its answer.
 */
import { commaList, type SubscriptionConfiguration } from './format.js';

export const FORM_ACTIONS = ['copy-to-stream', 'webhook-post', 'itx-call', 'processor-wake'] as const;
export type FormAction = (typeof FORM_ACTIONS)[number];

export interface SubscriptionFields {
  subscriptionKey: string;
  description: string;
  action: FormAction;
  /** The receiving stream path (copy) or the URL (webhook). */
  target: string;
  /** The ITX expression as JSON (itx-call, processor-wake). */
  expression: string;
  /** A comma list; empty matches every type. */
  eventTypes: string;
  jsonataCondition: string;
  jsonataTransform: string;
  start: 'beginning' | 'now';
  onFailingEvent: 'halt' | 'skip';
}

export const EMPTY_FIELDS: SubscriptionFields = {
  subscriptionKey: '',
  description: '',
  action: 'copy-to-stream',
  target: '',
  expression: '',
  eventTypes: '',
  jsonataCondition: '',
  jsonataTransform: '',
  start: 'beginning',
  onFailingEvent: 'halt',
};

export type BuiltPayload = { ok: true; payload: Record<string, unknown> } | { ok: false; field: keyof SubscriptionFields; error: string };

/** The payload of a `subscription-configured` event, or which field is missing or not JSON. */
export function buildPayload(fields: SubscriptionFields): BuiltPayload {
  const payload: Record<string, unknown> = {};
  const key = fields.subscriptionKey.trim();
  if (key === '') return { ok: false, field: 'subscriptionKey', error: 'a subscription key is needed' };
  payload.subscriptionKey = key;
  if (fields.description.trim() !== '') payload.description = fields.description.trim();
  const filter: Record<string, unknown> = {};
  const types = commaList(fields.eventTypes);
  if (types.length > 0) filter.eventTypes = types;
  if (fields.jsonataCondition.trim() !== '') filter.jsonataCondition = fields.jsonataCondition;
  if (Object.keys(filter).length > 0) payload.filter = filter;

  const transform = fields.jsonataTransform.trim() === '' ? {} : { jsonataTransform: fields.jsonataTransform };
  const delivery = { start: fields.start, onFailingEvent: fields.action === 'copy-to-stream' ? 'halt' : fields.onFailingEvent };
  switch (fields.action) {
    case 'copy-to-stream':
      if (fields.target.trim() === '') return { ok: false, field: 'target', error: 'a receiving stream path is needed' };
      payload.receiver = { action: 'copy-to-stream', receivingStreamPath: fields.target.trim(), ...transform, delivery };
      break;
    case 'webhook-post':
      if (fields.target.trim() === '') return { ok: false, field: 'target', error: 'a webhook URL is needed' };
      payload.receiver = { action: 'webhook-post', url: fields.target.trim(), ...transform, delivery };
      break;
    case 'itx-call':
    case 'processor-wake': {
      let expression: unknown;
      try {
        expression = JSON.parse(fields.expression);
      } catch (error) {
        return { ok: false, field: 'expression', error: `the expression is not JSON: ${error instanceof Error ? error.message : String(error)}` };
      }
      payload.receiver = fields.action === 'itx-call' ? { action: 'itx-call', expression, ...transform, delivery } : { action: 'processor-wake', expression };
      break;
    }
  }
  return { ok: true, payload };
}

/** The form's fields for an existing configuration (editing it). */
export function fieldsFrom(key: string, configuration: SubscriptionConfiguration): SubscriptionFields {
  const receiver = configuration.receiver;
  const fields: SubscriptionFields = {
    ...EMPTY_FIELDS,
    subscriptionKey: key,
    description: configuration.description ?? '',
    action: receiver.action,
    eventTypes: configuration.filter?.eventTypes?.join(', ') ?? '',
    jsonataCondition: configuration.filter?.jsonataCondition ?? '',
  };
  switch (receiver.action) {
    case 'copy-to-stream':
      fields.target = receiver.receivingStreamPath;
      break;
    case 'webhook-post':
      fields.target = receiver.url;
      break;
    case 'itx-call':
    case 'processor-wake':
      fields.expression = JSON.stringify(receiver.expression);
      break;
  }
  if (receiver.action !== 'processor-wake') {
    fields.jsonataTransform = receiver.jsonataTransform ?? '';
    fields.start = receiver.delivery.start;
    fields.onFailingEvent = receiver.delivery.onFailingEvent;
  }
  return fields;
}
