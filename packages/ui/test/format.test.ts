/** The UI's wording of durations, subscriptions, filters and payloads (src/format.ts), and its routes (src/common.ts). */
import { describe, expect, it } from 'vitest';
import { hrefFor, parseRoute, pathFromHash, subscriptionsHref } from '../src/common.js';
import {
  deliverySettings,
  describeAction,
  describeFilter,
  describeItx,
  failedOffset,
  formatDuration,
  formatRelative,
  jsonPreview,
  parsePayload,
  shortId,
  subscriptionStatus,
  worstStatusByStream,
  type OutboundEntry,
  type Receiver,
  type SubscriptionRuntime,
} from '../src/format.js';

const copyEntry = (extra: Partial<OutboundEntry> = {}): OutboundEntry => ({
  configuration: {
    subscriptionKey: 'paid',
    receiver: { action: 'copy-to-stream', receivingStreamPath: '/shop/paid', delivery: { start: 'beginning', onFailingEvent: 'halt' } },
  },
  configuredAtOffset: 4,
  configuredAt: '2026-11-30T10:00:00.000Z',
  ...extra,
});

const run = (extra: Partial<SubscriptionRuntime> = {}): SubscriptionRuntime => ({
  acknowledgedOffset: 4,
  lag: 0,
  attempt: 0,
  nextAttemptAt: null,
  inFlightDeadlineAt: null,
  lastError: null,
  ...extra,
});

describe('format', () => {
  it('words durations and relative times', () => {
    expect(formatDuration(400)).toBe('just now');
    expect(formatDuration(42_000)).toBe('42 s');
    expect(formatDuration(3 * 60_000 + 5_000)).toBe('3 min');
    expect(formatDuration(2 * 3_600_000)).toBe('2 h');
    expect(formatDuration(2 * 3_600_000 + 5 * 60_000)).toBe('2 h 5 min');
    expect(formatDuration(4 * 86_400_000 + 3 * 3_600_000)).toBe('4 d 3 h');
    expect(formatRelative(1_000 + 1_234, 1_000)).toBe('in 1.2 s');
    expect(formatRelative(1_000, 1_000 + 5_000)).toBe('5 s ago');
    expect(formatRelative(1_000, 1_010)).toBe('now');
    expect(shortId('5a4723df-1111-2222-3333-444455556666')).toBe('5a4723df');
  });

  it('describes every receiver action', () => {
    expect(describeAction(copyEntry().configuration.receiver)).toEqual({ kind: 'copy', text: 'copy to /shop/paid', streamPath: '/shop/paid' });
    expect(
      describeAction({ action: 'webhook-post', url: 'https://example.com/hook', delivery: { start: 'now', onFailingEvent: 'skip' } }).text,
    ).toBe('POST https://example.com/hook');
    const itx: Receiver = { action: 'itx-call', expression: ['workers', ['get', 'billing'], 'processEventBatch'], delivery: { start: 'now', onFailingEvent: 'halt' } };
    expect(describeAction(itx).text).toBe('itx workers.get("billing").processEventBatch');
    expect(describeAction({ action: 'processor-wake', expression: ['processors', ['get', 'agents'], 'wakeStreamProcessor'] }).text).toBe(
      'processor processors.get("agents").wakeStreamProcessor',
    );
    expect(describeItx([['root', 1, { a: true }], 'f'])).toBe('root(1, {"a":true}).f');
  });

  it('describes filters and delivery settings', () => {
    expect(describeFilter(undefined)).toBe('all events');
    expect(describeFilter({ eventTypes: ['a', 'b'], jsonataCondition: 'payload.x > 1' })).toBe('types: a, b · when: payload.x > 1');
    expect(deliverySettings({ action: 'processor-wake', expression: ['p', 'w'] })).toEqual({ transform: null, start: null, onFailingEvent: null });
    expect(
      deliverySettings({ action: 'webhook-post', url: 'https://x', jsonataTransform: '{"type": type}', delivery: { start: 'now', onFailingEvent: 'skip' } }),
    ).toEqual({ transform: '{"type": type}', start: 'now', onFailingEvent: 'skip' });
  });

  it('tells healthy, lagging, retrying, halted and starting subscriptions apart', () => {
    expect(subscriptionStatus(copyEntry(), run())).toBe('healthy');
    expect(subscriptionStatus(copyEntry(), run({ lag: 3 }))).toBe('lagging');
    expect(subscriptionStatus(copyEntry(), run({ lag: 3, attempt: 2, lastError: 'x' }))).toBe('retrying');
    expect(subscriptionStatus(copyEntry({ deliveryHalted: { reason: 'delivery-failed', afterOffset: 2, attempts: 3 } }), run({ attempt: 3 }))).toBe('halted');
    expect(subscriptionStatus(copyEntry(), undefined)).toBe('pending');
  });

  it('parses the composer payload: empty, an object, or a clear error', () => {
    expect(parsePayload('  ')).toEqual({ ok: true });
    expect(parsePayload('{"id": 7}')).toEqual({ ok: true, value: { id: 7 } });
    expect(parsePayload('[1]').error).toBe('payload must be a JSON object, not an array');
    expect(parsePayload('null').error).toBe('payload must be a JSON object, not null');
    expect(parsePayload('{"id":').error).toMatch(/^payload is not valid JSON: /);
    expect(jsonPreview({ a: 'x'.repeat(200) }, 20)).toHaveLength(20);
    expect(jsonPreview(undefined)).toBe('');
  });

  it('routes through the location hash, one percent-encoded segment at a time', () => {
    expect(hrefFor('/shop/orders')).toBe('#/shop/orders');
    expect(hrefFor('/')).toBe('#/');
    expect(hrefFor('/a b/ü%')).toBe('#/a%20b/%C3%BC%25');
    expect(pathFromHash('#/a%20b/%C3%BC%25')).toBe('/a b/ü%');
    expect(pathFromHash('#/v1.2/x')).toBe('/v1.2/x');
    expect(pathFromHash('')).toBeNull();
    expect(pathFromHash('#')).toBeNull();
    expect(pathFromHash('#/%E0%A4%A')).toBeNull();
  });
});

