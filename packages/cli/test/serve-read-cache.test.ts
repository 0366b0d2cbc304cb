/**
 * `rivulet serve --read-cache-mb` (docs/architecture.md "Storage", the read cache): a value that is not a
 * whole number from 0 to 1048576 is a usage error (exit 2) before anything starts, from the flag
 * or from RIVULET_READ_CACHE_MB. What it accepts (0, the default, the largest) is shown by
 * packages/server/test/e2e/read-cache.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { rivulet } from './harness.js';

describe('rivulet serve --read-cache-mb', () => {
  const cases: [string[], NodeJS.ProcessEnv, string][] = [
    [['--read-cache-mb=-1'], {}, '--read-cache-mb must be a whole number, got "-1"'],
    [['--read-cache-mb', 'lots'], {}, '--read-cache-mb must be a whole number, got "lots"'],
    [['--read-cache-mb', '1048577'], {}, '--read-cache-mb must be at most 1048576, got "1048577"'],
    [[], { RIVULET_READ_CACHE_MB: '0.5' }, '--read-cache-mb must be a whole number, got "0.5"'],
  ];
  for (const [args, env, message] of cases) {
    it(`refuses ${args.join(' ') || JSON.stringify(env)}`, async () => {
      const run = await rivulet('', ['serve', '--port', '0', '--data', '/nonexistent-never-created', ...args], { env });
      expect(run.code).toBe(2);
      expect(run.err[0]).toBe(`rivulet serve: ${message}`);
    });
  }

  it('is in the help, with its default and how to turn it off', async () => {
    const run = await rivulet('', ['serve', '--help']);
    expect(run.code).toBe(0);
    expect(run.out.join('\n')).toContain('--read-cache-mb N');
    expect(run.out.join('\n')).toContain('RIVULET_READ_CACHE_MB, default 128; 0: off');
  });
});
