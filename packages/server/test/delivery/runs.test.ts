/**
 * Delivery runs and the rows that carry them (protocol §11, §12.1, §12.2, §12.10): a late result
 * of a superseded run never moves or fails the new run (§12.4), removal stops delivery, the alarm
 * is cleared when nothing is owed and never loops, runtime rows are repaired from core state in
 * the commit and at load, and a committed cursor-set survives reopening the storage
 * (SqliteStorage file, new registry).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventType, type CoreState } from '@rivulet/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStorage } from '../../src/adapters/sqlite/sqlite-storage.js';
import { setSubscriptionCursor } from '../../src/engine/commands.js';
import { createHarness, failing, ok, settle, waitFor, type Harness } from './harness.js';
import { expectOnlyRuntimeKeys, itxSub, webhookSub, x } from './payloads.js';

const harnesses: Harness[] = [];
async function harness(...args: Parameters<typeof createHarness>): Promise<Harness> {
  const made = await createHarness(...args);
  harnesses.push(made);
  return made;
}
afterEach(async () => {
  for (const made of harnesses.splice(0)) await made.close();
});

interface RowRecord {
  key: string;
  run_configured_at: number;
  run_cursor_set_at: number;
  cursor: number;
  halted: number;
  attempt: number;
}

function rows(h: Harness, path = '/s'): RowRecord[] {
  return h.storage.exec<RowRecord>(
    `SELECT r.key, r.run_configured_at, r.run_cursor_set_at, r.cursor, r.halted, r.attempt
     FROM subscription_runtime r JOIN streams s ON s.sid = r.sid WHERE s.path = ? ORDER BY r.key`,
    path,
  );
}

/** Rows agree with core state: one per outbound key, on the entry's run, halted as the entry is. */
function expectRowsMatchState(found: RowRecord[], core: CoreState): void {
  const byKey = core.subscriptions.outbound.byKey;
  expect(found.map((r) => r.key)).toEqual(Object.keys(byKey).sort());
  for (const row of found) {
    const entry = byKey[row.key]!;
    expect(row.run_configured_at).toBe(entry.configuredAtOffset);
    const cursorSet = entry.cursorSet && entry.cursorSet.setAtSourceOffset > entry.configuredAtOffset ? entry.cursorSet : undefined;
    expect(row.run_cursor_set_at).toBe(cursorSet?.setAtSourceOffset ?? 0);
    expect(row.halted).toBe(entry.deliveryHalted ? 1 : 0);
  }
}

