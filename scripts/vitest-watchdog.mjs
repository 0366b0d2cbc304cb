/**
 * Runs vitest in a process group of its own, under a watchdog (scripts/test.mjs uses it).
 *
 * A test that blocks its worker's event loop (a synchronous call or a match that never returns)
 * cannot reach its own timeout, and vitest waits for that worker forever. The watchdog reads the
 * progress file that scripts/vitest-summary-reporter.ts keeps, names each file still running and
 * the test it started last, and stops the whole group when one file has run longer than
 * `fileLimitMs`, one test (the last its file started, while it has no result yet) longer than
 * `testLimitMs` (off unless given: it suits only a run whose every test has a shorter
 * timeout), or the run longer than `runLimitMs`. When vitest ends by itself, any process a test
 * left behind in the group is named and killed.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The reporter's progress file: counts so far and the files running; empty when unreadable. */
export function readProgress(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return { passed: 0, failed: 0, running: [] };
  }
}

/**
 * `env` must name RIVULET_TEST_PROGRESS (and may name RIVULET_TEST_SUMMARY) for the reporter.
 * Resolves to { ok, code, stopped, leftovers }: `stopped` when the watchdog ended the run,
 * `leftovers` the processes ("pid command") found in the group after vitest exited.
 */
export function runVitest(args, env, options = {}) {
  const fileLimitMs = options.fileLimitMs ?? 300_000;
  const runLimitMs = options.runLimitMs ?? 2_400_000;
  const testLimitMs = options.testLimitMs ?? Infinity;
  const pollMs = options.pollMs ?? 5000;
  const log = options.log ?? ((line) => console.log(line));
  const started = Date.now();
  const child = spawn('npx', args, { stdio: options.stdio ?? 'inherit', cwd: options.cwd, detached: true, env: { ...process.env, ...env } });
  let stopped = false;
  const stopGroup = () => {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  };
  const watchdog = setInterval(() => {
    const now = Date.now();
    const { running } = readProgress(env.RIVULET_TEST_PROGRESS);
    const hung = running.some((r) => now - r.startedAt > fileLimitMs);
    const testHung = running.some((r) => r.lastTestAt !== undefined && !r.lastTestEnded && now - r.lastTestAt > testLimitMs);
    const overRun = now - started > runLimitMs;
    if (!hung && !testHung && !overRun) return;
    log(
      overRun
        ? `✘ the test run took over ${runLimitMs / 1000} s: stopping it`
        : hung
          ? `✘ a test file ran for over ${fileLimitMs / 1000} s: stopping the run`
          : `✘ a test ran for over ${testLimitMs / 1000} s: stopping the run`,
    );
    for (const r of running) {
      const last = r.lastTest ? `; its last test started ${((now - r.lastTestAt) / 1000).toFixed(0)} s ago: ${r.lastTest}` : '; no test of it reported starting';
      log(`  still running [${r.project}] ${r.file} for ${((now - r.startedAt) / 1000).toFixed(0)} s${last}`);
    }
    stopped = true;
    clearInterval(watchdog);
    stopGroup();
  }, pollMs);
  const onSignal = () => {
    stopGroup();
    process.exit(1);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return new Promise((resolve) => {
    child.once('exit', (code) => {
      clearInterval(watchdog);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      const leftovers = stopped ? [] : leftInGroup(child.pid);
      if (leftovers.length > 0) {
        log(`✘ ${leftovers.length} process(es) that tests started were still running after the run (killed now):`);
        for (const line of leftovers) log(`  ${line}`);
        stopGroup();
      }
      resolve({ ok: code === 0 && !stopped && leftovers.length === 0, code, stopped, leftovers });
    });
  });
}

/** The processes still running in the process group `pgid` ("pid command"), from ps. */
function leftInGroup(pgid) {
  const ps = spawnSync('ps', ['-eo', 'pgid=,pid=,stat=,args='], { encoding: 'utf8' });
  return ps.status === 0 ? runningInGroup(ps.stdout, pgid) : [];
}

/**
 * From `ps -eo pgid=,pid=,stat=,args=` output, the processes of group `pgid` that still run. A
 * zombie has ended already (only its parent has not collected it; in a container whose first
 * process does not reap, an orphan's stays), so it is not one.
 */
export function runningInGroup(psOutput, pgid) {
  return psOutput
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => Number(f[0]) === pgid && f[2] !== undefined && !f[2].startsWith('Z'))
    .map((f) => `${f[1]} ${f.slice(3).join(' ')}`);
}
