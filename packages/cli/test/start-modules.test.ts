/**
 * What a CLI process loads before it does its work: the Node host of @rivulet/server (SQLite, the
 * HTTP server, the delivery engine) only for the commands that run it, so that `--version`, every
 * `--help` and every client command start without it. Runs the built bin with a module hook that
 * records every module resolved (fixtures/record-modules.mjs).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt } from '../../server/test/helpers/cli.js';

const run = promisify(execFile);
const bin = fileURLToPath(new URL('../bin/rivulet.js', import.meta.url));
const hook = fileURLToPath(new URL('./fixtures/record-modules.mjs', import.meta.url));

let work: string;
beforeAll(() => {
  assertBuilt();
  work = mkdtempSync(join(tmpdir(), 'rivulet-cli-modules-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

let runs = 0;
/** The exit code and the modules of one CLI process (`rivulet ...args`). */
async function modulesOf(args: string[]): Promise<{ code: number; modules: string[] }> {
  const log = join(work, `modules-${++runs}.txt`);
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('RIVULET_'))), RIVULET_TEST_MODULES_LOG: log };
  let code = 0;
  try {
    await run(process.execPath, ['--import', hook, bin, ...args], { env, timeout: 30_000 });
  } catch (error) {
    code = (error as { code?: number }).code ?? -1;
  }
  return { code, modules: readFileSync(log, 'utf8').split('\n').filter(Boolean) };
}

const nodeHost = (modules: string[]) => modules.filter((url) => url.includes('/server/dist/hosts/') || url.includes('/better-sqlite3/'));

describe('the Node host is loaded only by the commands that run it', () => {
  it('a command that opens a data folder loads it (the hook sees it)', async () => {
    const { code, modules } = await modulesOf(['webhook-secret', '--data', join(work, 'none')]);
    expect(code).toBe(1);
    expect(nodeHost(modules)).toContainEqual(expect.stringContaining('/server/dist/hosts/node/serve.js'));
  });

  it('--version, the help of every command and a client command do not', async () => {
    const cases = [['--version'], ['--help'], ['read', '--help'], ['serve', '--help'], ['backup', '--help'], ['ls', '--url', 'http://127.0.0.1:1']];
    for (const args of cases) {
      const { code, modules } = await modulesOf(args);
      expect([args, code]).toEqual([args, args[0] === 'ls' ? 1 : 0]);
      expect(modules.length, args.join(' ')).toBeGreaterThan(10);
      expect(nodeHost(modules), args.join(' ')).toEqual([]);
    }
  });
});
