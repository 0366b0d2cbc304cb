// Lint with architecture rules (docs/architecture.md "Layers"): core is pure (no node:*, cloudflare:*,
// adapters, edges, engine or hosts); the engine and ports never reach adapters, edges or hosts;
// no import cycles anywhere. Zero warnings are allowed (npm run lint uses --max-warnings 0).
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

const forbid = (patterns, message) => ({
  'no-restricted-imports': ['error', { patterns: patterns.map((group) => ({ group, message })) }],
});

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'test-output/**', 'bench/results/**', '**/*.d.ts'] },
  ...tseslint.configs.recommended,
  importX.flatConfigs.typescript,
  {
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })] },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // One concept per file, no source file over 400 lines (docs/architecture.md, Conventions).
    files: ['packages/*/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: { 'max-lines': ['error', { max: 400 }] },
  },
  {
    files: ['packages/server/src/core/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: forbid(
      [['node:*', 'cloudflare:*', '**/adapters/**', '**/http/**', '**/rpc/**', '**/hosts/**', '**/net/**', '**/engine/**', 'better-sqlite3', 'sql.js', 'hono', 'hono/*', 'undici']],
      'core is pure: it may import only the contract and other core modules',
    ),
  },
  {
    files: ['packages/server/src/engine/**/*.ts', 'packages/server/src/ports/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: forbid(
      [['node:*', 'cloudflare:*', '**/adapters/**', '**/http/**', '**/rpc/**', '**/hosts/**', '**/net/**', 'better-sqlite3', 'sql.js', 'hono', 'hono/*', 'undici']],
      'the engine runs on every host: it reaches storage, time and other streams only through ports',
    ),
  },
  // Time and randomness are ports (ports/clock.ts, ports/timer.ts hold the system ones): core and
  // the engine never read the wall clock, start a timer or draw randomness on their own.
  {
    files: ['packages/server/src/core/**/*.ts', 'packages/server/src/engine/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-globals': [
        'error',
        ...['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate'].map((name) => ({
          name,
          message: 'timers are a port: use the Timer (or AlarmFactory) the engine was composed with',
        })),
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'the wall clock is a port: use the Clock' },
        { object: 'performance', property: 'now', message: 'the clock is a port: use the Clock' },
        { object: 'Math', property: 'random', message: 'randomness is a port: use the Random' },
        { object: 'crypto', property: 'randomUUID', message: 'randomness is a port: use Random.uuid()' },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'the wall clock is a port: use new Date(clock.now())' },
        { selector: "CallExpression[callee.name='Date']", message: 'the wall clock is a port: use new Date(clock.now()).toISOString()' },
        { selector: "MemberExpression[property.name='randomUUID']", message: 'randomness is a port: use Random.uuid()' },
        {
          selector: "MemberExpression[object.name='globalThis'][property.name=/^(setTimeout|clearTimeout|setInterval|clearInterval|setImmediate|clearImmediate)$/]",
          message: 'timers are a port: use the Timer (or AlarmFactory) the engine was composed with',
        },
      ],
    },
  },
  {
    files: ['packages/server/src/http/**/*.ts', 'packages/server/src/rpc/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: forbid([['node:*', 'cloudflare:*', '**/adapters/**', '**/hosts/**', '**/net/**', 'better-sqlite3', 'sql.js']], 'edges are shared by both hosts'),
  },
  // Host-specific modules stay with their host: cloudflare:* only in hosts/worker/ and the Durable
  // Object adapter; nothing of Node (node:*, native SQLite, the Node HTTP server) in what the Worker bundles.
  {
    files: ['packages/server/src/adapters/**/*.ts'],
    ignores: ['**/*.test.ts', 'packages/server/src/adapters/durable-object/**'],
    rules: forbid([['cloudflare:*', '**/http/**', '**/rpc/**', '**/hosts/**', '**/engine/**']], 'adapters implement ports; only the Durable Object adapter may know Cloudflare'),
  },
  {
    files: ['packages/server/src/adapters/durable-object/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: forbid(
      [['node:*', 'better-sqlite3', 'sql.js', '**/http/**', '**/rpc/**', '**/hosts/**', '**/engine/**']],
      'the Durable Object adapter runs inside workerd and implements ports only',
    ),
  },
  // The folder says where a file runs (docs/architecture.md "Layers"). hosts/node/ is the Node host,
  // hosts/worker/ the Worker host bundled for workerd, net/ a leaf of Node protocol code.
  {
    files: ['packages/server/src/hosts/node/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: forbid([['cloudflare:*', '**/hosts/worker/**', '../worker/**']], 'the Node host runs on Node: nothing of the Worker host (hosts/worker/)'),
  },
  {
    files: ['packages/server/src/hosts/worker/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: forbid(
      [['node:*', 'better-sqlite3', 'sql.js', 'ws', '@hono/node-server', 'undici', '**/adapters/sqlite/**', '**/adapters/memory/**', '**/hosts/node/**', '../node/**', '**/net/**']],
      'the Worker host runs in workerd: nothing of the Node host',
    ),
  },
  {
    files: ['packages/server/src/net/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(?!node:|\\./)', message: 'net/ is a leaf of protocol code: it imports node:* and its own files only' }] },
      ],
    },
  },
  {
    files: ['packages/contract/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: forbid([['node:*', '@rivulet/*', 'hono', 'hono/*']], 'the contract is schemas and types only'),
  },
  {
    files: ['packages/ui/src/**/*.ts'],
    rules: forbid([['@rivulet/server', '@rivulet/server/*', 'node:*']], 'the web UI talks to the server through the SDK only'),
  },
  {
    files: ['packages/client/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: forbid([['@rivulet/server', '@rivulet/server/*']], 'the SDK talks to the server over the wire only'),
  },
);
