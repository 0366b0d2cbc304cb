// The vitest run of the Durable Streams conformance suite alone (durable-streams.suite.ts): the
// suite's defaults (5 s per test) and nothing of the workspace's configuration.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['durable-streams.suite.ts'],
    pool: 'forks',
    fileParallelism: false,
  },
});
