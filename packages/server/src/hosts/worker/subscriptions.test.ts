import { describe, expect, it } from 'vitest';
import type { SubscriptionListEntry, SubscriptionStatus } from '@rivulet/contract';
import { decodeListCursor } from '../../engine/subscription-listing.js';
import type { SubscribedCandidate, SubscribedQuery } from './api.js';
import { listProjectSubscriptions } from './subscriptions.js';

function entry(path: string, key: string, status: SubscriptionStatus): SubscriptionListEntry {
  return { sourcePath: path, subscriptionKey: key, action: 'copy-to-stream', target: '/r', status, acknowledgedOffset: 0, lag: 0, attempt: 0, lastError: null, configuredAt: 'x' };
}

/** An index of `rows` (in listing order) and objects answering `live` per path. */
function ports(rows: SubscribedCandidate[], live: Map<string, SubscriptionListEntry[]>) {
  const calls: string[] = [];
  return {
    calls,
    subscribed: async (q: SubscribedQuery) => {
      const key = (c: SubscribedCandidate) => [c.group, c.path, c.key] as const;
      const after = q.after ? key(q.after) : undefined;
      const greater = (c: SubscribedCandidate) => {
        if (!after) return true;
        const k = key(c);
        for (let i = 0; i < 3; i++) if (k[i] !== after[i]) return k[i]! > after[i]!;
        return false;
      };
      return rows.filter((c) => greater(c) && (q.halted === undefined || (c.group === 0) === q.halted)).slice(0, q.limit);
    },
    entries: async (path: string) => {
      calls.push(path);
      return live.get(path) ?? [];
    },
  };
}

describe('listProjectSubscriptions (the Worker host, protocol §21.3)', () => {
  it('keeps the index order, judges status from the objects, and skips what they no longer hold', async () => {
    const rows: SubscribedCandidate[] = [
      { group: 0, path: '/a', key: 'k' },
      { group: 1, path: '/b', key: 'k' },
      { group: 1, path: '/c', key: 'gone' },
      { group: 1, path: '/d', key: 'k' },
    ];
    const live = new Map([
      ['/a', [entry('/a', 'k', 'halted')]],
      ['/b', [entry('/b', 'k', 'retrying')]],
      ['/d', [entry('/d', 'k', 'healthy')]],
    ]);
    const all = await listProjectSubscriptions(ports(rows, live), { prefix: '/', limit: 10 });
    expect(all.subscriptions.map((e) => e.sourcePath)).toEqual(['/a', '/b', '/d']);
    expect(all.next).toBeUndefined();
    const healthy = await listProjectSubscriptions(ports(rows, live), { prefix: '/', limit: 10, statuses: ['healthy'] });
    expect(healthy.subscriptions.map((e) => e.sourcePath)).toEqual(['/d']);
  });

  it('answers next only when a further wanted row exists, and resumes after the last row of the page', async () => {
    const rows = ['/a', '/b', '/c'].map((path) => ({ group: 1 as const, path, key: 'k' }));
    const live = new Map(rows.map((r) => [r.path, [entry(r.path, 'k', 'healthy')]]));
    const first = await listProjectSubscriptions(ports(rows, live), { prefix: '/', limit: 2 });
    expect(first.subscriptions.map((e) => e.sourcePath)).toEqual(['/a', '/b']);
    expect(decodeListCursor(first.next!)).toEqual({ group: 1, path: '/b', key: 'k' });
    const second = await listProjectSubscriptions(ports(rows, live), { prefix: '/', limit: 2, after: first.next });
    expect(second.subscriptions.map((e) => e.sourcePath)).toEqual(['/c']);
    expect(second.next).toBeUndefined();
  });

  it('ends a page early with next after reading its bound of index positions', async () => {
    // 1200 positions, none of the wanted status: five rounds of 200 read, then next from the 1000th.
    const rows = Array.from({ length: 1200 }, (_, i) => ({ group: 1 as const, path: `/s${String(i).padStart(4, '0')}`, key: 'k' }));
    const live = new Map(rows.map((r) => [r.path, [entry(r.path, 'k', 'healthy')]]));
    const page = await listProjectSubscriptions(ports(rows, live), { prefix: '/', limit: 100, statuses: ['lagging'] });
    expect(page.subscriptions).toEqual([]);
    expect(decodeListCursor(page.next!)).toEqual({ group: 1, path: '/s0999', key: 'k' });
    const rest = await listProjectSubscriptions(ports(rows, live), { prefix: '/', limit: 100, statuses: ['lagging'], after: page.next });
    expect(rest).toEqual({ subscriptions: [] });
  });
});
