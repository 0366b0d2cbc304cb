import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createServerMetrics } from '../../engine/metrics.js';
import { EventLoopDelay, eventLoopDelay, nodeMetrics } from './node-metrics.js';
import { startNodeServer } from './serve.js';

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

  it('serves each nodejs_eventloop_lag_* family once, the percentiles from the monitor that pauses', async () => {
    const { metrics } = setUp();
    const delay = eventLoopDelay();
    delay.busy();
    await sleep(350);
    const text = await metrics.registry.scrape();
    for (const figure of ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99']) {
      const name = `nodejs_eventloop_lag_${figure}_seconds`;
      expect(text.split('\n').filter((l) => l === `# TYPE ${name} gauge`), name).toHaveLength(1);
      // Samples fell since the monitor started: every figure is a delay, about the 100 ms period.
      const value = sample(text, name)!;
      expect(value, name).toBeGreaterThanOrEqual(0);
      expect(value, name).toBeLessThan(10);
    }
    expect(sample(text, 'nodejs_eventloop_lag_max_seconds')).toBeGreaterThanOrEqual(0.09);
    expect(text).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
    // Read and forgotten: a scrape at once after finds no sample yet.
    const again = await metrics.registry.scrape();
    expect(again).toContain('nodejs_eventloop_lag_p99_seconds NaN\n');
  });

  it('a commit wakes the paused process monitor', () => {
    const { onCommit } = setUp();
    const delay = eventLoopDelay();
    delay.pause();
    expect(delay.active).toBe(false);
    onCommit({ transactions: 1, seconds: 0.001, syncSeconds: null });
    expect(delay.active).toBe(true);
  });
});

describe('the event-loop delay monitor', () => {
  const monitors: EventLoopDelay[] = [];
  afterEach(() => {
    for (const m of monitors.splice(0)) m.pause();
  });
  const monitor = (sampleMs: number, idleMs: number) => {
    const m = new EventLoopDelay(sampleMs, idleMs);
    monitors.push(m);
    return m;
  };
  const until = async (what: () => boolean, ms: number) => {
    const deadline = Date.now() + ms;
    while (!what() && Date.now() < deadline) await sleep(5);
    return what();
  };

  it('samples from the first busy until a whole idle period passes without one, then again at the next', async () => {
    const m = monitor(10, 100);
    expect(m.active).toBe(false);
    m.busy();
    expect(m.active).toBe(true);
    await sleep(60);
    expect(m.take().max).toBeGreaterThan(0);
    // No busy: paused after one or two idle periods.
    expect(await until(() => !m.active, 5_000)).toBe(true);
    m.take();
    await sleep(100);
    // Nothing sampled while paused.
    expect(m.take().max).toBeNaN();
    m.busy();
    expect(m.active).toBe(true);
    await sleep(60);
    const { min, max, p99 } = m.take();
    for (const figure of [min, max, p99]) expect(figure).toBeGreaterThan(0);
  });

  it('keeps sampling while busy comes within each idle period', async () => {
    const m = monitor(10, 100);
    m.busy();
    // A timer of 10 ms always falls due before the next idle check, whatever else delays both.
    const work = setInterval(() => m.busy(), 10);
    try {
      for (let i = 0; i < 5; i++) {
        await sleep(100);
        expect(m.active).toBe(true);
      }
    } finally {
      clearInterval(work);
    }
    expect(await until(() => !m.active, 5_000)).toBe(true);
  });

  it('answers NaN for every figure when nothing was sampled', () => {
    const m = monitor(10, 100);
    expect(Object.values(m.take()).every(Number.isNaN)).toBe(true);
  });
});

describe('requests on the Node host', () => {
  it('a request wakes the paused process monitor', async () => {
    const data = mkdtempSync(join(tmpdir(), 'rivulet-node-metrics-serve-'));
    dirs.push(data);
    const server = await startNodeServer({ port: 0, data, logger: { error: () => undefined } });
    try {
      const delay = eventLoopDelay();
      // Start-up's last commit reports when its fsync ends, which wakes the monitor: pause it
      // once that has happened and it stays paused.
      for (let tries = 0; tries < 50; tries++) {
        delay.pause();
        await sleep(100);
        if (!delay.active) break;
      }
      expect(delay.active).toBe(false);
      const response = await fetch(`${server.url}/v1/streams/nothing-here`);
      expect(response.status).toBe(200);
      expect(delay.active).toBe(true);
    } finally {
      await server.close();
    }
  });
});
