/**
 * The folder rules of eslint.config.js, each shown failing on a probe import (docs/architecture.md
 * "Layers"): hosts/worker/ is bundled for workerd and may not reach Node, hosts/node/ may not reach
 * the Worker host, and net/ is a leaf that imports node:* and its own files only. Every probe runs
 * ESLint's own API with the project's configuration, as `npm run lint` does, on a file path inside
 * the folder; an allowed import beside each forbidden one shows the rule is not refusing everything.
 */
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SRC = `${ROOT}packages/server/src/`;
let eslint: ESLint;

beforeAll(() => {
  eslint = new ESLint({ cwd: ROOT });
});

/** The messages of `no-restricted-imports` for one import statement placed in `file`. */
async function refusals(file: string, specifier: string): Promise<string[]> {
  const code = `import * as probe from '${specifier}';\nexport const used = probe;\n`;
  const [result] = await eslint.lintText(code, { filePath: `${SRC}${file}` });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('folder rules: what runs where', () => {
  it.each([
    'node:fs',
    'node:net',
    '../node/serve.js',
    '../../hosts/node/outbound.js',
    '../../net/http1-request.js',
    'undici',
    'ws',
    '@hono/node-server',
    'better-sqlite3',
    'sql.js',
  ])('hosts/worker/ may not import %s', async (specifier) => {
    const found = await refusals('hosts/worker/probe.ts', specifier);
    expect(found).toEqual([expect.stringContaining('the Worker host runs in workerd')]);
  });

  it.each(['cloudflare:workers', '../worker/entry.js', '../../hosts/worker/api.js'])('hosts/node/ may not import %s', async (specifier) => {
    const found = await refusals('hosts/node/probe.ts', specifier);
    expect(found).toEqual([expect.stringContaining('the Node host runs on Node')]);
  });

  it.each(['../core/private-address.js', '../hosts/node/serve.js', '../engine/metrics.js', '@rivulet/contract', 'ws', 'hono'])(
    'net/ may not import %s',
    async (specifier) => {
      const found = await refusals('net/probe.ts', specifier);
      expect(found).toEqual([expect.stringContaining('net/ is a leaf of protocol code')]);
    },
  );

  it.each([
    ['hosts/worker/probe.ts', './api.js'],
    ['hosts/worker/probe.ts', '../../engine/service.js'],
    ['hosts/node/probe.ts', 'node:http'],
    ['hosts/node/probe.ts', '../../net/http1-request.js'],
    ['net/probe.ts', 'node:tls'],
    ['net/probe.ts', './coalesce-writes.js'],
    ['hosts/node/probe.ts', 'undici'],
  ])('%s may import %s', async (file, specifier) => {
    expect(await refusals(file, specifier)).toEqual([]);
  });

  it.each(['core/probe.ts', 'engine/probe.ts', 'http/probe.ts', 'rpc/probe.ts'])('%s may not import net/ (it runs on both hosts)', async (file) => {
    expect(await refusals(file, '../net/http1-request.js')).toHaveLength(1);
  });
});