describe('a late result of a superseded run (protocol §12.4)', () => {
  it('a late success of the old run does not move the new run’s cursor (reconfigure while a call hangs)', async () => {
    const h = await harness({ config: { deliveryTimeoutMs: 5000 } });
    h.itx.script = () => 'hang';
    await h.configure('/s', itxSub('k', { eventTypes: ['app/x'] }));
    await h.append('/s', x(1), x(2));
    const oldCall = await waitFor(() => h.itx.calls[0], 'the old run’s call');
    expect(oldCall.ctx.cursorChangedAtSourceOffset).toBe(2);

    const reconfigured = await h.configure('/s', itxSub('k', { eventTypes: ['app/x'], start: 'beginning' }));
    const newCall = await waitFor(() => h.itx.calls[1], 'the new run’s call');
    expect(newCall.ctx.cursorChangedAtSourceOffset).toBe(reconfigured.offset);
    expect(newCall.offsets).toEqual([3, 4]);

    oldCall.release(ok());
    await waitFor(() => oldCall.settled, 'old call settled');
    await settle();
    expect(h.sub('/s', 'k')).toMatchObject({ acknowledgedOffset: 0, attempt: 0, lastError: null });
    expect(h.sub('/s', 'k').inFlightDeadlineAt).not.toBeNull();
    expect(h.itx.calls).toHaveLength(2);

    newCall.release(ok());
    await h.caughtUp('/s', 'k');
    expect(h.itx.calls).toHaveLength(2);
  });

  it('a late failure of the old run does not fail, delay or halt the new run', async () => {
    const h = await harness({ config: { deliveryTimeoutMs: 5000, maxDeliveryAttempts: 1 } });
    h.itx.script = (_call, index) => (index === 0 ? 'hang' : ok());
    await h.configure('/s', itxSub('k', { eventTypes: ['app/x'] }));
    await h.append('/s', x(1));
    const oldCall = await waitFor(() => h.itx.calls[0], 'the old run’s call');

    const reconfigured = await h.configure('/s', itxSub('k', { eventTypes: ['app/x'], start: 'now' }));
    oldCall.release(failing('late failure of the old run'));
    await waitFor(() => oldCall.settled, 'old call settled');
    await settle();
    expect(h.core('/s').subscriptions.outbound.byKey.k?.deliveryHalted).toBeUndefined();
    expect(h.eventsOfType('/s', EventType.subscriptionDeliveryHalted)).toEqual([]);
    expect(h.sub('/s', 'k')).toMatchObject({ acknowledgedOffset: reconfigured.offset, attempt: 0, lastError: null, nextAttemptAt: null });

    await h.append('/s', x(2));
    await h.caughtUp('/s', 'k');
    const last = h.itx.calls[h.itx.calls.length - 1]!;
    expect(last.offsets).toEqual([reconfigured.offset + 1]);
    expect(last.ctx).toMatchObject({ attempt: 1, cursorChangedAtSourceOffset: reconfigured.offset });
  });

  it('a cursor-set while a call hangs starts a new run; the old success cannot move it', async () => {
    const h = await harness({ config: { deliveryTimeoutMs: 5000 } });
    h.itx.script = () => 'hang';
    await h.configure('/s', itxSub('k', { eventTypes: ['app/x'] }));
    await h.append('/s', x(1), x(2), x(3));
    const oldCall = await waitFor(() => h.itx.calls[0], 'the old run’s call');
    const { event } = await setSubscriptionCursor(h.actor('/s'), { subscriptionKey: 'k', afterOffset: 4 });
    const newCall = await waitFor(() => h.itx.calls[1], 'the new run’s call');
    expect(newCall.offsets).toEqual([5]);
    expect(newCall.ctx.cursorChangedAtSourceOffset).toBe(event.offset);

    oldCall.release(ok());
    await waitFor(() => oldCall.settled, 'old call settled');
    await settle();
    expect(h.sub('/s', 'k').acknowledgedOffset).toBe(4);
    newCall.release(ok());
    await h.caughtUp('/s', 'k');
  });

  it('removal stops delivery: the row goes, a late result is ignored, nothing more is sent', async () => {
    const h = await harness({ config: { deliveryTimeoutMs: 5000 } });
    h.itx.script = (_call, index) => (index === 0 ? 'hang' : ok());
    await h.configure('/s', itxSub('k', { eventTypes: ['app/x'] }));
    await h.configure('/s', itxSub('sentinel', { eventTypes: ['app/x'] }));
    await h.append('/s', x(1));
    const oldCall = await waitFor(() => h.itx.callsFor('k')[0], 'the call');
    await h.append('/s', { type: EventType.subscriptionRemoved, payload: { subscriptionKey: 'k', reason: 'requested' } });
    expect(h.runtime('/s').subscriptions.k).toBeUndefined();
    expect(rows(h).map((r) => r.key)).toEqual(['sentinel']);
    oldCall.release(ok());
    await h.append('/s', x(2));
    await h.caughtUp('/s', 'sentinel');
    expect(h.itx.callsFor('k')).toHaveLength(1);
    expect(h.runtime('/s').subscriptions.k).toBeUndefined();
  });
});

