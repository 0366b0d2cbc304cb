/**
 * Folding (state.ts, docs/durable-streams.md "State"): the time of the newest event, which a TTL
 * counts from after a restart, whatever order of `createdAt` texts the events bring.
 */
import { describe, expect, it } from 'vitest';
import { emptyState, foldEvent } from './state.js';
import { MESSAGE_TYPE } from './messages.js';

const at = (offset: number, createdAt: string) => ({ offset, type: MESSAGE_TYPE, createdAt, payload: { value: offset } });

describe('foldEvent', () => {
  it('keeps the newest createdAt, for repeated, new and earlier texts alike', () => {
    const state = emptyState('lifetime');
    const texts = ['2026-12-01T00:00:00.005Z', '2026-12-01T00:00:00.005Z', '2026-12-01T00:00:01.000Z', '2026-12-01T00:00:00.005Z'];
    const seen = texts.map((text, i) => {
      foldEvent(state, at(i + 1, text));
      return state.lastEventMs;
    });
    expect(seen).toEqual([Date.UTC(2026, 11, 1, 0, 0, 0, 5), Date.UTC(2026, 11, 1, 0, 0, 0, 5), Date.UTC(2026, 11, 1, 0, 0, 1), Date.UTC(2026, 11, 1, 0, 0, 1)]);
    expect(state.head).toBe(4);
  });

  it('a createdAt that is not a date leaves the time as it was, also when it comes again', () => {
    const state = emptyState('lifetime');
    foldEvent(state, at(1, '2026-12-01T00:00:00.000Z'));
    foldEvent(state, at(2, 'not a date'));
    foldEvent(state, at(3, 'not a date'));
    expect(state.lastEventMs).toBe(Date.UTC(2026, 11, 1));
    // Another state folding the same texts gets the same result (the memo is only of the parse).
    const other = emptyState('other');
    foldEvent(other, at(1, 'not a date'));
    expect(other.lastEventMs).toBe(0);
  });
});
