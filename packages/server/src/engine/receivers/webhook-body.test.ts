/**
 * webhook-body.ts writes the webhook body from the stored texts of its events; it must be the very
 * bytes that serialising the envelope of core/webhook-envelope.ts gives (protocol §17.1), for
 * events as the append path stores them and reads them back: unicode of every kind, keys that
 * JSON orders specially, large payloads, optional fields present and absent, and transforms.
 */
import { EventType, type CommittedEvent } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { buildEvent } from '../../core/decide-append.js';
import { defaultExpressionLimits, expressionBudget } from '../../core/expression-budget.js';
import { shapeEvent } from '../../core/filter.js';
import { webhookEnvelope, type WebhookStamp } from '../../core/webhook-envelope.js';
import { committedJson, rememberJson } from '../event-json.js';
import { envelopeEventJson, webhookBody } from './webhook-body.js';

const budget = expressionBudget(defaultExpressionLimits, () => Date.now());

/** An event as a read gives it back: parsed from the text the append path stored, the text remembered. */
function stored(offset: number, input: Parameters<typeof buildEvent>[3], path = '/shop/orders'): CommittedEvent {
  const json = JSON.stringify(buildEvent(path, offset, '2026-12-02T04:00:00.123Z', input));
  const event = JSON.parse(json) as CommittedEvent;
  rememberJson(event, json);
  return event;
}

const configured = stored(2, {
  type: EventType.subscriptionConfigured,
  payload: { subscriptionKey: 'k', receiver: { action: 'webhook-post', url: 'https://hooks.example.com/in?x=1', delivery: { start: 'beginning', onFailingEvent: 'skip' } } },
});

function stamp(overrides: Partial<WebhookStamp> = {}): WebhookStamp {
  return {
    projectId: 'shop',
    path: '/shop/orders',
    streamId: 'sid-1',
    streamCreatedAt: '2026-11-30T08:00:00.000Z',
    subscriptionKey: 'k',
    cursorChangedAtSourceOffset: 2,
    deliveryId: 'delivery:["sid-1","k",2,7,7]',
    attempt: 1,
    ...overrides,
  };
}

const big = (n: number) => Array.from({ length: n }, (_, i) => ({ i, text: `line ${i} ✓ ünïcödé 🚀 "quoted" \\ back\nslash`, f: i / 7, neg: -i, deep: { a: [i, null, true, false] } }));

/** Inputs of every shape the body must reproduce. */
const inputs: Array<[string, Parameters<typeof buildEvent>[3]]> = [
  ['type only', { type: 'app/x' }],
  ['payload and metadata', { type: 'shop/order-created', payload: { id: 7, total: 12.5 }, metadata: { by: 'alice' } }],
  ['idempotency key and source', { type: 'app/x', payload: { n: 1 }, idempotencyKey: 'order-7', source: { path: '/other', offset: 3, streamId: 'sid-0' } as never }],
  ['non-ASCII text and emoji', { type: 'app/ünï', payload: { name: 'Zoë 東京 🚀', emptyString: '', rtl: 'مرحبا' }, metadata: { 'ключ': 'значение' } }],
  ['escapes and control characters', { type: 'app/x', payload: { s: 'tab\there "q" \\ / \u0000 \u001f \u2028 \u2029 \ud7ff' } }],
  ['lone surrogates', { type: 'app/x', payload: { lone: 'a\ud800b', low: '\udfff', pair: '\ud83d\ude80' } }],
  ['keys JSON orders specially', { type: 'app/x', payload: { b: 1, 10: 'ten', 2: 'two', a: { 1: 1, z: 0 }, __proto__x: 1, '': 'empty key' } }],
  ['numbers', { type: 'app/x', payload: { big: 1e21, small: 1e-7, max: Number.MAX_SAFE_INTEGER, neg: -0.5, zero: 0, exp: 123456789.123 } }],
  ['a large payload', { type: 'app/big', payload: { rows: big(4000) } }],
];

describe('webhookBody', () => {
  for (const [name, input] of inputs) {
    it(`is the serialised envelope, byte for byte: ${name}`, async () => {
      const event = stored(7, input);
      const shaped = await shapeEvent(undefined, event, budget);
      const before = JSON.stringify(webhookEnvelope(stamp(), configured, event, shaped));
      const { body, id } = webhookBody(stamp(), configured, event, shaped);
      expect(body).toBe(before);
      expect(id).toBe('delivery:["sid-1","k",2,7,7]');
      // The event part is the stored text, not a new serialisation.
      expect(envelopeEventJson(event, shaped)).toBe(committedJson(event));
    });
  }

  it('is the serialised envelope for a key that needs escapes in the header-safe delivery id', async () => {
    const key = 'clé "π" 🚀';
    const s = stamp({ subscriptionKey: key, deliveryId: `delivery:${JSON.stringify(['sid-1', key, 2, 7, 7])}`, attempt: 4 });
    const event = stored(7, inputs[3]![1]);
    const shaped = await shapeEvent(undefined, event, budget);
    const { body, id } = webhookBody(s, configured, event, shaped);
    expect(body).toBe(JSON.stringify(webhookEnvelope(s, configured, event, shaped)));
    expect(id).toBe('delivery:["sid-1","cl\\u00e9 \\"\\u03c0\\" \\ud83d\\ude80",2,7,7]');
    expect(JSON.parse(body)).toMatchObject({ deliveryId: id, subscriptionKey: key, attempt: 4 });
  });

  it('serialises an event a transform shaped (type, payload or metadata), as the envelope does', async () => {
    const event = stored(7, { type: 'shop/order-created', payload: { id: 7, total: 12 }, metadata: { by: 'alice' }, idempotencyKey: 'order-7' });
    for (const transform of ['{"type": "shaped/" & type}', '{"payload": {"total": payload.total * 2, "π": "ü"}}', '{"metadata": {"via": "🚀"}}', '{"type": type}']) {
      const shaped = await shapeEvent(transform, event, budget);
      const { body } = webhookBody(stamp(), configured, event, shaped);
      expect(body).toBe(JSON.stringify(webhookEnvelope(stamp(), configured, event, shaped)));
    }
    const shaped = await shapeEvent('{"payload": {"total": 1}}', event, budget);
    expect(envelopeEventJson(event, shaped)).not.toBe(committedJson(event));
    expect(JSON.parse(envelopeEventJson(event, shaped))).toEqual({ ...event, payload: { total: 1 } });
  });

  it('is the serialised envelope for events that carry no remembered text (serialised on demand)', async () => {
    const event: CommittedEvent = { path: '/shop/orders', offset: 9, createdAt: '2026-12-02T04:00:00.000Z', type: 'app/x', payload: { é: 'ü', n: [1, 2] } };
    const plainConfigured = JSON.parse(committedJson(configured)) as CommittedEvent;
    const shaped = await shapeEvent(undefined, event, budget);
    expect(webhookBody(stamp(), plainConfigured, event, shaped).body).toBe(JSON.stringify(webhookEnvelope(stamp(), plainConfigured, event, shaped)));
  });
});
