/**
 * Runtime rows repaired from core state (protocol §11, §12.1, §9.7):
 * new rows start at their start position, a new configuration or a newer cursor-set starts a new
 * run with a fresh ladder, a halt parks the row, a resume restarts the ladder from the cursor, and
 * nothing else changes the row (the same object is answered).
 */
import type { OutboundEntry, Receiver } from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import { repairRow, runGeneration, type SubscriptionRow } from './repair.js';

const T0 = '2025-01-01T00:00:00.000Z';

function entry(receiver: Receiver, configuredAtOffset: number, extra: Partial<OutboundEntry> = {}): OutboundEntry {
  return {
    configuration: { subscriptionKey: 'k', receiver },
    configuredAtOffset,
    configuredAt: T0,
    ...extra,
  };
}

const copy = (start: 'beginning' | 'now'): Receiver => ({
  action: 'copy-to-stream',
  receivingStreamPath: '/r',
  delivery: { start, onFailingEvent: 'halt' },
});
const itx = (start: 'beginning' | 'now'): Receiver => ({
  action: 'itx-call',
  expression: ['workers', ['get', 'w'], 'processEventBatch'],
  delivery: { start, onFailingEvent: 'skip' },
});
const wake: Receiver = { action: 'processor-wake', expression: ['processors', ['get', 'p'], 'wakeStreamProcessor'] };

/** A row deep into a run: cursor moved, a failing ladder, measurements. */
function busyRow(overrides: Partial<SubscriptionRow> = {}): SubscriptionRow {
  return {
    key: 'k',
    runConfiguredAt: 5,
    runCursorSetAt: 0,
    cursor: 20,
    attempt: 3,
    nextAttemptAt: 1_000_500,
    inflightDeadlineAt: 1_000_900,
    lastError: 'boom',
    isolate: true,
    confirmations: 2,
    confirmOffset: 21,
    skipsWithoutSuccess: 1,
    halted: false,
    bytesSent: 1234,
    stats: '{"completion":[1],"duration":[2],"counts":[1,1]}',
    ...overrides,
  };
}

const freshLadder = {
  attempt: 0,
  nextAttemptAt: null,
  inflightDeadlineAt: null,
  lastError: null,
  isolate: false,
  confirmations: 0,
  confirmOffset: null,
  skipsWithoutSuccess: 0,
};

describe('repairRow: a new row', () => {
  it('start "beginning" starts at cursor 0', () => {
    expect(repairRow('k', entry(copy('beginning'), 7), undefined)).toEqual({
      key: 'k',
      runConfiguredAt: 7,
      runCursorSetAt: 0,
      cursor: 0,
      ...freshLadder,
      halted: false,
      bytesSent: 0,
      stats: null,
    });
  });

  it('start "now" starts at the configuration offset', () => {
    expect(repairRow('k', entry(itx('now'), 7), undefined)).toMatchObject({ cursor: 7, runConfiguredAt: 7, runCursorSetAt: 0 });
  });

  it('processor-wake starts at 0 (the processor owns its checkpoint)', () => {
    expect(repairRow('k', entry(wake, 7), undefined)).toMatchObject({ cursor: 0, runConfiguredAt: 7 });
  });

  it('a cursor-set newer than the configuration is applied at once', () => {
    const row = repairRow('k', entry(copy('now'), 7, { cursorSet: { afterOffset: 2, setAtSourceOffset: 9 } }), undefined);
    expect(row).toMatchObject({ cursor: 2, runConfiguredAt: 7, runCursorSetAt: 9 });
    expect(runGeneration(row)).toBe(9);
  });

  it('a cursor-set not newer than the configuration is ignored', () => {
    const row = repairRow('k', entry(copy('now'), 7, { cursorSet: { afterOffset: 2, setAtSourceOffset: 7 } }), undefined);
    expect(row).toMatchObject({ cursor: 7, runCursorSetAt: 0 });
  });

  it('a halted entry gives a parked row', () => {
    const row = repairRow('k', entry(copy('beginning'), 7, { deliveryHalted: { reason: 'delivery-failed', afterOffset: 0, attempts: 3 } }), undefined);
    expect(row).toMatchObject({ halted: true, cursor: 0 });
  });
});

