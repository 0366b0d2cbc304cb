/**
 * Vitest reporter that writes the totals of a run to a JSON file, so that scripts/test.mjs can end
 * with the plain line "N passed, N failed" (.ci/run relies on it). While the run goes on it also
 * keeps a progress file: which test files are running, since when, and which test each started
 * last. scripts/test.mjs reads it to name a file that hangs (a test that blocks its worker's event
 * loop can never reach its own timeout) before it stops the run.
 */
import { writeFileSync } from 'node:fs';
import type { Reporter, TestCase, TestModule } from 'vitest/node';

interface Running {
  file: string;
  project: string;
  startedAt: number;
  lastTest?: string;
  lastTestAt?: number;
  /** The last test started has its result (the file is between tests, or in its hooks). */
  lastTestEnded?: boolean;
}

export default class SummaryReporter implements Reporter {
  private readonly running = new Map<string, Running>();
  private passed = 0;
  private failed = 0;

  onTestModuleStart(module: TestModule): void {
    this.running.set(module.id, { file: module.relativeModuleId, project: module.project.name, startedAt: Date.now() });
    this.writeProgress();
  }

  onTestCaseReady(test: TestCase): void {
    const entry = this.running.get(test.module.id);
    if (!entry) return;
    entry.lastTest = test.fullName;
    entry.lastTestAt = Date.now();
    entry.lastTestEnded = false;
    this.writeProgress();
  }

  onTestCaseResult(test: TestCase): void {
    const state = test.result().state;
    if (state === 'passed') this.passed++;
    else if (state === 'failed') this.failed++;
    const entry = this.running.get(test.module.id);
    if (entry && entry.lastTest === test.fullName) entry.lastTestEnded = true;
    this.writeProgress();
  }

  onTestModuleEnd(module: TestModule): void {
    this.running.delete(module.id);
    this.writeProgress();
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>, errors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const m of modules) {
      for (const test of m.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
      // A file that failed to load has no tests but is a failure.
      if (m.state() === 'failed' && [...m.children.allTests()].every((t) => t.result().state !== 'failed')) failed++;
    }
    failed += errors.length;
    const out = process.env.RIVULET_TEST_SUMMARY;
    if (out) writeFileSync(out, JSON.stringify({ passed, failed, skipped }));
  }

  private writeProgress(): void {
    const out = process.env.RIVULET_TEST_PROGRESS;
    if (out) writeFileSync(out, JSON.stringify({ passed: this.passed, failed: this.failed, running: [...this.running.values()] }));
  }
}
