/**
 * Vitest reporter that writes the totals of a run to a JSON file, so that scripts/test.mjs can end
 * with the plain line "N passed, N failed" (.ci/run relies on it).
 */
import { writeFileSync } from 'node:fs';
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
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
}
