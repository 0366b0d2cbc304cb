#!/usr/bin/env node
// Builds the Cloudflare Worker (packages/server/src/hosts/worker/entry.ts) into one ES module,
// packages/server/dist/worker/index.js, which wrangler.jsonc deploys as it is (no_bundle).
// The workspace packages are bundled from their TypeScript sources, so no other build step is
// needed first; `cloudflare:*` modules stay imports for the Workers runtime to provide.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outfile = join(root, 'packages/server/dist/worker/index.js');

const result = await build({
  entryPoints: [join(root, 'packages/server/src/hosts/worker/entry.ts')],
  bundle: true,
  write: false,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  mainFields: ['module', 'main'],
  conditions: ['workerd', 'worker', 'browser', 'import'],
  external: ['cloudflare:*'],
  alias: { '@rivulet/contract': join(root, 'packages/contract/src/index.ts') },
  sourcemap: 'external',
  outfile,
  metafile: true,
  logLevel: 'warning',
});
mkdirSync(dirname(outfile), { recursive: true });
for (const file of result.outputFiles) writeFileSync(file.path, file.contents);
const bytes = result.outputFiles.find((f) => f.path === outfile).contents.byteLength;
console.log(`built ${outfile} (${(bytes / 1024).toFixed(0)} KiB)`);
