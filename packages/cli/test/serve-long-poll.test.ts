/**
 * `rivulet serve --long-poll-timeout-ms` (docs/durable-streams.md "Long-poll"): a value that is
 * not a positive whole number is a usage error (exit 2) before anything starts, from the flag or
 * from RIVULET_LONG_POLL_TIMEOUT_MS.
 */
import { describe, expect, it } from 'vitest';
import { rivulet } from './harness.js';

describe('rivulet serve --long-poll-timeout-ms', () => {
  const cases: [string[], NodeJS.ProcessEnv, string][] = [
    [['--long-poll-timeout-ms', '0'], {}, '--long-poll-timeout-ms must be at least 1, got "0"'],
    [['--long-poll-timeout-ms', 'soon'], {}, '--long-poll-timeout-ms must be a whole number, got "soon"'],
    [[], { RIVULET_LONG_POLL_TIMEOUT_MS: '1.5' }, '--long-poll-timeout-ms must be a whole number, got "1.5"'],
  ];
  for (const [args, env, message] of cases) {
    it(`refuses ${args.join(' ') || JSON.stringify(env)}`, async () => {
      const run = await rivulet('', ['serve', '--port', '0', '--data', '/nonexistent-never-created', ...args], { env });
      expect(run.code).toBe(2);
      expect(run.err[0]).toBe(`rivulet serve: ${message}`);
    });
  }
});
