/**
 * Runtime rows repaired from core state (protocol §11, §12.1). Core state
 * holds durable intent (configuration, cursor-set, halt); a row holds the applied cursor and the
 * ladder. This pure function answers the row an entry should have, given the row it has: a new run
 * (new configuration, or a cursor-set newer than the row) starts from its start position with a
 * fresh ladder; a halt parks the row; a resume restarts the ladder from the existing cursor.
 * Answers the same object when nothing changes.
 */
import type { OutboundEntry } from '@rivulet/contract';

export interface SubscriptionRow {
  key: string;
  runConfiguredAt: number;
  runCursorSetAt: number;
  cursor: number;
  attempt: number;
  nextAttemptAt: number | null;
  inflightDeadlineAt: number | null;
  lastError: string | null;
  isolate: boolean;
  confirmations: number;
  confirmOffset: number | null;
  skipsWithoutSuccess: number;
  halted: boolean;
  bytesSent: number;
  stats: string | null;
}

/** The config generation of a row's run: the offset of the configure or cursor-set that started it. */
export function runGeneration(row: Pick<SubscriptionRow, 'runConfiguredAt' | 'runCursorSetAt'>): number {
  return Math.max(row.runConfiguredAt, row.runCursorSetAt);
}

/** A row's retry state when nothing is failing: no attempt counted, nothing in flight, no error. */
const freshLadder = {
  attempt: 0,
  nextAttemptAt: null,
  inflightDeadlineAt: null,
  lastError: null,
  isolate: false,
  confirmations: 0,
  confirmOffset: null,
  skipsWithoutSuccess: 0,
} as const;

/**
 * The row after a successful delivery: the cursor moved to `cursor`, the ladder reset (a success
 * ends isolation and the skip count), `bytes` more sent.
 */
export function succeeded(row: SubscriptionRow, cursor: number, bytes: number): SubscriptionRow {
  return { ...row, ...freshLadder, cursor, bytesSent: row.bytesSent + bytes };
}

export function repairRow(key: string, entry: OutboundEntry, row: SubscriptionRow | undefined): SubscriptionRow {
  const halted = entry.deliveryHalted !== undefined;
  const cursorSet = entry.cursorSet && entry.cursorSet.setAtSourceOffset > entry.configuredAtOffset ? entry.cursorSet : undefined;
  if (!row || row.runConfiguredAt !== entry.configuredAtOffset) {
    const receiver = entry.configuration.receiver;
    const start = receiver.action === 'processor-wake' ? 'beginning' : receiver.delivery.start;
    return {
      key,
      runConfiguredAt: entry.configuredAtOffset,
      runCursorSetAt: cursorSet?.setAtSourceOffset ?? 0,
      cursor: cursorSet ? cursorSet.afterOffset : start === 'beginning' ? 0 : entry.configuredAtOffset,
      ...freshLadder,
      halted,
      bytesSent: row?.bytesSent ?? 0,
      stats: row?.stats ?? null,
    };
  }
  if (cursorSet && cursorSet.setAtSourceOffset > row.runCursorSetAt) {
    return { ...row, ...freshLadder, runCursorSetAt: cursorSet.setAtSourceOffset, cursor: cursorSet.afterOffset, halted };
  }
  if (halted && !row.halted) return { ...row, halted: true, nextAttemptAt: null, inflightDeadlineAt: null };
  if (!halted && row.halted) return { ...row, ...freshLadder, halted: false };
  return row;
}
