/**
 * Runs the Durable Streams conformance suite (durable-streams.suite.ts) in a vitest process of its
 * own against `baseUrl` and counts its results from vitest's JSON report.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

export interface SuiteResult {
  passed: string[];
  /** `timedOut`: the suite's own per-test timer ran out (vitest reports it as STACK_TRACE_ERROR). */
  failed: { name: string; message: string; timedOut: boolean }[];
  /** Tests the suite itself skips (its subscription APIs are opt-in). */
  skipped: string[];
  total: number;
}

interface JsonReport {
  testResults: { assertionResults: { fullName: string; status: string; failureMessages: string[] }[] }[];
}

export async function runSuite(baseUrl: string, longPollTimeoutMs: number): Promise<SuiteResult> {
  const dir = mkdtempSync(join(tmpdir(), 'ds-conformance-'));
  const report = join(dir, 'report.json');
  try {
    const child = spawn(
      process.execPath,
      [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--root', HERE, '--config', join(HERE, 'vitest.config.ts'), '--reporter=json', `--outputFile=${report}`],
      { cwd: HERE, env: { ...process.env, DS_CONFORMANCE_URL: baseUrl, DS_LONG_POLL_TIMEOUT_MS: String(longPollTimeoutMs) }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    // Decoded as a stream: a character whose UTF-8 bytes a pipe splits between two chunks stays whole.
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (s: string) => (output += s));
    child.stderr.on('data', (s: string) => (output += s));
    await new Promise<void>((resolve) => child.once('exit', () => resolve()));
    let parsed: JsonReport;
    try {
      parsed = JSON.parse(readFileSync(report, 'utf8')) as JsonReport;
    } catch (error) {
      throw new Error(`the conformance run wrote no report; its output:\n${output}`, { cause: error });
    }
    const result: SuiteResult = { passed: [], failed: [], skipped: [], total: 0 };
    for (const file of parsed.testResults) {
      for (const test of file.assertionResults) {
        result.total++;
        if (test.status === 'passed') result.passed.push(test.fullName);
        else if (test.status === 'failed') {
          const message = (test.failureMessages[0] ?? '').split('\n')[0]!;
          result.failed.push({ name: test.fullName, message, timedOut: message === 'Error: STACK_TRACE_ERROR' });
        }
        else result.skipped.push(test.fullName);
      }
    }
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
