/**
 * The conformance tests this server is known not to pass, each with its reason; the same list is
 * in docs/durable-streams.md "Conformance". Any other failing test fails
 * test/e2e/durable-streams-conformance.test.ts.
 */
export const KNOWN_FAILURES: ReadonlyMap<string, string> = new Map([
  // Not a server fault: the test compares 100 KiB byte by byte with one expect() each, which on a
  // loaded machine outlasts its 5 s timeout (it passes whenever the machine is idle).
  ['Chunking and Large Payloads should handle chunk-size pagination correctly', 'slow check in the test itself'],
]);

/** The fewest tests that must pass; raised as the server passes more. */
export const MIN_PASSED = 331;

/** The same for the Worker host under Miniflare, where tests that run out of time are also allowed. */
export const WORKER_KNOWN_FAILURES: ReadonlyMap<string, string> = new Map([
  ...KNOWN_FAILURES,
  // Miniflare answers the 413 before the 10 MiB body has been sent and closes the connection, so
  // the client's fetch fails with a reset instead of reading the answer.
  ['Chunking and Large Payloads should handle large payload appropriately', 'Miniflare closes the connection on an early 413'],
  // Two 1.5 s sleeps around a 2 s TTL leave 0.5 s for the requests: too little for the Worker host
  // under Miniflare while the suite runs its tests concurrently.
  ['TTL Expiration Behavior should extend TTL on write (sliding window)', 'request latency under Miniflare exceeds the slack'],
]);

export const WORKER_MIN_PASSED = 300;
