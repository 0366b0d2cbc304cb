/**
 * The public Durable Streams conformance suite against a real `rivulet serve` with a 1 s long-poll
 * and `--cors-origin *` (docs/durable-streams.md "Conformance"): prints the count, and fails when fewer than
 * MIN_PASSED tests pass or any test outside KNOWN_FAILURES fails.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServe, type CliServer } from '../helpers/cli.js';
import { KNOWN_FAILURES, MIN_PASSED } from '../conformance/known-failures.js';
import { runSuite } from '../conformance/run-suite.js';

const LONG_POLL_MS = 1000;

describe('Durable Streams conformance (rivulet serve)', () => {
  let server: CliServer;
  let data: string;

  beforeAll(async () => {
    data = mkdtempSync(join(tmpdir(), 'rivulet-ds-'));
    // The suite sends a CORS preflight: a public Durable Streams server allows every origin.
    server = await spawnServe(['--data', data, '--long-poll-timeout-ms', String(LONG_POLL_MS), '--cors-origin', '*']);
  });

  afterAll(async () => {
    await server?.kill('SIGTERM');
    rmSync(data, { recursive: true, force: true });
  });

  it('passes the suite but for the known failures', async () => {
    const result = await runSuite(server.url, LONG_POLL_MS);
    console.log(
      `Durable Streams conformance: ${result.passed.length} passed, ${result.failed.length} failed, ${result.skipped.length} skipped, ${result.total} total`,
    );
    for (const failure of result.failed) console.log(`  failed: ${failure.name}: ${failure.message}`);
    const unexpected = result.failed.filter((failure) => !KNOWN_FAILURES.has(failure.name));
    expect(unexpected).toEqual([]);
    expect(result.passed.length).toBeGreaterThanOrEqual(MIN_PASSED);
  }, 300_000);
});