describe('the alarm', () => {
  it('is armed for a backoff and cleared when nothing is owed', async () => {
    const h = await harness({ config: { retryBaseMs: 30 } });
    h.itx.script = (_call, index) => (index === 0 ? failing() : ok());
    await h.configure('/s', itxSub('k'));
    await h.append('/s', x(1));
    const view = await waitFor(() => (h.sub('/s', 'k').nextAttemptAt !== null ? h.sub('/s', 'k') : undefined), 'a backoff');
    await h.caughtUp('/s', 'k');
    expect(h.alarms.records[0]?.setTimes).toContain(view.nextAttemptAt);
    await waitFor(() => h.alarms.armed.length === 0, 'alarm cleared');
    expect(h.alarms.records.length).toBe(1);
    const fires = h.alarms.totalFires;
    expect(fires).toBeGreaterThanOrEqual(1);
    // a quiet stream does not wake itself
    const sets = h.alarms.totalSets;
    await settle(80);
    expect(h.alarms.totalSets).toBe(sets);
    expect(h.alarms.totalFires).toBe(fires);
  });

  it('a halted subscription leaves no alarm and does not loop', async () => {
    const h = await harness({ config: { maxDeliveryAttempts: 2 } });
    h.itx.script = () => failing();
    await h.configure('/s', itxSub('k'));
    await h.append('/s', x(1));
    await h.halted('/s', 'k');
    await waitFor(() => h.alarms.armed.length === 0, 'alarm cleared after the halt');
    const sets = h.alarms.totalSets;
    const fires = h.alarms.totalFires;
    await h.append('/s', x(2));
    await settle(80);
    expect(h.alarms.armed).toEqual([]);
    expect(h.alarms.totalFires).toBe(fires);
    expect(h.alarms.totalSets).toBe(sets);
    expect(h.itx.calls).toHaveLength(2);
  });

  it('a stream without subscriptions never gets an alarm', async () => {
    const h = await harness();
    await h.append('/plain', x(1), x(2));
    await settle(20);
    expect(h.alarms.records).toEqual([]);
  });
});

describe('runtime rows repaired from core state', () => {
  it('are written in the commit that changes the subscriptions, and :state never repeats configuration', async () => {
    const h = await harness({ withoutDelivery: true });
    await h.append('/s', x(1));
    await h.configure('/s', itxSub('now', { start: 'now' }));
    await h.configure('/s', itxSub('begin', { start: 'beginning' }));
    await h.configure('/s', webhookSub('hook'));
    // at once, without any delivery
    expect(h.sub('/s', 'now').acknowledgedOffset).toBe(3);
    expect(h.sub('/s', 'begin').acknowledgedOffset).toBe(0);
    expect(h.sub('/s', 'hook').acknowledgedOffset).toBe(5);
    expectRowsMatchState(rows(h), h.core('/s'));

    await setSubscriptionCursor(h.actor('/s'), { subscriptionKey: 'now', afterOffset: 1 });
    expect(h.sub('/s', 'now').acknowledgedOffset).toBe(1);
    await h.actor('/s').append(
      [{ type: EventType.subscriptionDeliveryHalted, payload: { subscriptionKey: 'begin', reason: 'delivery-failed', afterOffset: 0, attempts: 3 } }],
      'platform',
    );
    await h.append('/s', { type: EventType.subscriptionRemoved, payload: { subscriptionKey: 'hook', reason: 'requested' } });
    expectRowsMatchState(rows(h), h.core('/s'));
    expect(Object.keys(h.runtime('/s').subscriptions).sort()).toEqual(['begin', 'now']);

    const runtime = h.runtime('/s');
    for (const view of Object.values(runtime.subscriptions)) {
      expectOnlyRuntimeKeys(view);
      expect(JSON.stringify(view)).not.toContain('receiver');
    }
    expect(runtime.subscriptions.now).toMatchObject({ acknowledgedOffset: 1, lag: h.head('/s') - 1, attempt: 0, nextAttemptAt: null, inFlightDeadlineAt: null, lastError: null });
  });

  it('are repaired at load: lost or stale rows are rebuilt from core state', async () => {
    const h = await harness({ withoutDelivery: true });
    await h.append('/s', x(1), x(2));
    await h.configure('/s', itxSub('a', { start: 'now' }));
    await h.configure('/s', itxSub('b', { start: 'beginning' }));
    await setSubscriptionCursor(h.actor('/s'), { subscriptionKey: 'b', afterOffset: 2 });
    // simulate rows that did not keep up: one lost, one on an old run, one orphaned
    h.storage.run(`DELETE FROM subscription_runtime WHERE key = 'a'`);
    h.storage.run(`UPDATE subscription_runtime SET run_cursor_set_at = 0, cursor = 0 WHERE key = 'b'`);
    h.storage.run(
      `INSERT INTO subscription_runtime (sid, key, run_configured_at, run_cursor_set_at, cursor, attempt, isolate, confirmations,
         skips_without_success, halted, bytes_sent) SELECT sid, 'gone', 1, 0, 0, 0, 0, 0, 0, 0, 0 FROM streams WHERE path = '/s'`,
    );

    const reopened = await harness({ storage: h.storage, withoutDelivery: true });
    expect(reopened.sub('/s', 'a').acknowledgedOffset).toBe(4);
    expect(reopened.sub('/s', 'b').acknowledgedOffset).toBe(2);
    expect(reopened.runtime('/s').subscriptions.gone).toBeUndefined();
    expectRowsMatchState(rows(reopened), reopened.core('/s'));
  });
});

