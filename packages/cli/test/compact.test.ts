/**
 * `rivulet compact`: gives the space of destroyed streams back once the server is stopped, says so
 * for people and in JSON, and refuses a folder in use or without data (exit 1) and stray arguments
 * (exit 2).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '@rivulet/client';
import { startNodeServer } from '@rivulet/server/node';
import { Capture, startTestServer } from './harness.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const run = (argv: string[], env: NodeJS.ProcessEnv = {}) => new Capture(env).run(['compact', ...argv]);

describe('rivulet compact', () => {
  it('after a destroy and a stop, shrinks the folder and reports it; --json gives the figures', async () => {
    const t = await startTestServer();
    const client = createClient({ url: t.url });
    const pad = 'p'.repeat(500);
    for (let i = 0; i < 6; i++) await client.append('/big', Array.from({ length: 1000 }, (_, n) => ({ type: 'x', payload: { n, pad } })));
    await client.append('/small', { type: 'y' });
    await client.destroy('/big');
    await t.stop();
    try {
      const people = await run(['--data', t.data]);
      expect(people.code).toBe(0);
      expect(people.stdout).toMatch(new RegExp(`^compacted ${t.data}: \\d+\\.\\d MB → 0\\.\\d MB`));
      expect(people.stderr).toContain('rewriting the database file…');
      const json = await run(['--json'], { RIVULET_DATA: t.data });
      const report = JSON.parse(json.stdout) as { bytesBefore: number; bytesAfter: number; purgedRows: number };
      expect(report.purgedRows).toBe(0);
      expect(report.bytesAfter).toBeLessThan(1024 * 1024);
      expect(json.stderr).toBe('');
      // The stream that was kept is intact. (A server on a new port: the client's kept-alive
      // connection to the stopped one may not have noticed its end yet, compact having held the
      // event loop.)
      const again = await startNodeServer({ port: 0, data: t.data, logger: { error: () => undefined } });
      try {
        expect((await createClient({ url: again.url }).getEvents('/small')).events.map((e) => e.type)).toEqual([
          'events.iterate.com/stream/created',
          'y',
        ]);
      } finally {
        await again.close();
      }
    } finally {
      rmSync(t.data, { recursive: true, force: true });
    }
  });

  it('refuses a folder without data and a folder in use (exit 1), and stray arguments (exit 2)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rivulet-cli-compact-'));
    dirs.push(dir);
    const empty = await run(['--data', dir]);
    expect([empty.code, empty.stderr]).toEqual([1, `rivulet compact: NOT_FOUND no Rivulet data in ${dir} (no rivulet.db): nothing to compact`]);
    // A running server holds the folder.
    const t = await startTestServer();
    try {
      const busy = await run(['--data', t.data]);
      expect(busy.code).toBe(1);
      expect(busy.stderr).toBe(
        `rivulet compact: PRECONDITION_FAILED cannot compact while the folder is in use: another Rivulet server is using the data folder ${t.data}; stop that server first`,
      );
    } finally {
      await t.dispose();
    }
    expect((await run(['extra'])).code).toBe(2);
    expect((await run(['--help'])).out[0]).toBe('Usage: rivulet compact [--data DIR] [--json]');
  });
});
