/**
 * Builds the packages of an earlier commit, for the scripts that need an older server or CLI next
 * to this checkout's: the storage-format fixture makers (scripts/make-fixture-format*.mjs) and the
 * before/after builds of the benchmarks (bench/peers/build-commit.mjs).
 *
 * `git archive` extracts the commit's packages (and tsconfig.base.json) into `tree`; this
 * checkout's dependencies are linked in, except the workspace's own packages, which are the old
 * tree's; the old packages are then built with this checkout's TypeScript.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The repository root (this file is scripts/lib/). */
export const root = resolve(import.meta.dirname, '..', '..');

/**
 * Extracts `packages` (names under packages/, in build order) of `commit` into the folder `tree`
 * and builds them there. Answers nothing; the builds are in `tree/packages/NAME/dist`.
 */
export function buildOldTree(commit, packages, tree) {
  if (!/^[0-9a-f]{4,40}$/.test(commit)) throw new Error(`not a commit hash: ${commit}`);
  const paths = packages.map((name) => `packages/${name}`).join(' ');
  execFileSync('sh', ['-c', `git -C "${root}" archive ${commit} ${paths} tsconfig.base.json | tar -x -C "${tree}"`]);
  const modules = join(tree, 'node_modules');
  mkdirSync(join(modules, '@rivulet'), { recursive: true });
  for (const name of readdirSync(join(root, 'node_modules'))) {
    if (name === '@rivulet' || name === 'rivulet') continue;
    symlinkSync(join(root, 'node_modules', name), join(modules, name));
  }
  for (const name of packages) symlinkSync(join(tree, 'packages', name), join(modules, '@rivulet', name));
  execFileSync(join(root, 'node_modules/.bin/tsc'), ['-b', ...packages.map((name) => `packages/${name}`)], { cwd: tree, stdio: 'inherit' });
}
