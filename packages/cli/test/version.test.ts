/**
 * `rivulet --version` / `-V`: the release (the same in every published package.json and in the
 * server's VERSION) and the storage format the server writes; the help mentions it.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FORMAT_VERSION, VERSION } from '@rivulet/server/node';
import { Capture } from './harness.js';

const versionOf = (pkg: string) => (JSON.parse(readFileSync(new URL(`../../${pkg}/package.json`, import.meta.url), 'utf8')) as { version: string }).version;

describe('rivulet --version', () => {
  it('the server VERSION is the version of every published package', () => {
    expect(['cli', 'server', 'client', 'contract'].map(versionOf)).toEqual([VERSION, VERSION, VERSION, VERSION]);
  });

  for (const flag of ['--version', '-V']) {
    it(`${flag} prints the release and the storage format, exit 0`, async () => {
      const run = await new Capture({}).run([flag]);
      expect([run.code, run.stdout, run.stderr]).toEqual([0, `rivulet ${versionOf('cli')} (storage format ${FORMAT_VERSION})`, '']);
    });
  }

  it('the help names it', async () => {
    const run = await new Capture({}).run(['--help']);
    expect(run.out.slice(0, 2)).toEqual(['Usage: rivulet <command> [options]', '       rivulet --version']);
  });
});
