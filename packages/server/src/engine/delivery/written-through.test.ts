/**
 * The bookkeeping of copies written before they are durable (written-through.ts): where a key reads
 * on from, how far its cursor may move as each batch becomes durable, and whether a success may
 * reset the ladder; and which written events start copies before the commit (pass-over.ts
 * `QuietIndex.copyMayMatch`).
 */
import type { CommittedEvent, OutboundEntry } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import type { SubscriptionRow } from '../../core/repair.js';
import { QuietIndex } from './pass-over.js';
import { WrittenThrough } from './written-through.js';

const row = (cursor: number) => ({ cursor }) as SubscriptionRow;

describe('WrittenThrough', () => {
  it('reads on past written batches of the same run only; without any, from the row', () => {
    const w = new WrittenThrough();
    expect(w.cursor('k', 'r1', row(4))).toBe(4);
    expect(w.wrote('k', 'r1', 9)).toBe(0);
    expect(w.cursor('k', 'r1', row(4))).toBe(9);
    expect(w.cursor('k', 'r2', row(4))).toBe(4);
    expect(w.cursor('other', 'r1', row(4))).toBe(4);
    // A row already past it (a cursor set, say) wins.
    expect(w.cursor('k', 'r1', row(12))).toBe(12);
    expect(w.size).toBe(1);
  });

  it('each durable batch moves the cursor through its own events; the last through everything written or passed', () => {
    const w = new WrittenThrough();
    w.wrote('k', 'r', 5);
    w.wrote('k', 'r', 8);
    expect(w.passed('k', 'r', 11)).toBe(true);
    expect(w.cursor('k', 'r', row(2))).toBe(11);
    expect(w.settled('k', 'r', 5, 0)).toEqual({ cursor: 5, clean: true });
    expect(w.size).toBe(1);
    expect(w.settled('k', 'r', 8, 0)).toEqual({ cursor: 11, clean: true });
    expect(w.size).toBe(0);
    // Nothing waits: passing over is the caller's, as before.
    expect(w.passed('k', 'r', 14)).toBe(false);
  });

  it('a batch written before a failure does not reset the ladder; one written after it does', () => {
    const w = new WrittenThrough();
    expect(w.wrote('k', 'r', 5)).toBe(0);
    w.failed('k');
    expect(w.wrote('k', 'r', 6)).toBe(1);
    expect(w.settled('k', 'r', 5, 0)).toEqual({ cursor: 5, clean: false });
    expect(w.settled('k', 'r', 6, 1)).toEqual({ cursor: 6, clean: true });
    // With nothing waiting a failure is not remembered.
    w.failed('k');
    expect(w.wrote('k', 'r', 7)).toBe(0);
  });

  it('a new run starts afresh, a batch of an old run settles as itself, and forget drops the key', () => {
    const w = new WrittenThrough();
    w.wrote('k', 'old', 20);
    w.wrote('k', 'new', 3);
    expect(w.cursor('k', 'new', row(0))).toBe(3);
    expect(w.settled('k', 'old', 20, 0)).toEqual({ cursor: 20, clean: true });
    expect(w.size).toBe(1);
    w.forget('k');
    expect(w.size).toBe(0);
    expect(w.cursor('k', 'new', row(0))).toBe(0);
  });

  it('once closed, a batch that becomes durable moves nothing', () => {
    const w = new WrittenThrough();
    w.wrote('k', 'r', 5);
    w.close();
    expect(w.size).toBe(0);
    expect(w.settled('k', 'r', 5, 0)).toBeUndefined();
  });
});

describe('copyMayMatch', () => {
  const copyMayMatch = (byKey: Record<string, OutboundEntry>, events: { event: CommittedEvent }[]) => new QuietIndex({ byKey }).copyMayMatch(events);
  const entry = (action: string, eventTypes?: string[]) =>
    ({ configuration: { receiver: { action }, ...(eventTypes ? { filter: { eventTypes } } : {}) } }) as unknown as OutboundEntry;
  const fresh = (...events: Partial<CommittedEvent>[]) => events.map((e) => ({ event: { offset: 1, type: 'a', ...e } as CommittedEvent }));

  it('a copy without a type filter matches any event that is not ephemeral', () => {
    expect(copyMayMatch({ k: entry('copy-to-stream') }, fresh({ type: 'z' }))).toBe(true);
    expect(copyMayMatch({ k: entry('copy-to-stream') }, fresh({ type: 'z', ephemeral: true }))).toBe(false);
  });

  it('a type filter matches only the types it names; other actions never count', () => {
    const byKey = { k: entry('copy-to-stream', ['b']), w: entry('webhook-post') };
    expect(copyMayMatch(byKey, fresh({ type: 'a' }))).toBe(false);
    expect(copyMayMatch(byKey, fresh({ type: 'a' }, { type: 'b' }))).toBe(true);
    expect(copyMayMatch({ w: entry('webhook-post'), i: entry('itx-call') }, fresh({ type: 'a' }))).toBe(false);
    expect(copyMayMatch({}, fresh({ type: 'a' }))).toBe(false);
  });
});
