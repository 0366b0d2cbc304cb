/**
 * The suite's own watchdog (scripts/vitest-watchdog.mjs): a test file that blocks its worker's event
 * loop would hold the whole run forever, since its own timeout cannot fire. Each case runs a nested
 * vitest on one fixture file (test/fixtures/watchdog/) with the project's progress reporter.
 *
 * A nested vitest starts slowly when the suite around it is busy (over 20 s, and once about a
 * minute, on CI's two cores), so no case here may depend on how long that start takes: the limits
 * under test count from the nested file's or test's reported start, the fixtures have no clock of
 * their own that could end them first, and each case may take as long as its nested run needs.
 * What the nested vitest printed is kept and shown with any failing expectation.
 */
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { readProgress, runVitest, runningInGroup } from '../../../scripts/vitest-watchdog.mjs';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** Each case's own timeout: room for a nested run's slowest start, bounded all the same. */
const NESTED_CASE_MS = 180_000;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function run(fixture: string, fileLimitMs: number, testLimitMs?: number) {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-watchdog-'));
  dirs.push(dir);
  const progress = join(dir, 'progress.json');
  const log = join(dir, 'nested.log');
  const lines: string[] = [];
  let stoppedAt: number | undefined;
  const t0 = Date.now();
  const fd = openSync(log, 'w');
  const outcome = await runVitest(
    ['vitest', 'run', '--config', 'packages/server/test/fixtures/watchdog/vitest.config.mjs', '--reporter=./scripts/vitest-summary-reporter.ts'],
    // Its own summary file: the suite's (RIVULET_TEST_SUMMARY, inherited) is not the nested run's.
    { RIVULET_TEST_PROGRESS: progress, RIVULET_TEST_SUMMARY: join(dir, 'summary.json'), WATCHDOG_FIXTURE: fixture },
    {
      fileLimitMs,
      testLimitMs,
      pollMs: 200,
      log: (line) => {
        stoppedAt ??= Date.now();
        lines.push(line);
      },
      stdio: ['ignore', fd, fd],
      cwd: ROOT,
    },
  ).finally(() => closeSync(fd));
  const seen = readProgress(progress);
  // Shown with every failing expectation of a case: what the nested vitest printed, and when.
  const context = `nested run of ${fixture}, ${Date.now() - t0} ms; watchdog: ${JSON.stringify(lines)}; progress: ${JSON.stringify(seen)}; it printed:\n${readFileSync(log, 'utf8')}`;
  return { outcome, lines, progress: seen, stoppedAt, context };
}

describe('the test-run watchdog', () => {
  it('stops a run whose test blocks its event loop, naming the file and the test it started last', async () => {
    // Stopped by the per-test limit, which counts from the blocking test's reported start; the
    // file limit behind it counts from the file's start, which under a loaded suite can come late.
    const { outcome, lines, progress, stoppedAt, context } = await run('blocks.fixture.ts', 150_000, 2000);
    expect(outcome.stopped, context).toBe(true);
    expect(outcome.ok, context).toBe(false);
    expect(lines[0], context).toBe('✘ a test ran for over 2 s: stopping the run');
    expect(lines[1], context).toMatch(/^ {2}still running \[\] blocks\.fixture\.ts for \d+ s; its last test started \d+ s ago: never yields$/);
    // What finished before the hang is still counted.
    expect(progress.passed, context).toBe(1);
    // Stopped soon after the limit, counted from the test's reported start: at most a few polls
    // late (the watchdog polls every 200 ms), however long the nested run took to get there.
    const blocking = progress.running.find((r) => r.lastTest === 'never yields');
    expect(blocking?.lastTestAt, context).toBeDefined();
    expect(stoppedAt! - blocking!.lastTestAt!, context).toBeGreaterThanOrEqual(2000);
    expect(stoppedAt! - blocking!.lastTestAt!, context).toBeLessThan(5000);
  }, NESTED_CASE_MS);

  it('stops a run whose file outlasts the file limit before any test reports starting', async () => {
    const { outcome, lines, context } = await run('blocks.fixture.ts', 1);
    expect(outcome.stopped, context).toBe(true);
    expect(lines[0], context).toBe('✘ a test file ran for over 0.001 s: stopping the run');
    expect(lines[1], context).toMatch(/^ {2}still running \[\] blocks\.fixture\.ts for \d+ s; (no test of it reported starting|its last test started \d+ s ago: .+)$/);
  }, NESTED_CASE_MS);

  it('does not count a file between tests or in its hooks against the per-test limit', async () => {
    // The afterAll waits 3 s after the one test ended; the per-test limit is 1 s.
    const { outcome, lines, progress, context } = await run('slow-hook.fixture.ts', 60_000, 1000);
    expect(outcome, context).toEqual({ ok: true, code: 0, stopped: false, leftovers: [] });
    expect(lines, context).toEqual([]);
    expect(progress, context).toEqual({ passed: 1, failed: 0, running: [] });
  }, NESTED_CASE_MS);

  it('lets a file that passes within the limit end the run by itself, with nothing left behind', async () => {
    const { outcome, lines, progress, context } = await run('passes.fixture.ts', 20_000);
    expect(outcome, context).toEqual({ ok: true, code: 0, stopped: false, leftovers: [] });
    expect(lines, context).toEqual([]);
    expect(progress, context).toEqual({ passed: 1, failed: 0, running: [] });
  }, NESTED_CASE_MS);

  it('names and kills a process that a test left running after the run', async () => {
    const { outcome, lines, context } = await run('leaves-a-process.fixture.ts', 20_000);
    expect(outcome.code, context).toBe(0);
    expect(outcome.ok, context).toBe(false);
    expect(outcome.leftovers, context).toEqual([expect.stringMatching(/^\d+ sleep 117$/)]);
    expect(lines[0], context).toBe('✘ 1 process(es) that tests started were still running after the run (killed now):');
    const pid = Number(outcome.leftovers[0]!.split(' ')[0]);
    // Killed: signalling it fails (it may linger as a zombie of init for a moment, so allow that).
    await expect.poll(() => alive(pid), { timeout: 5000 }).toBe(false);
  }, NESTED_CASE_MS);
});

describe('which processes count as left behind', () => {
  it('those of the group that still run, not a zombie nor another group', () => {
    const ps = [' 4390  4399 Z    [esbuild] <defunct>', ' 4390  4401 S    sleep 117', ' 4390  4402 Sl   node server.js --port 0', '  100  4403 S    sleep 5', ''].join('\n');
    expect(runningInGroup(ps, 4390)).toEqual(['4401 sleep 117', '4402 node server.js --port 0']);
    expect(runningInGroup(ps, 1)).toEqual([]);
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !isZombie(pid);
  } catch {
    return false;
  }
}

function isZombie(pid: number): boolean {
  try {
    return /\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
