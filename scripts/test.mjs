#!/usr/bin/env node
// The whole test suite, as the README's test command and .ci/run run it: build, lint, type-check
// (sources and tests), then every vitest test (unit, conformance, end-to-end over loopback).
// Ends with one plain line "N passed, N failed"; the three static checks count as tests. vitest runs
// under a watchdog (scripts/vitest-watchdog.mjs): a file that hangs is named and counts as a failure.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readProgress, runVitest } from './vitest-watchdog.mjs';

const extra = process.argv.slice(2);
let passed = 0;
let failed = 0;

function step(name, command, args, env = {}) {
  console.log(`\n▶ ${name}: ${command} ${args.join(' ')}`);
  const started = Date.now();
  const result = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, ...env } });
  const ok = result.status === 0;
  console.log(`${ok ? '✔' : '✘'} ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  return ok;
}

for (const [name, script] of [
  ['build', 'build'],
  ['lint', 'lint'],
  ['typecheck', 'typecheck'],
]) {
  if (step(name, 'npm', ['run', '--silent', script])) passed++;
  else failed++;
}

const dir = mkdtempSync(join(tmpdir(), 'rivulet-test-'));
const summary = join(dir, 'summary.json');
const progress = join(dir, 'progress.json');
console.log('\n▶ tests: npx vitest run');
const testsStarted = Date.now();
const outcome = await runVitest(['vitest', 'run', '--reporter=default', '--reporter=./scripts/vitest-summary-reporter.ts', ...extra], {
  RIVULET_TEST_SUMMARY: summary,
  RIVULET_TEST_PROGRESS: progress,
}, {
  // A file that runs this long is taken as hung (the slowest takes about 75 s), and so is the run.
  fileLimitMs: Number(process.env.RIVULET_TEST_FILE_LIMIT_S ?? 300) * 1000,
  runLimitMs: Number(process.env.RIVULET_TEST_RUN_LIMIT_S ?? 2400) * 1000,
});
try {
  const totals = JSON.parse(readFileSync(summary, 'utf8'));
  passed += totals.passed;
  failed += totals.failed;
} catch {
  if (outcome.stopped) {
    // The run was stopped: count what finished, and each file still running as a failure.
    const seen = readProgress(progress);
    passed += seen.passed;
    failed += seen.failed + Math.max(1, seen.running.length);
  } else {
    console.log('the test run wrote no summary: counting it as one failure');
    failed++;
  }
}
if (outcome.leftovers.length > 0) failed++;
console.log(`${outcome.ok ? '✔' : '✘'} tests (${((Date.now() - testsStarted) / 1000).toFixed(1)} s)`);
rmSync(dir, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
