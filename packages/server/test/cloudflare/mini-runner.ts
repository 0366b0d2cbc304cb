/**
 * A minimal test collector and runner with vitest's describe/it/beforeEach/afterEach shape, for
 * checks that must run where vitest cannot: inside workerd (storage-checks.ts against the Durable
 * Object adapter). Collecting is synchronous and needs nothing but JavaScript, so the vitest file
 * in Node collects the same checks to learn their names, and the Worker runs them and answers one
 * result per name. Tests run one at a time in declaration order; hooks of enclosing suites run
 * outside-in before a test and inside-out after it.
 */
import type { ConformanceApi } from '../storage-checks.js';

type Fn = () => unknown;
type TestFn = (ctx: { skip(): void }) => unknown;

interface Suite {
  name: string;
  parent: Suite | null;
  before: Fn[];
  after: Fn[];
}

export interface CollectedTest {
  /** Suite names and the test name joined with " > " (vitest's full name). */
  fullName: string;
  suites: Suite[];
  fn: TestFn;
}

export interface CheckResult {
  fullName: string;
  outcome: 'passed' | 'failed' | 'skipped';
  error?: string;
}

class Skipped extends Error {}

/** Collects the tests `define` declares with the runner functions it is given. */
export function collect(define: (api: Omit<ConformanceApi, 'expect'>) => void): CollectedTest[] {
  const tests: CollectedTest[] = [];
  let current: Suite = { name: '', parent: null, before: [], after: [] };
  const chain = (suite: Suite): Suite[] => {
    const out: Suite[] = [];
    for (let s: Suite | null = suite; s; s = s.parent) out.unshift(s);
    return out;
  };
  define({
    describe(name, fn) {
      const suite: Suite = { name, parent: current, before: [], after: [] };
      current = suite;
      try {
        fn();
      } finally {
        current = suite.parent!;
      }
    },
    it(name, fn) {
      const suites = chain(current);
      const fullName = [...suites.map((s) => s.name).filter((n) => n !== ''), name].join(' > ');
      tests.push({ fullName, suites, fn });
    },
    beforeEach(fn) {
      current.before.push(fn);
    },
    afterEach(fn) {
      current.after.push(fn);
    },
  });
  return tests;
}

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/** Runs collected tests one by one; a failing afterEach fails its test. */
export async function runCollected(tests: readonly CollectedTest[]): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const test of tests) {
    let outcome: CheckResult['outcome'] = 'passed';
    let error: string | undefined;
    const fail = (e: unknown) => {
      if (outcome === 'passed') {
        outcome = 'failed';
        error = describeError(e);
      }
    };
    try {
      for (const suite of test.suites) for (const hook of suite.before) await hook();
      await test.fn({
        skip() {
          throw new Skipped('skipped');
        },
      });
    } catch (e) {
      if (e instanceof Skipped) outcome = 'skipped';
      else fail(e);
    }
    for (const suite of [...test.suites].reverse()) {
      for (const hook of suite.after) {
        try {
          await hook();
        } catch (e) {
          fail(e);
        }
      }
    }
    results.push(error === undefined ? { fullName: test.fullName, outcome } : { fullName: test.fullName, outcome, error });
  }
  return results;
}
