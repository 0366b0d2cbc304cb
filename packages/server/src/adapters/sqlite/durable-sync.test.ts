/**
 * The durable sync's pipeline (durable-sync.ts, decision 010) with a sync the test ends by hand
 * and a clock it sets: which sync covers which group, in what order groups settle, what a failed
 * sync does, and the synchronous drain of close().
 */
import { describe, expect, it } from 'vitest';
import { DurableSync, type PendingGroup } from './durable-sync.js';

interface TestGroup extends PendingGroup {
  readonly name: string;
}

function harness(options: { noWal?: boolean; syncNowFails?: Error } = {}) {
  const running: Array<(error: Error | null) => void> = [];
  const settled: string[] = [];
  const synced: Array<{ groups: string[]; seconds: number }> = [];
  const failures: Error[] = [];
  let syncNowCalls = 0;
  let clock = 0;
  const sync = new DurableSync<TestGroup>({
    start: (done) => {
      if (options.noWal) return false;
      running.push(done);
      return true;
    },
    syncNow: () => {
      syncNowCalls++;
      if (options.syncNowFails) throw options.syncNowFails;
    },
    now: () => clock,
    synced: (groups, seconds) => synced.push({ groups: groups.map((g) => g.name), seconds }),
    failed: (error) => {
      failures.push(error);
      return new Error(`wrapped: ${error.message}`);
    },
  });
  const group = (name: string, durable = true): TestGroup => ({
    name,
    durable,
    resolve: () => settled.push(`${name} ok`),
    reject: (error) => settled.push(`${name} failed: ${(error as Error).message}`),
  });
  /** Ends the oldest running sync. */
  const end = (error: Error | null = null) => running.shift()!(error);
  return {
    sync,
    running,
    settled,
    synced,
    failures,
    group,
    end,
    syncNowCalls: () => syncNowCalls,
    tick: (ms: number) => (clock += ms),
  };
}

