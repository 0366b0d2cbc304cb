#!/usr/bin/env node
/**
 * Builds the rivulet CLI of another commit into a temporary folder, for `bench/peers/run.mjs
 * --ab-cli` (a before/after of a change in one run), and prints the CLI's path: the commit's
 * contract, server, client and cli packages built by scripts/lib/build-old-tree.mjs. The folder is
 * left for the run; delete it after.
 *
 *   node bench/peers/build-commit.mjs COMMIT
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildOldTree } from '../../scripts/lib/build-old-tree.mjs';

const commit = process.argv[2];
if (!commit || !/^[0-9a-f]{4,40}$/.test(commit)) {
  console.error('usage: node bench/peers/build-commit.mjs COMMIT (a commit hash)');
  process.exit(2);
}
const tree = mkdtempSync(join(tmpdir(), `rivulet-build-${commit}-`));
buildOldTree(commit, ['contract', 'server', 'client', 'cli'], tree);
console.log(join(tree, 'packages', 'cli', 'bin', 'rivulet.js'));
