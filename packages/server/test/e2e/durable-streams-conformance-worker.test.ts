/**
 * The public Durable Streams conformance suite against the Worker host under Miniflare with a 1 s
 * long-poll and every origin allowed (RIVULET_CORS_ORIGIN=*, as on Node; docs/durable-streams.md
 * "Conformance"): prints the count, and fails when fewer than WORKER_MIN_PASSED tests pass or any test outside WORKER_KNOWN_FAILURES fails other than by
 * running out of the suite's own time (Miniflare on a shared machine is slow; the count shows it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerHost, type WorkerTestHost } from '../helpers/worker-host.js';
import { WORKER_KNOWN_FAILURES, WORKER_MIN_PASSED } from '../conformance/known-failures.js';
import { runSuite } from '../conformance/run-suite.js';

const LONG_POLL_MS = 1000;

describe('Durable Streams conformance (Worker host under Miniflare)', () => {
  let host: WorkerTestHost;

  beforeAll(async () => {
    host = await startWorkerHost({ longPollTimeoutMs: LONG_POLL_MS, cors: { origins: ['*'] } });
  }, 60_000);

  afterAll(async () => {
    await host?.close();
  });

  it('passes the suite but for the known failures', async () => {
    const result = await runSuite(host.url, LONG_POLL_MS);
    console.log(
      `Durable Streams conformance on the Worker host: ${result.passed.length} passed, ${result.failed.length} failed, ${result.skipped.length} skipped, ${result.total} total`,
    );
    for (const failure of result.failed) console.log(`  failed: ${failure.name}: ${failure.message}`);
    const unexpected = result.failed.filter((failure) => !failure.timedOut && !WORKER_KNOWN_FAILURES.has(failure.name));
    expect(unexpected).toEqual([]);
    expect(result.passed.length).toBeGreaterThanOrEqual(WORKER_MIN_PASSED);
  }, 400_000);
});
