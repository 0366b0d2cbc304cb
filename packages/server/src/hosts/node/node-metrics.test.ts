import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createServerMetrics } from '../../engine/metrics.js';
import { nodeMetrics } from './node-metrics.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function setUp(rpcSessions = () => 0) {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-node-metrics-'));
  dirs.push(dir);
  const metrics = createServerMetrics();
  const databaseFile = join(dir, 'rivulet.db');
  const onCommit = nodeMetrics(metrics, { databaseFile, rpcSessions });
  return { metrics, databaseFile, onCommit };
}

const sample = (text: string, name: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
};

describe('the Node host metrics', () => {
  it('turns each commit report into the group-size, commit and fsync histograms; no fsync observed without a sync', () => {
    const { metrics, onCommit } = setUp();
    onCommit({ transactions: 3, seconds: 0.002, syncSeconds: 0.0015 });
    onCommit({ transactions: 1, seconds: 0.0001, syncSeconds: null });
    const text = metrics.registry.render();
    expect(sample(text, 'rivulet_storage_group_commit_transactions_count')).toBe(2);
    expect(sample(text, 'rivulet_storage_group_commit_transactions_sum')).toBe(4);
    expect(text).toContain('rivulet_storage_group_commit_transactions_bucket{le="2"} 1\n');
    expect(text).toContain('rivulet_storage_group_commit_transactions_bucket{le="4"} 2\n');
    expect(sample(text, 'rivulet_storage_commit_duration_seconds_count')).toBe(2);
    expect(sample(text, 'rivulet_storage_commit_duration_seconds_sum')).toBeCloseTo(0.0021, 9);
    expect(sample(text, 'rivulet_storage_fsync_duration_seconds_count')).toBe(1);
    expect(sample(text, 'rivulet_storage_fsync_duration_seconds_sum')).toBe(0.0015);
  });

  it('reads the database and WAL sizes at scrape time: 0 while a file is missing', () => {
    const { metrics, databaseFile } = setUp();
    let text = metrics.registry.render();
    expect(sample(text, 'rivulet_database_bytes')).toBe(0);
    expect(sample(text, 'rivulet_database_wal_bytes')).toBe(0);
    writeFileSync(databaseFile, Buffer.alloc(4096));
    writeFileSync(`${databaseFile}-wal`, Buffer.alloc(1234));
    text = metrics.registry.render();
    expect(sample(text, 'rivulet_database_bytes')).toBe(4096);
    expect(sample(text, 'rivulet_database_wal_bytes')).toBe(1234);
  });

  it('asks for the open RPC sessions at every scrape', () => {
    let sessions = 0;
    const { metrics } = setUp(() => sessions);
    expect(sample(metrics.registry.render(), 'rivulet_rpc_sessions')).toBe(0);
    sessions = 3;
    expect(sample(metrics.registry.render(), 'rivulet_rpc_sessions')).toBe(3);
  });

  it('appends the process metrics to the scrape, for every server of the process alike', async () => {
    const first = setUp();
    const second = setUp();
    // The CPU counter counts from the process registry's creation, and the kernel accounts user
    // time by the tick: a scrape a few milliseconds later can read 0. Spend some first.
    const from = process.cpuUsage().user;
    while (process.cpuUsage().user - from < 20_000) Math.sqrt(Math.random());
    for (const { metrics } of [first, second]) {
      const text = await metrics.registry.scrape();
      expect(text.startsWith(metrics.registry.render())).toBe(true);
      expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
      expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
      expect(text).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
      expect(text.split('\n').filter((l) => l === '# TYPE process_resident_memory_bytes gauge')).toHaveLength(1);
      expect(text.endsWith('\n')).toBe(true);
    }
  });
});
