/**
 * Conformance checks of the SQL the subscription listing relies on (protocol §21), run against
 * every adapter with the rest of the storage checks: the schema with its partial index, the
 * backfill from core state (JSON functions), and the listing statement (row values, CROSS JOIN, a
 * subquery per row) through the engine's own functions. Nothing here may import Node modules.
 */
import type { SqlStorage } from '../src/ports/storage.js';
import { openSchema } from '../src/engine/schema.js';
import { queryIndex } from '../src/engine/subscription-index.js';
import type { ConformanceApi } from './storage-checks.js';

function entry(receiver: Record<string, unknown>, halted: boolean) {
  return {
    configuration: { subscriptionKey: 'k', receiver },
    configuredAtOffset: 1,
    configuredAt: '2026-12-01T00:00:00.000Z',
    ...(halted ? { deliveryHalted: { reason: 'delivery-failed', afterOffset: 0, attempts: 3, error: 'boom' } } : {}),
  };
}

/** A stream with one subscription "k" (halted or not) and `events` durable events, in both tables. */
function addStream(s: SqlStorage, sid: number, path: string, halted: boolean, events: number): void {
  const receiver = { action: 'copy-to-stream', receivingStreamPath: `${path}-r`, delivery: { start: 'now', onFailingEvent: 'halt' } };
  const state = { subscriptions: { outbound: { byKey: { k: entry(receiver, halted) } }, inbound: { bySourcePath: {} } } };
  s.run(
    `INSERT INTO streams (sid, project, path, stream_id, created_at, head, event_count, max_offset, state, format) VALUES (?, '', ?, ?, '2026-12-01T00:00:00.000Z', 0, 0, 0, ?, 3)`,
    sid,
    path,
    `id-${sid}`,
    JSON.stringify(state),
  );
  for (let ofs = 1; ofs <= events; ofs++) s.run(`INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (?, ?, 'x', 0, NULL, ?, '{}')`, sid, ofs, 1000 * ofs);
  s.run(
    `INSERT INTO subscription_runtime (sid, key, run_configured_at, run_cursor_set_at, cursor, attempt, next_attempt_at, inflight_deadline_at,
       last_error, isolate, confirmations, confirm_offset, skips_without_success, halted, bytes_sent, stats)
     VALUES (?, 'k', 1, 0, 1, ?, NULL, NULL, ?, 0, 0, NULL, 0, ?, 0, NULL)`,
    sid,
    halted ? 3 : 0,
    halted ? 'boom' : null,
    halted ? 1 : 0,
  );
}

export function defineListingChecks(t: ConformanceApi, current: () => SqlStorage): void {
  const { describe, it, expect } = t;

  describe('the subscription listing SQL (protocol §21)', () => {
    it('backfills the index from core state, then lists halted rows first with row-value paging', () => {
      const s = current();
      openSchema(s);
      addStream(s, 1, '/b', false, 3);
      addStream(s, 2, '/a', false, 1);
      addStream(s, 3, '/c', true, 2);
      // A database of format 3, from before the index and the attempts: the upgrade to format 4
      // (engine/migrations.ts) fills the index from state.
      s.run(`DROP TABLE subscription_index`);
      s.run(`DROP TABLE delivery_attempts`);
      s.run(`UPDATE meta SET value = '3' WHERE key = 'format'`);
      openSchema(s);
      expect(s.exec(`SELECT sid, key, action, target, configured_at, halt FROM subscription_index ORDER BY sid`)).toEqual([
        { sid: 1, key: 'k', action: 'copy-to-stream', target: '/b-r', configured_at: '2026-12-01T00:00:00.000Z', halt: null },
        { sid: 2, key: 'k', action: 'copy-to-stream', target: '/a-r', configured_at: '2026-12-01T00:00:00.000Z', halt: null },
        { sid: 3, key: 'k', action: 'copy-to-stream', target: '/c-r', configured_at: '2026-12-01T00:00:00.000Z', halt: expect.any(String) },
      ]);
      const all = queryIndex(s, { project: '', prefix: '/', after: undefined, halted: undefined, limit: 10 });
      expect(all.map((r) => r.position)).toEqual([
        { group: 0, path: '/c', key: 'k' },
        { group: 1, path: '/a', key: 'k' },
        { group: 1, path: '/b', key: 'k' },
      ]);
      expect(all[0]!.entry).toMatchObject({ lag: 1, attempt: 3, lastError: 'boom', deliveryHalted: { attempts: 3, error: 'boom' } });
      // The oldest owed event: the first durable one after the cursor (offset 2 of /b, 2 s).
      expect(all[2]!.oldestOwedMs).toBe(2000);
      expect(all[1]!.oldestOwedMs).toBeNull();
      const halted = queryIndex(s, { project: '', prefix: '/', after: undefined, halted: true, limit: 10 });
      expect(halted.map((r) => r.position.path)).toEqual(['/c']);
      const after = queryIndex(s, { project: '', prefix: '/', after: all[1]!.position, halted: undefined, limit: 10 });
      expect(after.map((r) => r.position.path)).toEqual(['/b']);
      expect(queryIndex(s, { project: '', prefix: '/a', after: undefined, halted: false, limit: 10 }).map((r) => r.position.path)).toEqual(['/a']);
      expect(queryIndex(s, { project: 'other', prefix: '/', after: undefined, halted: undefined, limit: 10 })).toEqual([]);
    });
  });
}
