import { describe, expect, it } from 'vitest';
import { subscriptionTarget } from './subscription-target.js';

describe('subscriptionTarget (protocol §21.1)', () => {
  it('names the target of every action', () => {
    expect(subscriptionTarget({ action: 'copy-to-stream', receivingStreamPath: '/r', delivery: { start: 'now', onFailingEvent: 'halt' } })).toBe('/r');
    expect(subscriptionTarget({ action: 'webhook-post', url: 'https://x.test/h', delivery: { start: 'now', onFailingEvent: 'skip' } })).toBe('https://x.test/h');
    expect(subscriptionTarget({ action: 'itx-call', expression: ['workers', ['get', 'w'], 'run'], delivery: { start: 'now', onFailingEvent: 'halt' } })).toBe('["workers",["get","w"],"run"]');
    expect(subscriptionTarget({ action: 'processor-wake', expression: ['p'] })).toBe('["p"]');
  });
});
