/**
 * The suite's own watchdog (scripts/vitest-watchdog.mjs): a test file that blocks its worker's event
 * loop would hold the whole run forever, since its own timeout cannot fire. Each case runs a nested
 * vitest on one fixture file (test/fixtures/watchdog/) with the project's progress reporter.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { readProgress, runVitest, runningInGroup } from '../../../scripts/vitest-watchdog.mjs';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function run(fixture: string, fileLimitMs: number, testLimitMs?: number) {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-watchdog-'));
  dirs.push(dir);
  const progress = join(dir, 'progress.json');
  const lines: string[] = [];
  const t0 = Date.now();
  const outcome = await runVitest(
    ['vitest', 'run', '--config', 'packages/server/test/fixtures/watchdog/vitest.config.mjs', '--reporter=./scripts/vitest-summary-reporter.ts'],
    { RIVULET_TEST_PROGRESS: progress, WATCHDOG_FIXTURE: fixture },
    { fileLimitMs, testLimitMs, pollMs: 200, log: (line) => lines.push(line), stdio: 'ignore', cwd: ROOT },
  );
  return { outcome, lines, progress: readProgress(progress), ms: Date.now() - t0 };
}

describe('the test-run watchdog', () => {
  it('stops a run whose test blocks its event loop, naming the file and the test it started last', async () => {
    // Stopped by the per-test limit, which counts from the blocking test's reported start: a file
    // limit counts from the file's start, and under a loaded full run its import and first
    // reports took over 8 s twice (two CI runs failed on that race), so it could fire first.
    const { outcome, lines, progress, ms } = await run('blocks.fixture.ts', 90_000, 2000);
    expect(outcome.stopped).toBe(true);
    expect(outcome.ok).toBe(false);
    expect(lines[0]).toBe('✘ a test ran for over 2 s: stopping the run');
    expect(lines[1]).toMatch(/^ {2}still running \[\] blocks\.fixture\.ts for \d+ s; its last test started \d+ s ago: never yields$/);
    // What finished before the hang is still counted.
    expect(progress.passed).toBe(1);
    // Stopped soon after the limit, not after the blocking test's two minutes.
    expect(ms).toBeLessThan(60_000);
    // Its own timeout covers the nested run's slow start under a loaded suite (over 20 s once) up
    // to the 90 s file limit that backs the per-test one.
  }, 120_000);

  it('stops a run whose file outlasts the file limit before any test reports starting', async () => {
    const { outcome, lines } = await run('blocks.fixture.ts', 1);
    expect(outcome.stopped).toBe(true);
    expect(lines[0]).toBe('✘ a test file ran for over 0.001 s: stopping the run');
    expect(lines[1]).toMatch(/^ {2}still running \[\] blocks\.fixture\.ts for \d+ s; (no test of it reported starting|its last test started \d+ s ago: .+)$/);
  });

  it('does not count a file between tests or in its hooks against the per-test limit', async () => {
    // The afterAll waits 3 s after the one test ended; the per-test limit is 1 s.
    const { outcome, lines, progress } = await run('slow-hook.fixture.ts', 60_000, 1000);
    expect(outcome).toEqual({ ok: true, code: 0, stopped: false, leftovers: [] });
    expect(lines).toEqual([]);
    expect(progress).toEqual({ passed: 1, failed: 0, running: [] });
  }, 90_000);

  it('lets a file that passes within the limit end the run by itself, with nothing left behind', async () => {
    const { outcome, lines, progress } = await run('passes.fixture.ts', 20_000);
    expect(outcome).toEqual({ ok: true, code: 0, stopped: false, leftovers: [] });
    expect(lines).toEqual([]);
    expect(progress).toEqual({ passed: 1, failed: 0, running: [] });
  });

  it('names and kills a process that a test left running after the run', async () => {
    const { outcome, lines } = await run('leaves-a-process.fixture.ts', 20_000);
    expect(outcome.code).toBe(0);
    expect(outcome.ok).toBe(false);
    expect(outcome.leftovers).toEqual([expect.stringMatching(/^\d+ sleep 117$/)]);
    expect(lines[0]).toBe('✘ 1 process(es) that tests started were still running after the run (killed now):');
    const pid = Number(outcome.leftovers[0]!.split(' ')[0]);
    // Killed: signalling it fails (it may linger as a zombie of init for a moment, so allow that).
    await expect.poll(() => alive(pid), { timeout: 5000 }).toBe(false);
  });
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