describe('restart', () => {
  it('a call unfinished at shutdown is delivered again after a restart (its watchdog was stored)', async () => {
    const first = await harness({ config: { deliveryTimeoutMs: 5000 } });
    first.itx.script = () => 'hang';
    await first.configure('/s', itxSub('k'));
    await first.append('/s', x(1));
    await waitFor(() => first.itx.calls[0], 'the call');
    const deadline = first.sub('/s', 'k').inFlightDeadlineAt;
    expect(deadline).not.toBeNull();
    await first.close({ keepStorage: true });

    const second = await harness({ storage: first.storage, config: { deliveryTimeoutMs: 5000 } });
    expect(second.sub('/s', 'k')).toMatchObject({ acknowledgedOffset: 2, inFlightDeadlineAt: deadline });
    second.start();
    await second.caughtUp('/s', 'k');
    expect(second.itx.offsetsFor('k')).toEqual([[3]]);
    expect(second.itx.calls[0]?.ctx.deliveryId).toBe(first.itx.calls[0]?.ctx.deliveryId);
  });

  it('a halted subscription stays halted across a restart', async () => {
    const first = await harness({ config: { maxDeliveryAttempts: 1 } });
    first.itx.script = () => failing();
    await first.configure('/s', itxSub('k'));
    await first.append('/s', x(1));
    await first.halted('/s', 'k');
    await first.close({ keepStorage: true });

    const second = await harness({ storage: first.storage });
    second.start();
    await second.append('/s', x(2));
    await settle();
    expect(second.itx.calls).toEqual([]);
    expect(second.alarms.armed).toEqual([]);
    expect(rows(second)).toMatchObject([{ key: 'k', halted: 1 }]);
  });
});

describe('a committed cursor-set is never lost', () => {
  it('survives closing and reopening the SQLite file with a new registry, and delivery resumes from it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rivulet-delivery-'));
    const file = join(dir, 'rivulet.db');
    try {
      const first = await harness({ storage: new SqliteStorage(file), config: { deliveryTimeoutMs: 5000 } });
      first.itx.script = (_call, index) => (index === 0 ? ok() : 'hang');
      await first.configure('/s', itxSub('k', { eventTypes: ['app/x'] }));
      await first.configure('/s', itxSub('other', { eventTypes: ['nothing/matches'], start: 'beginning' }));
      await first.append('/s', x(1), x(2));
      await first.caughtUp('/s', 'k');
      await first.append('/s', x(3));
      await waitFor(() => first.itx.calls[1], 'a call in flight');
      // the cursor-set commits while a call of the old run is in flight, then the process "stops"
      const { event } = await setSubscriptionCursor(first.actor('/s'), { subscriptionKey: 'k', afterOffset: 2 });
      const stateBefore = first.core('/s');
      expect(first.sub('/s', 'k').acknowledgedOffset).toBe(2);
      await first.close();

      const second = await harness({ storage: new SqliteStorage(file), config: { deliveryTimeoutMs: 5000 } });
      expect(second.core('/s')).toEqual(stateBefore);
      expectRowsMatchState(rows(second), second.core('/s'));
      expect(rows(second).find((r) => r.key === 'k')).toMatchObject({ cursor: 2, run_cursor_set_at: event.offset });
      expect(second.sub('/s', 'k').acknowledgedOffset).toBe(2);

      second.start();
      await second.caughtUp('/s', 'k');
      expect(second.itx.offsetsFor('k')).toEqual([[4, 5, 6]]);
      expect(second.itx.calls[0]?.ctx.cursorChangedAtSourceOffset).toBe(event.offset);
    } finally {
      for (const made of harnesses.splice(0)) await made.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