describe('subscriptions page route', () => {
  it('reads its filters from the hash and writes them back the same', () => {
    expect(parseRoute('#subscriptions')).toEqual({ kind: 'subscriptions', statuses: [], prefix: '' });
    expect(parseRoute('#subscriptions?status=retrying,halted,bogus&prefix=/shop')).toEqual({ kind: 'subscriptions', statuses: ['halted', 'retrying'], prefix: '/shop' });
    expect(subscriptionsHref({ statuses: ['halted'], prefix: '/shop/a b' })).toBe('#subscriptions?status=halted&prefix=/shop/a+b');
    expect(parseRoute(subscriptionsHref({ statuses: ['halted'], prefix: '/shop/a b' }))).toEqual({ kind: 'subscriptions', statuses: ['halted'], prefix: '/shop/a b' });
    expect(subscriptionsHref()).toBe('#subscriptions');
  });

  it('leaves stream routes and the overview as they were, a stream named /subscriptions included', () => {
    expect(parseRoute('')).toEqual({ kind: 'overview' });
    expect(parseRoute('#/shop/orders')).toEqual({ kind: 'stream', path: '/shop/orders' });
    expect(parseRoute(hrefFor('/subscriptions'))).toEqual({ kind: 'stream', path: '/subscriptions' });
    expect(parseRoute('#subscriptionsx')).toEqual({ kind: 'stream', path: '/subscriptionsx' });
  });
});

describe('subscription statuses for the tree and the halted card', () => {
  it('gives each source stream its worst status', () => {
    const map = worstStatusByStream([
      { sourcePath: '/a', status: 'healthy' },
      { sourcePath: '/a', status: 'retrying' },
      { sourcePath: '/b', status: 'lagging' },
      { sourcePath: '/a', status: 'lagging' },
      { sourcePath: '/c', status: 'halted' },
      { sourcePath: '/c', status: 'healthy' },
    ]);
    expect([...map]).toEqual([
      ['/a', 'retrying'],
      ['/b', 'lagging'],
      ['/c', 'halted'],
    ]);
  });

  it('finds the failed event: the offset the error names, else the newest failed attempt, else none', () => {
    expect(failedOffset({ afterOffset: 2, error: 'filter.jsonataCondition threw on offset 9: boom' }, [{ outcome: 'failed', fromOffset: 3 }])).toEqual({ offset: 9, source: 'error' });
    expect(failedOffset({ afterOffset: 2, error: 'receiver unavailable' }, [{ outcome: 'ok', fromOffset: 8 }, { outcome: 'unavailable', fromOffset: 3 }])).toEqual({
      offset: 3,
      source: 'attempt',
    });
    expect(failedOffset({ afterOffset: 2 }, [{ outcome: 'failed', fromOffset: 2 }])).toBeNull();
    expect(failedOffset({ afterOffset: 2 }, [])).toBeNull();
  });
});
