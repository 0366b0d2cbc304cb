import { EventType, type CommittedEvent } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { shapeEvent } from './filter.js';
import { headerSafeId, shapedCommittedEvent, webhookEnvelope, type WebhookStamp } from './webhook-envelope.js';
import { defaultExpressionLimits, expressionBudget } from './expression-budget.js';

const budget = expressionBudget(defaultExpressionLimits, () => Date.now());

const source: CommittedEvent = {
  path: '/shop/orders',
  offset: 7,
  createdAt: '2026-11-30T10:00:00.000Z',
  type: 'shop/order-created',
  payload: { id: 7, total: 12 },
  metadata: { by: 'alice' },
  idempotencyKey: 'order-7',
};

const configured: CommittedEvent = {
  path: '/shop/orders',
  offset: 2,
  createdAt: '2026-11-30T09:00:00.000Z',
  type: EventType.subscriptionConfigured,
  payload: { subscriptionKey: 'k', receiver: { action: 'webhook-post', url: 'https://hooks.example.com/in' } },
};

const stamp: WebhookStamp = {
  projectId: 'shop',
  path: '/shop/orders',
  streamId: 'sid-1',
  streamCreatedAt: '2026-11-30T08:00:00.000Z',
  subscriptionKey: 'k',
  cursorChangedAtSourceOffset: 2,
  deliveryId: 'delivery:["sid-1","k",2,7,7]',
  attempt: 3,
};

describe('webhookEnvelope', () => {
  it('carries exactly the fields of protocol §17.1, in that order', async () => {
    const envelope = webhookEnvelope(stamp, configured, source, await shapeEvent(undefined, source, budget));
    expect(Object.keys(envelope)).toEqual([
      'projectId',
      'path',
      'streamId',
      'streamCreatedAt',
      'subscriptionKey',
      'cursorChangedAtSourceOffset',
      'deliveryId',
      'attempt',
      'configuredEvent',
      'event',
    ]);
    expect(envelope).toEqual({ ...stamp, configuredEvent: configured, event: source });
  });

  it('a transform shapes type, payload and metadata; coordinates stay the source event’s', async () => {
    const shaped = await shapeEvent('{"type": "hook/" & type, "payload": {"orderId": payload.id}}', source, budget);
    const envelope = webhookEnvelope(stamp, configured, source, shaped);
    expect(envelope.event).toEqual({
      path: '/shop/orders',
      offset: 7,
      createdAt: '2026-11-30T10:00:00.000Z',
      type: 'hook/shop/order-created',
      payload: { orderId: 7 },
      metadata: { by: 'alice' },
      idempotencyKey: 'order-7',
    });
  });

  it('keeps provenance and leaves absent payload and metadata absent', () => {
    const copy: CommittedEvent = { path: '/r', offset: 3, createdAt: 'x', type: 't', source: { copiedFrom: [{ path: '/a', offset: 1 }] } as never };
    const out = shapedCommittedEvent(copy, { type: 't2' });
    expect(out).toEqual({ path: '/r', offset: 3, createdAt: 'x', type: 't2', source: copy.source });
    expect('payload' in out || 'metadata' in out).toBe(false);
  });
});

describe('headerSafeId', () => {
  it('leaves printable ASCII alone', () => {
    expect(headerSafeId(stamp.deliveryId)).toBe(stamp.deliveryId);
  });

  it('escapes everything else as JSON \\u escapes, so the id is still the same JSON value', () => {
    const id = `delivery:${JSON.stringify(['sid', 'bestellung-ü-🌊', 2, 7, 7])}`;
    const safe = headerSafeId(id);
    expect(safe).toMatch(/^[\x20-\x7e]+$/);
    expect(safe).toBe('delivery:["sid","bestellung-\\u00fc-\\ud83c\\udf0a",2,7,7]');
    expect(JSON.parse(safe.slice('delivery:'.length))).toEqual(JSON.parse(id.slice('delivery:'.length)));
  });
});
