import type { CommittedEvent } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { Backlog } from './backlog.js';
import { defaultConnectionLimits } from './connection-spec.js';

const event = (offset: number, text = 'x'): CommittedEvent =>
  ({ path: '/b', offset, createdAt: '2026-01-01T00:00:00.000Z', type: 't', payload: { text } }) as CommittedEvent;

describe('Backlog', () => {
  it('takes delivered events from the front, in order', () => {
    const b = new Backlog();
    for (const o of [1, 2, 3]) b.push(event(o));
    const { events, mark } = b.view();
    expect(events.map((e) => e.offset)).toEqual([1, 2, 3]);
    b.take(2, mark);
    expect(b.length).toBe(1);
    expect(b.view().events.map((e) => e.offset)).toEqual([3]);
  });

  it('a take from before a clear removes nothing of what came after', () => {
    const b = new Backlog();
    b.push(event(1));
    b.push(event(2));
    const { mark } = b.view();
    b.clear();
    b.push(event(7));
    b.take(2, mark);
    expect(b.view().events.map((e) => e.offset)).toEqual([7]);
  });

  it('is over its bound by events or by bytes, one past each limit, and says by how much', () => {
    const limits = { ...defaultConnectionLimits, maxBacklogEvents: 2, maxBacklogBytes: 1_000_000 };
    const b = new Backlog();
    b.push(event(1));
    b.push(event(2));
    expect(b.overflow(limits)).toBeNull();
    b.push(event(3));
    expect(b.overflow(limits)).toMatch(/^the callback fell behind by 3 events \(\d+ bytes\) not yet delivered; the bound is 2 events or 1000000 bytes$/);

    const one = new Backlog();
    one.push(event(1, 'y'.repeat(100)));
    const size = Number(/\((\d+) bytes\)/.exec(one.overflow({ ...limits, maxBacklogBytes: 0 })!)![1]);
    expect(one.overflow({ ...limits, maxBacklogBytes: size })).toBeNull();
    expect(one.overflow({ ...limits, maxBacklogBytes: size - 1 })).toMatch(/by 1 events/);
    // Bytes shrink again with what is taken.
    one.take(1, one.view().mark);
    expect(one.overflow({ ...limits, maxBacklogBytes: 0 })).toBeNull();
  });
});
