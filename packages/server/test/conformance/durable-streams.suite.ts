/**
 * The public Durable Streams conformance suite, run as it is against the server at
 * DS_CONFORMANCE_URL (docs/durable-streams.md "Conformance"). Started by
 * test/e2e/durable-streams-conformance.test.ts in a vitest process of its own (vitest.config.ts
 * beside this file), so that the suite's own test timeouts apply and its results can be counted.
 */
import { runConformanceTests } from '@durable-streams/server-conformance-tests';

const baseUrl = process.env.DS_CONFORMANCE_URL;
if (baseUrl === undefined) throw new Error('DS_CONFORMANCE_URL must name the server under test');

runConformanceTests({ baseUrl, longPollTimeoutMs: Number(process.env.DS_LONG_POLL_TIMEOUT_MS ?? 1000) });
