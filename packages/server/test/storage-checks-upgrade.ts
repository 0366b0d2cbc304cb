/**
 * Conformance checks of an in-place upgrade (protocol §16.4) on every adapter, run with the rest of
 * the storage checks: a database in an older format, holding keys, is opened by the current schema
 * and every key is found afterwards. On the Worker host the upgrade runs inside each stream's
 * Durable Object when new code first opens it, so its statements must work there with data in the
 * tables, not only on the Node host. Nothing here may import Node modules.
 */
import type { SqlStorage } from '../src/ports/storage.js';
import { EventRows } from '../src/engine/event-rows.js';
import { FORMAT_VERSION, openSchema } from '../src/engine/schema.js';
import type { ConformanceApi } from './storage-checks.js';

/**
 * Takes what format 10 changed away again: event_keys keyed by (sid, idem) with no run, and no
 * generation in meta (format 9's layout).
 */
export function restoreKeyTable(storage: SqlStorage): void {
  storage.run(`DROP TABLE event_keys`);
  storage.run(`CREATE TABLE event_keys (sid INTEGER NOT NULL, idem TEXT NOT NULL, ofs INTEGER NOT NULL, PRIMARY KEY (sid, idem)) WITHOUT ROWID`);
  storage.run(`DELETE FROM meta WHERE key = 'key_gen'`);
  storage.run(`DROP TABLE key_merges`);
}

const INSERT_EVENT = `INSERT INTO events (sid, ofs, type, ephemeral, idem, created_ms, body) VALUES (?, ?, 'x', 0, ?, 0, ?)`;

/** Registers the upgrade checks in the calling suite; `current()` is the storage of the running check. */
export function defineUpgradeChecks(t: ConformanceApi, current: () => SqlStorage): void {
  const { describe, it, expect } = t;

  describe('in-place upgrade with data (protocol §16.4)', () => {
    it('a database of format 9 holding keys moved and not yet moved is upgraded to 10: every key is found, a repeat refused, and later moves and merges work', () => {
      const s = current();
      openSchema(s);
      const keys = 300;
      s.transaction(() => {
        restoreKeyTable(s);
        s.run(`INSERT INTO streams VALUES (1, '', '/a', 'id-a', 't', 0, 0, 0, '{}', 9), (2, '', '/b', 'id-b', 't', 0, 0, 0, '{}', 9)`);
        // Of each stream's keys the first half moved into format 9's event_keys (at or below the
        // watermark), the rest past it.
        for (let i = 1; i <= keys; i++) {
          for (const sid of [1, 2]) s.run(INSERT_EVENT, sid, i, `key-${i}`, JSON.stringify({ offset: i, sid }));
          if (i === keys / 2) {
            s.run(`INSERT INTO event_keys (sid, idem, ofs) SELECT sid, idem, ofs FROM events`);
            s.run(`UPDATE meta SET value = ? WHERE key = 'keys_moved'`, String(keys));
          }
        }
        s.run(`UPDATE meta SET value = '9' WHERE key = 'format'`);
      });
      const seen: number[][] = [];
      openSchema(s, { beforeUpgrade: (from, to) => seen.push([from, to]) });
      expect(seen).toEqual([[9, FORMAT_VERSION]]);
      expect(s.exec(`SELECT value FROM meta WHERE key = 'format'`)).toEqual([{ value: String(FORMAT_VERSION) }]);
      // Every key, both halves, now in the base run.
      expect(s.exec(`SELECT run, count(*) AS n FROM event_keys GROUP BY run`)).toEqual([{ run: 15, n: 2 * keys }]);
      const rows = new EventRows(s, undefined);
      const row = { type: 'x', ephemeral: false, createdMs: 0, json: '{}' };
      const missing = (): string[] => {
        const out: string[] = [];
        for (let i = 1; i <= keys; i++) {
          for (const sid of [1, 2]) {
            const found = rows.byKey(sid, `key-${i}`) as { offset: number; sid: number } | undefined;
            if (found?.offset !== i || found.sid !== sid) out.push(`${sid}/key-${i}`);
          }
        }
        return out;
      };
      expect(missing()).toEqual([]);
      s.transaction(() => {
        expect(rows.insertIfNewKeys(1, [{ ...row, offset: keys + 1, idempotencyKey: `key-${keys}` }])).toBe(false);
      });
      // New keys after the upgrade go through the open run and its merges: enough moves to close
      // runs and merge them, every old and new key still found.
      let offset = keys;
      for (let round = 0; round < 12; round++) {
        s.transaction(() => {
          for (let i = 0; i < 150; i++) {
            offset++;
            expect(rows.insertIfNewKeys(1, [{ ...row, offset, idempotencyKey: `new-${offset}`, json: JSON.stringify({ offset, sid: 1 }) }])).toBe(true);
          }
        });
        rows.keys.move();
      }
      expect(missing()).toEqual([]);
      const lost: number[] = [];
      for (let o = keys + 1; o <= offset; o++) if ((rows.byKey(1, `new-${o}`) as { offset: number } | undefined)?.offset !== o) lost.push(o);
      expect(lost).toEqual([]);
      expect(s.exec<{ n: number }>(`SELECT count(DISTINCT run) AS n FROM event_keys WHERE sid = 1 AND run <> 15`)[0]!.n).toBeGreaterThan(0);
    });
  });
}
