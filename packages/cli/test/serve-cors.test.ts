/**
 * `rivulet serve --cors-origin` (protocol §1.4): what cannot be served is a usage error (exit 2)
 * before anything starts, from the flag or from its environment variable.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Capture } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'rivulet-cors-cli-'));
const tokens = join(dir, 'tokens');
writeFileSync(tokens, 'cli-admin-token-0123456789 *\n');

afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function serve(argv: string[], env: NodeJS.ProcessEnv = {}) {
  return new Capture(env).run(['serve', '--port', '0', '--data', join(dir, 'data'), ...argv]);
}

describe('rivulet serve --cors-origin', () => {
  it('refuses * with tokens (exit 2), naming both ways out', async () => {
    const run = await serve(['--tokens', tokens, '--cors-origin', '*']);
    expect(run.code).toBe(2);
    expect(run.err[0]).toBe(
      'rivulet serve: --cors-origin * with tokens would let any web page call this server with a token it holds: ' +
        'list the origins that may (--cors-origin https://app.example,…), or pass --cors-allow-any-origin-with-tokens',
    );
    expect(run.stdout).toBe('');
  });

  it('refuses the same from RIVULET_CORS_ORIGIN and RIVULET_TOKENS', async () => {
    const run = await serve([], { RIVULET_TOKENS: tokens, RIVULET_CORS_ORIGIN: '*' });
    expect(run.code).toBe(2);
    expect(run.err[0]).toContain('--cors-origin * with tokens would let any web page call this server');
  });

  it('refuses an entry that is not an origin, and the companion flag alone', async () => {
    const bad = await serve(['--cors-origin', 'https://app.example/ui']);
    expect(bad.code).toBe(2);
    expect(bad.err[0]).toBe('rivulet serve: --cors-origin "https://app.example/ui" is not an origin: write scheme://host[:port], e.g. https://app.example');
    const alone = await serve(['--cors-allow-any-origin-with-tokens']);
    expect(alone.code).toBe(2);
    expect(alone.err[0]).toBe('rivulet serve: --cors-allow-any-origin-with-tokens needs --cors-origin *');
    const notBool = await serve(['--cors-origin', '*'], { RIVULET_CORS_ALLOW_ANY_ORIGIN_WITH_TOKENS: 'maybe' });
    expect(notBool.code).toBe(2);
    expect(notBool.err[0]).toBe('rivulet serve: --cors-allow-any-origin-with-tokens must be true or false, got "maybe"');
  });

  it('lists both flags in its help', async () => {
    const help = await serve(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--cors-origin ORIGIN[,…]');
    expect(help.stdout).toContain('--cors-allow-any-origin-with-tokens');
  });
});
