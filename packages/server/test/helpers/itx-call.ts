/**
 * Helpers for the itx-call end-to-end suites (test/e2e/rpc-itx-call*.test.ts): the
 * subscription-configured event of an itx-call to a named worker (protocol §18.4), the
 * error-occurred audits of a stream, and the offsets of worker calls and of events.
 */
import type { CommittedEvent } from '@rivulet/contract';
import type { Api } from './http.js';
import { EventType, allEvents, configured } from './subscriptions.js';
import { offsetsOf, type WorkerCall } from '../fixtures/worker-process.js';

const expression = (name: string) => ['workers', ['get', name], 'processEventBatch'];

export function itxCall(
  key: string,
  worker: string,
  options: { onFailingEvent?: 'halt' | 'skip'; start?: 'beginning' | 'now'; jsonataTransform?: string; eventTypes?: string[] } = {},
) {
  return configured({
    subscriptionKey: key,
    filter: { eventTypes: options.eventTypes ?? ['job'] },
    receiver: {
      action: 'itx-call',
      expression: expression(worker),
      ...(options.jsonataTransform !== undefined ? { jsonataTransform: options.jsonataTransform } : {}),
      delivery: { start: options.start ?? 'now', onFailingEvent: options.onFailingEvent ?? 'halt' },
    },
  });
}

export const errorsOn = async (api: Api, path: string) => (await allEvents(api, path)).filter((e) => e.type === EventType.errorOccurred);
export const flat = (calls: readonly WorkerCall[]) => offsetsOf(calls).flat();
export const offsets = (events: readonly CommittedEvent[]) => events.map((e) => e.offset);
