#!/usr/bin/env node
/**
 * Builds the rivulet CLI of another commit into a temporary folder, for `bench/peers/run.mjs
 * --ab-cli` (a before/after of a change in one run), and prints the CLI's path. As
 * scripts/make-fixture-format4.mjs does: `git archive` of the commit's contract, server, client and cli
 * packages, this checkout's dependencies linked in, built with this checkout's TypeScript. The
 * folder is left for the run; delete it after.
 *
 *   node bench/peers/build-commit.mjs COMMIT
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from '../lib/processes.mjs';

const commit = process.argv[2];
if (!commit || !/^[0-9a-f]{4,40}$/.test(commit)) {
  console.error('usage: node bench/peers/build-commit.mjs COMMIT (a commit hash)');
  process.exit(2);
}
const tree = mkdtempSync(join(tmpdir(), `rivulet-build-${commit}-`));
execFileSync('sh', ['-c', `git -C "${root}" archive ${commit} packages/contract packages/server packages/client packages/cli tsconfig.base.json | tar -x -C "${tree}"`]);
const modules = join(tree, 'node_modules');
mkdirSync(join(modules, '@rivulet'), { recursive: true });
for (const name of readdirSync(join(root, 'node_modules'))) {
  if (name === '@rivulet' || name === 'rivulet') continue;
  symlinkSync(join(root, 'node_modules', name), join(modules, name));
}
for (const pkg of ['contract', 'server', 'client', 'cli']) symlinkSync(join(tree, 'packages', pkg), join(modules, '@rivulet', pkg));
execFileSync(join(root, 'node_modules/.bin/tsc'), ['-b', 'packages/contract', 'packages/server', 'packages/client', 'packages/cli'], { cwd: tree, stdio: 'inherit' });
console.log(join(tree, 'packages', 'cli', 'bin', 'rivulet.js'));
