import { describe, expect, it } from 'vitest';
import { subscriptionStatus } from './subscription-status.js';

const base = { halted: false, attempt: 0, lag: 0, oldestOwedMs: null };

describe('subscriptionStatus (protocol §21.2)', () => {
  it('halted wins over everything, retrying over lagging', () => {
    expect(subscriptionStatus({ halted: true, attempt: 3, lag: 9, oldestOwedMs: 0 }, 1e9, 10)).toBe('halted');
    expect(subscriptionStatus({ ...base, attempt: 1, lag: 9, oldestOwedMs: 0 }, 1e9, 10)).toBe('retrying');
  });

  it('lagging from laggingAfterMs on, on both sides of the bound', () => {
    const owing = { ...base, lag: 1, oldestOwedMs: 1000 };
    expect(subscriptionStatus(owing, 1000 + 59_999, 60_000)).toBe('healthy');
    expect(subscriptionStatus(owing, 1000 + 60_000, 60_000)).toBe('lagging');
    // Owing nothing is healthy however old the stream is.
    expect(subscriptionStatus({ ...base, lag: 0, oldestOwedMs: 0 }, 1e9, 1)).toBe('healthy');
    expect(subscriptionStatus({ ...base, lag: 3, oldestOwedMs: null }, 1e9, 1)).toBe('healthy');
  });
});
