import { EventType, type CommittedEvent } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { lifecycleLine, lifecycleLog } from './lifecycle-log.js';

const stream = { projectId: null, path: '/s' };
const event = (type: string, payload: object, extra: Partial<CommittedEvent> = {}): CommittedEvent =>
  ({ path: '/s', offset: 9, createdAt: '2030-01-01T00:00:00.000Z', type, payload, ...extra }) as CommittedEvent;

describe('lifecycleLine', () => {
  it('a halt names its key, cursor, attempts and error; open mode has no project field', () => {
    const halt = event(EventType.subscriptionDeliveryHalted, { subscriptionKey: 'k', reason: 'delivery-failed', afterOffset: 4, attempts: 15, error: 'e' });
    expect(lifecycleLine(stream, halt)).toEqual([
      'subscription halted',
      { stream: '/s', offset: 9, subscriptionKey: 'k', afterOffset: 4, attempts: 15, error: 'e' },
    ]);
  });

  it('a copied fact is data on its receiving stream and is not logged', () => {
    const copied = event(EventType.subscriptionDeliveryHalted, { subscriptionKey: 'k', afterOffset: 4 }, { source: { copiedFrom: [] } as never });
    expect(lifecycleLine(stream, copied)).toBeUndefined();
  });

  it('an error-occurred that is neither a skip nor a drop audit, and other core events, are not logged', () => {
    expect(lifecycleLine(stream, event(EventType.errorOccurred, { message: 'm' }, { idempotencyKey: 'rivulet-internal/condition:["k",2,3]' }))).toBeUndefined();
    expect(lifecycleLine(stream, event(EventType.errorOccurred, { message: 'm' }))).toBeUndefined();
    expect(lifecycleLine(stream, event(EventType.subscriptionConfigured, { subscriptionKey: 'k' }))).toBeUndefined();
  });

  it('a drop of both reasons carries the count of each', () => {
    const drop = { reason: 'cycle', sourcePath: '/a', subscriptionKey: 'k', count: 3, firstOffset: 2, lastOffset: 5, reasons: { cycle: 2, 'hop-limit': 1 } };
    expect(lifecycleLine(stream, event(EventType.errorOccurred, { message: 'm', drop }, { idempotencyKey: 'rivulet-internal/drop:[]' }))).toEqual([
      'copied events dropped',
      { stream: '/s', offset: 9, sourcePath: '/a', subscriptionKey: 'k', reason: 'cycle', count: 3, firstOffset: 2, lastOffset: 5, reasons: { cycle: 2, 'hop-limit': 1 } },
    ]);
  });
});

describe('lifecycleLog', () => {
  it('is nothing at all over a logger without info', () => {
    expect(lifecycleLog({ error: () => undefined })).toBeUndefined();
  });

  it('logs the facts of a commit in offset order and skips ordinary events', () => {
    const lines: string[] = [];
    const log = lifecycleLog({ error: () => undefined, info: (message, fields) => lines.push(`${message} ${String(fields?.offset)}`) })!;
    log.committed(stream, [
      event('app/x', {}, { offset: 1 }),
      event(EventType.subscriptionDeliveryResumed, { subscriptionKey: 'k' }, { offset: 2 }),
      event(EventType.subscriptionCursorSet, { subscriptionKey: 'k', afterOffset: 0 }, { offset: 3 }),
    ]);
    expect(lines).toEqual(['subscription resumed 2', 'subscription cursor set 3']);
  });
});
