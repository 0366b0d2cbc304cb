import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url));

// Tests run against the TypeScript sources; end-to-end tests that need a real child
// process use the built CLI (npm test builds first).
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@rivulet\/contract$/, replacement: src('./packages/contract/src/index.ts') },
      { find: /^@rivulet\/server\/node$/, replacement: src('./packages/server/src/hosts/node.ts') },
      { find: /^@rivulet\/server$/, replacement: src('./packages/server/src/index.ts') },
      { find: /^@rivulet\/client$/, replacement: src('./packages/client/src/index.ts') },
    ],
  },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
  },
});
