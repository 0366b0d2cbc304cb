/** The subscription form's payload, both ways (src/subscription-form.ts). */
import { describe, expect, it } from 'vitest';
import { EMPTY_FIELDS, buildPayload, fieldsFrom, type SubscriptionFields } from '../src/subscription-form.js';

const fields = (extra: Partial<SubscriptionFields>): SubscriptionFields => ({ ...EMPTY_FIELDS, subscriptionKey: 'k', target: '/b', ...extra });

describe('subscription form', () => {
  it('builds a copy with its filter and transform, and never lets a copy skip', () => {
    expect(buildPayload(fields({ eventTypes: ' a/x, ,b/y ', jsonataCondition: 'payload.n > 1', jsonataTransform: '{"type": type}', onFailingEvent: 'skip' }))).toEqual({
      ok: true,
      payload: {
        subscriptionKey: 'k',
        filter: { eventTypes: ['a/x', 'b/y'], jsonataCondition: 'payload.n > 1' },
        receiver: { action: 'copy-to-stream', receivingStreamPath: '/b', jsonataTransform: '{"type": type}', delivery: { start: 'beginning', onFailingEvent: 'halt' } },
      },
    });
  });

  it('leaves out what is empty', () => {
    expect(buildPayload(fields({ description: '  ' }))).toEqual({
      ok: true,
      payload: { subscriptionKey: 'k', receiver: { action: 'copy-to-stream', receivingStreamPath: '/b', delivery: { start: 'beginning', onFailingEvent: 'halt' } } },
    });
  });

  it('builds a webhook, an ITX call and a processor wake', () => {
    expect(buildPayload(fields({ action: 'webhook-post', target: ' https://h.example/x ', start: 'now', onFailingEvent: 'skip', description: 'd' }))).toEqual({
      ok: true,
      payload: { subscriptionKey: 'k', description: 'd', receiver: { action: 'webhook-post', url: 'https://h.example/x', delivery: { start: 'now', onFailingEvent: 'skip' } } },
    });
    expect(buildPayload(fields({ action: 'itx-call', expression: '["workers", ["get", "b"], "f"]' }))).toEqual({
      ok: true,
      payload: { subscriptionKey: 'k', receiver: { action: 'itx-call', expression: ['workers', ['get', 'b'], 'f'], delivery: { start: 'beginning', onFailingEvent: 'halt' } } },
    });
    expect(buildPayload(fields({ action: 'processor-wake', expression: '["p", "wake"]', jsonataTransform: 'ignored' }))).toEqual({
      ok: true,
      payload: { subscriptionKey: 'k', receiver: { action: 'processor-wake', expression: ['p', 'wake'] } },
    });
  });

  it('names the field that is missing or not JSON', () => {
    expect(buildPayload(fields({ subscriptionKey: ' ' }))).toEqual({ ok: false, field: 'subscriptionKey', error: 'a subscription key is needed' });
    expect(buildPayload(fields({ target: '' }))).toEqual({ ok: false, field: 'target', error: 'a receiving stream path is needed' });
    expect(buildPayload(fields({ action: 'webhook-post', target: '' }))).toEqual({ ok: false, field: 'target', error: 'a webhook URL is needed' });
    const bad = buildPayload(fields({ action: 'itx-call', expression: '["workers",' }));
    expect(bad.ok).toBe(false);
    expect(bad.ok ? null : [bad.field, bad.error.startsWith('the expression is not JSON: ')]).toEqual(['expression', true]);
  });

  it('fills the form from a configuration, and the form gives the same configuration back', () => {
    const configurations = [
      {
        subscriptionKey: 'a',
        description: 'd',
        filter: { eventTypes: ['x', 'y'], jsonataCondition: 'c' },
        receiver: { action: 'copy-to-stream' as const, receivingStreamPath: '/r', jsonataTransform: 't', delivery: { start: 'now' as const, onFailingEvent: 'halt' as const } },
      },
      { subscriptionKey: 'a', receiver: { action: 'webhook-post' as const, url: 'https://h.example/', delivery: { start: 'beginning' as const, onFailingEvent: 'skip' as const } } },
      { subscriptionKey: 'a', receiver: { action: 'itx-call' as const, expression: ['w', ['get', 1], 'f'] as never, delivery: { start: 'now' as const, onFailingEvent: 'skip' as const } } },
      { subscriptionKey: 'a', receiver: { action: 'processor-wake' as const, expression: ['p', 'wake'] as never } },
    ];
    for (const configuration of configurations) {
      expect(buildPayload(fieldsFrom('a', configuration))).toEqual({ ok: true, payload: configuration });
    }
  });
});
