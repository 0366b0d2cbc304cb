/**
 * `rivulet serve` refuses bad log flags and variables with a usage error (exit 2) naming the flag
 * and the value, before anything starts. What it accepts is shown by the server's log tests
 * (packages/server/test/e2e/logs.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { main } from '../src/main.js';

async function run(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; err: string }> {
  let err = '';
  const code = await main(['serve', '--port', '0', '--data', '/nonexistent/never-created', ...argv], {
    out: () => undefined,
    err: (text) => (err += text),
    env,
  });
  return { code, err };
}

describe('rivulet serve log flags', () => {
  it.each([
    [['--log-level', 'verbose'], {}, '--log-level must be "error", "warn", "info" or "debug", got "verbose"'],
    [['--log-level', 'INFO'], {}, '--log-level must be "error", "warn", "info" or "debug", got "INFO"'],
    [[], { RIVULET_LOG_LEVEL: 'trace' }, '--log-level must be "error", "warn", "info" or "debug", got "trace"'],
    [['--log-format', 'text'], {}, '--log-format must be "json" or "pretty", got "text"'],
    [[], { RIVULET_LOG_FORMAT: 'xml' }, '--log-format must be "json" or "pretty", got "xml"'],
    [['--log-slow-ms=-1'], {}, '--log-slow-ms must be a whole number, got "-1"'],
    [['--log-slow-ms', 'soon'], {}, '--log-slow-ms must be a whole number, got "soon"'],
    [[], { RIVULET_LOG_SLOW_MS: '1.5' }, '--log-slow-ms must be a whole number, got "1.5"'],
  ] as const)('%j %j is a usage error', async (argv, env, message) => {
    const { code, err } = await run([...argv], env);
    expect(code).toBe(2);
    expect(err.split('\n')[0]).toBe(`rivulet serve: ${message}`);
    expect(err).toContain('--log-level LEVEL');
  });

  it('a flag wins over its variable', async () => {
    const { code, err } = await run(['--log-level', 'bogus'], { RIVULET_LOG_LEVEL: 'info' });
    expect([code, err.split('\n')[0]]).toEqual([2, 'rivulet serve: --log-level must be "error", "warn", "info" or "debug", got "bogus"']);
  });
});