describe('repairRow: runs', () => {
  it('a new configuration is a new run with a fresh ladder (measurements kept)', () => {
    const before = busyRow({ halted: true });
    const row = repairRow('k', entry(copy('beginning'), 30), before);
    expect(row).toEqual({
      key: 'k',
      runConfiguredAt: 30,
      runCursorSetAt: 0,
      cursor: 0,
      ...freshLadder,
      halted: false,
      bytesSent: 1234,
      stats: before.stats,
    });
    expect(repairRow('k', entry(copy('now'), 30), before)).toMatchObject({ cursor: 30, attempt: 0 });
  });

  it('a cursor-set newer than the row is a new run at afterOffset (also backwards)', () => {
    const before = busyRow();
    const row = repairRow('k', entry(copy('now'), 5, { cursorSet: { afterOffset: 3, setAtSourceOffset: 25 } }), before);
    expect(row).toEqual({ ...before, ...freshLadder, runCursorSetAt: 25, cursor: 3 });
    expect(runGeneration(row)).toBe(25);
  });

  it('a second, newer cursor-set replaces the first run', () => {
    const before = busyRow({ runCursorSetAt: 25, cursor: 3 });
    expect(repairRow('k', entry(copy('now'), 5, { cursorSet: { afterOffset: 24, setAtSourceOffset: 26 } }), before)).toMatchObject({
      runCursorSetAt: 26,
      cursor: 24,
      attempt: 0,
    });
  });

  it('a cursor-set older than or equal to the row is ignored (same object)', () => {
    const before = busyRow({ runCursorSetAt: 25 });
    expect(repairRow('k', entry(copy('now'), 5, { cursorSet: { afterOffset: 1, setAtSourceOffset: 25 } }), before)).toBe(before);
    expect(repairRow('k', entry(copy('now'), 5, { cursorSet: { afterOffset: 1, setAtSourceOffset: 24 } }), before)).toBe(before);
  });

  it('a cursor-set on a halted entry moves the cursor and stays parked', () => {
    const before = busyRow({ halted: true });
    const row = repairRow(
      'k',
      entry(copy('now'), 5, {
        cursorSet: { afterOffset: 2, setAtSourceOffset: 30 },
        deliveryHalted: { reason: 'delivery-failed', afterOffset: 20, attempts: 3 },
      }),
      before,
    );
    expect(row).toMatchObject({ cursor: 2, runCursorSetAt: 30, halted: true, attempt: 0 });
  });

  it('runGeneration is the later of the configuration and the cursor-set', () => {
    expect(runGeneration({ runConfiguredAt: 5, runCursorSetAt: 0 })).toBe(5);
    expect(runGeneration({ runConfiguredAt: 5, runCursorSetAt: 9 })).toBe(9);
  });
});

describe('repairRow: halt and resume', () => {
  const halted = { reason: 'delivery-failed' as const, afterOffset: 20, attempts: 3, error: 'boom' };

  it('a halt parks the row: no retry, no watchdog; cursor, attempts and error kept', () => {
    const before = busyRow();
    expect(repairRow('k', entry(copy('now'), 5, { deliveryHalted: halted }), before)).toEqual({
      ...before,
      halted: true,
      nextAttemptAt: null,
      inflightDeadlineAt: null,
    });
  });

  it('an already parked row is unchanged', () => {
    const before = busyRow({ halted: true, nextAttemptAt: null, inflightDeadlineAt: null });
    expect(repairRow('k', entry(copy('now'), 5, { deliveryHalted: halted }), before)).toBe(before);
  });

  it('a resume restarts the ladder (attempt 0) and keeps the cursor', () => {
    const before = busyRow({ halted: true, nextAttemptAt: null, inflightDeadlineAt: null });
    expect(repairRow('k', entry(copy('now'), 5), before)).toEqual({ ...before, ...freshLadder, halted: false, cursor: 20 });
  });

  it('nothing changed → the same object', () => {
    const before = busyRow();
    expect(repairRow('k', entry(copy('now'), 5), before)).toBe(before);
    const withSet = busyRow({ runCursorSetAt: 9 });
    expect(repairRow('k', entry(copy('now'), 5, { cursorSet: { afterOffset: 1, setAtSourceOffset: 9 } }), withSet)).toBe(withSet);
  });
});
