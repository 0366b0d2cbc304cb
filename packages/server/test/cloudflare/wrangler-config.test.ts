/**
 * wrangler.jsonc describes the Worker the tests run: the Durable Object bindings the host reads
 * (worker-env.ts), classes the Worker exports, one SQLite migration creating them all, the
 * compatibility date the tests use, and vars the host accepts (docs/cloudflare.md §2–3).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { engineConfigOf, type WorkerEnv } from '../../src/hosts/worker/env.js';
import { COMPATIBILITY_DATE, bundleWorker, serverFile } from '../helpers/miniflare.js';

interface WranglerConfig {
  main: string;
  compatibility_date: string;
  no_bundle?: boolean;
  build?: { command: string };
  durable_objects: { bindings: Array<{ name: string; class_name: string }> };
  migrations: Array<{ tag: string; new_sqlite_classes?: string[] }>;
  vars?: Record<string, string>;
}

/** JSON with comments on their own lines (the file's only comments). */
function readJsonc(path: string): unknown {
  const text = readFileSync(path, 'utf8')
    .split('\n')
    .map((line) => line.replace(/^\s*\/\/.*$/, ''))
    .join('\n');
  return JSON.parse(text) as unknown;
}

const config = readJsonc(fileURLToPath(new URL('../../../../wrangler.jsonc', import.meta.url))) as WranglerConfig;

describe('wrangler.jsonc', () => {
  it('binds the three Durable Object namespaces the Worker host reads, to classes the Worker exports', async () => {
    const bindings = Object.fromEntries(config.durable_objects.bindings.map((b) => [b.name, b.class_name]));
    expect(bindings).toEqual({ STREAMS: 'StreamObject', STREAM_INDEX: 'IndexObject', RPC_HUB: 'HubObject' });
    const bundle = await bundleWorker(serverFile('src/hosts/worker/entry.ts'));
    // The export list ends the module, but for the licence comments esbuild keeps after it.
    const exported = /export\s*\{([^}]*)\}\s*;?\s*(?:\/\*[\s\S]*?\*\/\s*)*$/.exec(bundle)?.[1] ?? '';
    for (const name of Object.values(bindings)) expect(exported).toMatch(new RegExp(`\\b${name}\\b`));
  });

  it('creates every class as SQLite-backed in one migration', () => {
    const classes = config.durable_objects.bindings.map((b) => b.class_name).sort();
    expect(config.migrations.flatMap((m) => m.new_sqlite_classes ?? []).sort()).toEqual(classes);
  });

  it('deploys the bundle the build script writes, at the compatibility date the tests run', () => {
    expect(config.compatibility_date).toBe(COMPATIBILITY_DATE);
    expect(config.build?.command).toBe('node scripts/build-worker.mjs');
    expect(config.main).toBe('packages/server/dist/worker/index.js');
    expect(config.no_bundle).toBe(true);
  });

  it('holds only variables the host reads, each valid, and no secret', () => {
    const vars = config.vars ?? {};
    for (const key of Object.keys(vars)) expect(key).toMatch(/^RIVULET_[A-Z_]+$/);
    expect(Object.keys(vars)).not.toContain('RIVULET_TOKENS');
    expect(Object.keys(vars)).not.toContain('RIVULET_WEBHOOK_SECRET');
    expect(() => engineConfigOf({ ...vars, RIVULET_OPEN: 'true' } as unknown as WorkerEnv)).not.toThrow();
  });
});
