import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url));

/**
 * The end-to-end files that also run against the Cloudflare Workers host (Miniflare), as the
 * "worker" project: the same tests, with RIVULET_TEST_HOST=worker making startTestServer start the
 * Worker (packages/server/test/helpers/server.ts). Files left out test what the Worker host does
 * not have or cannot show (docs/cloudflare.md §4): the raw request path (workerd normalises URLs),
 * the SSE reader gauge (one isolate's), the Node host's internals (the trusted copy path, the worker
 * registry, kill -9 of a server process) and DNS-resolved webhook destinations.
 */
const workerE2e = [
  'streams',
  'health',
  'streams-lifecycle',
  'sse',
  'errors',
  'errors-routes',
  'auth',
  'concurrency',
  'regressions',
  'subscriptions-copy',
  'subscriptions-copy-runs',
  'subscriptions-copy-receivers',
  'subscriptions-chains',
  'subscriptions-failures',
  'subscriptions-validation',
  'subscriptions-regressions',
  'webhooks-delivery',
  'rpc-itx-call',
  'rpc-itx-call-unavailable',
  'rpc-itx-runs',
  'live-connections',
  'live-connections-wait',
  'processors',
  'processors-crash',
  'processors-registration',
  'processors-protocol',
  'expression-budgets',
  'expression-regex',
  'read-etag',
  'metrics-alerting',
  'durable-streams',
  'durable-streams-errors',
  'durable-streams-cors',
  'durable-streams-interop',
  'subscriptions-listing',
  'subscriptions-attempts',
  'subscriptions-preview',
].map((name) => `packages/server/test/e2e/${name}.test.ts`);

// Tests run against the TypeScript sources; end-to-end tests that need a real child
// process use the built CLI (npm test builds first).
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@rivulet\/contract$/, replacement: src('./packages/contract/src/index.ts') },
      { find: /^@rivulet\/server\/node$/, replacement: src('./packages/server/src/hosts/node/serve.ts') },
      { find: /^@rivulet\/server\/release$/, replacement: src('./packages/server/src/release.ts') },
      { find: /^@rivulet\/server$/, replacement: src('./packages/server/src/index.ts') },
      { find: /^@rivulet\/client$/, replacement: src('./packages/client/src/index.ts') },
      { find: /^@rivulet\/client\/processor-host$/, replacement: src('./packages/client/src/processor-host.ts') },
    ],
  },
  test: {
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: { name: 'node', include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'bench/**/*.test.mjs'] },
      },
      {
        extends: true,
        test: { name: 'worker', include: workerE2e, env: { RIVULET_TEST_HOST: 'worker' }, setupFiles: ['packages/server/test/worker-fetch-setup.ts'] },
      },
    ],
  },
});
