/**
 * `rivulet webhook-secret` (protocol §17.5): prints the secret the server generated in its data
 * folder, honours RIVULET_WEBHOOK_SECRET as serve does, and never generates one itself.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Capture, startTestServer } from './harness.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const run = (argv: string[], env: NodeJS.ProcessEnv = {}) => new Capture(env).run(['webhook-secret', ...argv]);

describe('rivulet webhook-secret', () => {
  it('prints the secret the server generated on its first start', async () => {
    const t = await startTestServer();
    try {
      const stored = readFileSync(join(t.data, 'webhook-secret'), 'utf8').trim();
      expect(stored).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      const flag = await run(['--data', t.data]);
      expect([flag.code, flag.stdout, flag.stderr]).toEqual([0, stored, '']);
      const env = await run([], { RIVULET_DATA: t.data });
      expect([env.code, env.stdout]).toEqual([0, stored]);
    } finally {
      await t.dispose();
    }
  });

  it('says clearly that a folder no server started on has no secret, and creates none', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rivulet-cli-secret-'));
    dirs.push(dir);
    const result = await run(['--data', dir]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(`no webhook secret in ${dir} yet: rivulet serve generates one on its first start`);
    expect(existsSync(join(dir, 'webhook-secret'))).toBe(false);
  });

  it('prints RIVULET_WEBHOOK_SECRET when set, as serve would use it, and refuses an invalid one', async () => {
    const given = `whsec_${Buffer.alloc(24, 3).toString('base64')}`;
    expect((await run([], { RIVULET_WEBHOOK_SECRET: given })).stdout).toBe(given);
    await expect(run([], { RIVULET_WEBHOOK_SECRET: 'nope' })).rejects.toThrow(/^RIVULET_WEBHOOK_SECRET: a webhook secret has the form whsec_/);
  });

  it('has usage and refuses stray arguments', async () => {
    const help = await run(['--help']);
    expect(help.out[0]).toBe('Usage: rivulet webhook-secret [--data DIR]');
    expect((await run(['extra'])).code).toBe(2);
  });
});
