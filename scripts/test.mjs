#!/usr/bin/env node
// The whole test suite, as the README's test command and .ci/run run it: build, lint, type-check
// (sources and tests), then every vitest test (unit, conformance, end-to-end over loopback).
// Ends with one plain line "N passed, N failed"; the three static checks count as tests.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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
step('tests', 'npx', ['vitest', 'run', '--reporter=default', '--reporter=./scripts/vitest-summary-reporter.ts', ...extra], {
  RIVULET_TEST_SUMMARY: summary,
});
try {
  const totals = JSON.parse(readFileSync(summary, 'utf8'));
  passed += totals.passed;
  failed += totals.failed;
} catch {
  console.log('the test run wrote no summary: counting it as one failure');
  failed++;
}
rmSync(dir, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