describe('DurableSync', () => {
  it('a durable group resolves only when the sync started after its commit has ended', () => {
    const h = harness();
    h.sync.committed(h.group('a'));
    expect(h.running).toHaveLength(1);
    expect(h.sync.pending).toBe(true);
    expect(h.settled).toEqual([]);
    h.tick(3);
    h.end();
    expect(h.settled).toEqual(['a ok']);
    expect(h.synced).toEqual([{ groups: ['a'], seconds: 0.003 }]);
    expect(h.sync.pending).toBe(false);
    expect(h.sync.started).toBe(1);
  });

  it('groups committed while a sync runs wait for the next one, which covers all of them', () => {
    const h = harness();
    h.sync.committed(h.group('a'));
    h.sync.committed(h.group('b'));
    h.sync.committed(h.group('c'));
    // At most one sync in flight; b and c committed after it started, so it cannot cover them.
    expect(h.running).toHaveLength(1);
    h.end();
    expect(h.settled).toEqual(['a ok']);
    expect(h.running).toHaveLength(1);
    h.sync.committed(h.group('d'));
    h.end();
    expect(h.settled).toEqual(['a ok', 'b ok', 'c ok']);
    h.end();
    expect(h.settled).toEqual(['a ok', 'b ok', 'c ok', 'd ok']);
    expect(h.synced.map((s) => s.groups)).toEqual([['a'], ['b', 'c'], ['d']]);
    expect(h.sync.started).toBe(3);
    expect(h.running).toHaveLength(0);
  });

  it('a group without durable writes resolves at once when nothing waits, without a sync', () => {
    const h = harness();
    h.sync.committed(h.group('progress', false));
    expect(h.settled).toEqual(['progress ok']);
    expect(h.running).toHaveLength(0);
    expect(h.sync.started).toBe(0);
  });

  it('a group without durable writes does not overtake an earlier durable one: groups settle in commit order', () => {
    const h = harness();
    h.sync.committed(h.group('a'));
    h.sync.committed(h.group('progress', false));
    expect(h.settled).toEqual([]);
    h.end();
    // Only non-durable groups were waiting: they settle without another sync.
    expect(h.settled).toEqual(['a ok', 'progress ok']);
    expect(h.running).toHaveLength(0);
    h.sync.committed(h.group('b'));
    h.sync.committed(h.group('p2', false));
    h.sync.committed(h.group('c'));
    h.end();
    h.end();
    expect(h.settled).toEqual(['a ok', 'progress ok', 'b ok', 'p2 ok', 'c ok']);
  });

  it('with nothing to sync (no WAL file) a committed group resolves at once', () => {
    const h = harness({ noWal: true });
    h.sync.committed(h.group('a'));
    expect(h.settled).toEqual(['a ok']);
    expect(h.sync.pending).toBe(false);
  });

  it('a failed sync rejects the groups it covered, those waiting and every later one; no sync starts again', () => {
    const h = harness();
    h.sync.committed(h.group('a'));
    h.sync.committed(h.group('b'));
    const eio = Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
    h.end(eio);
    expect(h.failures).toEqual([eio]);
    expect(h.settled).toEqual(['a failed: wrapped: EIO: i/o error, fdatasync', 'b failed: wrapped: EIO: i/o error, fdatasync']);
    expect(h.sync.failure?.message).toBe('wrapped: EIO: i/o error, fdatasync');
    expect(h.running).toHaveLength(0);
    h.sync.committed(h.group('c'));
    h.sync.committed(h.group('progress', false));
    expect(h.settled.slice(2)).toEqual(['c failed: wrapped: EIO: i/o error, fdatasync', 'progress failed: wrapped: EIO: i/o error, fdatasync']);
    expect(h.running).toHaveLength(0);
    expect(h.synced).toEqual([]);
    expect(h.sync.pending).toBe(false);
    // close() after a failure syncs nothing: there is nothing left that could be made durable.
    h.sync.drainNow();
    expect(h.syncNowCalls()).toBe(0);
    expect(h.failures).toHaveLength(1);
  });

  it('drainNow syncs on the calling thread once for the running and the waiting groups; the late end of the running sync is ignored', () => {
    const h = harness();
    h.sync.committed(h.group('a'));
    h.sync.committed(h.group('b'));
    h.tick(2);
    h.sync.drainNow();
    expect(h.syncNowCalls()).toBe(1);
    expect(h.settled).toEqual(['a ok', 'b ok']);
    expect(h.synced).toEqual([{ groups: ['a', 'b'], seconds: 0 }]);
    expect(h.sync.pending).toBe(false);
    h.end();
    expect(h.settled).toEqual(['a ok', 'b ok']);
    expect(h.synced).toHaveLength(1);
    expect(h.running).toHaveLength(0);
    // Even a failure reported late by that sync changes nothing: the drain's sync came after it.
    h.sync.committed(h.group('c'));
    h.sync.drainNow();
    h.end(new Error('late'));
    expect(h.sync.failure).toBeNull();
    expect(h.settled).toEqual(['a ok', 'b ok', 'c ok']);
  });

  it('drainNow with nothing pending does not sync', () => {
    const h = harness();
    h.sync.drainNow();
    h.sync.committed(h.group('progress', false));
    h.sync.drainNow();
    expect(h.syncNowCalls()).toBe(0);
  });

  it('a failing drain rejects every group it was to cover and fails for good', () => {
    const h = harness({ syncNowFails: new Error('EIO') });
    h.sync.committed(h.group('a'));
    h.sync.committed(h.group('b'));
    h.sync.drainNow();
    expect(h.settled).toEqual(['a failed: wrapped: EIO', 'b failed: wrapped: EIO']);
    expect(h.sync.failure?.message).toBe('wrapped: EIO');
  });

  it('an observer that throws does not keep durable groups waiting', () => {
    const settled: string[] = [];
    const running: Array<(error: Error | null) => void> = [];
    const sync = new DurableSync({
      start: (done) => (running.push(done), true),
      syncNow: () => undefined,
      now: () => 0,
      synced: () => {
        throw new Error('broken observer');
      },
      failed: (error) => error,
    });
    sync.committed({ durable: true, resolve: () => settled.push('a'), reject: () => settled.push('a failed') });
    sync.committed({ durable: true, resolve: () => settled.push('b'), reject: () => settled.push('b failed') });
    running.shift()!(null);
    running.shift()!(null);
    expect(settled).toEqual(['a', 'b']);
  });
});
