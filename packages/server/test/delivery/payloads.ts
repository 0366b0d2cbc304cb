/**
 * The payloads of the delivery engine tests (test/delivery/*.test.ts): a caller event, the
 * subscription-configured payloads of the three receiver actions, and the keys a runtime row may
 * have (protocol §11).
 */
import type { EventInput, SubscriptionConfiguredPayload } from '@rivulet/contract';
import { expect } from 'vitest';
import { RUNTIME_FIELDS } from '../helpers/subscriptions.js';

export const x = (n: number, extra: Partial<EventInput> = {}): EventInput => ({ type: 'app/x', payload: { n }, ...extra });

type Start = 'beginning' | 'now';

export function itxSub(
  key: string,
  options: { start?: Start; onFailingEvent?: 'halt' | 'skip'; eventTypes?: string[]; condition?: string; transform?: string } = {},
): SubscriptionConfiguredPayload {
  const filter: SubscriptionConfiguredPayload['filter'] = {};
  if (options.eventTypes) filter.eventTypes = options.eventTypes;
  if (options.condition) filter.jsonataCondition = options.condition;
  return {
    subscriptionKey: key,
    ...(options.eventTypes || options.condition ? { filter } : {}),
    receiver: {
      action: 'itx-call',
      expression: ['workers', ['get', 'w'], 'processEventBatch'],
      ...(options.transform ? { jsonataTransform: options.transform } : {}),
      delivery: { start: options.start ?? 'now', onFailingEvent: options.onFailingEvent ?? 'halt' },
    },
  };
}

export function webhookSub(
  key: string,
  options: { start?: Start; onFailingEvent?: 'halt' | 'skip'; eventTypes?: string[]; url?: string; transform?: string } = {},
): SubscriptionConfiguredPayload {
  return {
    subscriptionKey: key,
    ...(options.eventTypes ? { filter: { eventTypes: options.eventTypes } } : {}),
    receiver: {
      action: 'webhook-post',
      url: options.url ?? 'http://127.0.0.1:9/hook',
      ...(options.transform ? { jsonataTransform: options.transform } : {}),
      delivery: { start: options.start ?? 'now', onFailingEvent: options.onFailingEvent ?? 'halt' },
    },
  };
}

export function copySub(key: string, receivingStreamPath: string, options: { start?: Start; eventTypes?: string[]; transform?: string } = {}): SubscriptionConfiguredPayload {
  return {
    subscriptionKey: key,
    ...(options.eventTypes ? { filter: { eventTypes: options.eventTypes } } : {}),
    receiver: {
      action: 'copy-to-stream',
      receivingStreamPath,
      ...(options.transform ? { jsonataTransform: options.transform } : {}),
      delivery: { start: options.start ?? 'beginning', onFailingEvent: 'halt' },
    },
  };
}

/** Only the runtime fields of protocol §11 (helpers/subscriptions.ts RUNTIME_FIELDS), never configuration. */
export function expectOnlyRuntimeKeys(view: object): void {
  for (const key of Object.keys(view)) expect(RUNTIME_FIELDS).toContain(key);
}
