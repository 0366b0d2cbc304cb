/**
 * The read cache end to end (docs/architecture.md "Storage", the read cache), on a real `rivulet serve`:
 * pages answered from memory are byte for byte the pages SQL answers (a type filter naming every
 * type always goes to SQL), with ephemeral events in and out of the page, on a cache small enough
 * to evict; the metrics show it; `--read-cache-mb 0` turns it off; the largest size is accepted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnServe, type CliServer } from '../helpers/cli.js';

const dirs: string[] = [];
const servers: CliServer[] = [];
afterAll(async () => {
  for (const server of servers) await server.kill('SIGTERM');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function serve(...args: string[]): Promise<CliServer> {
  const dir = mkdtempSync(join(tmpdir(), 'rivulet-read-cache-'));
  dirs.push(dir);
  const server = await spawnServe(['--data', dir, ...args]);
  servers.push(server);
  return server;
}

/** 3,000 events of three types, every seventh ephemeral, texts of varied size and script. */
async function fill(url: string, path: string): Promise<void> {
  for (let batch = 0; batch < 3; batch++) {
    const events = Array.from({ length: 1000 }, (_, i) => {
      const n = batch * 1000 + i;
      return { type: `t${n % 3}`, payload: { n, note: ['ascii', 'é', '😀', '"quoted",'][n % 4]!.repeat(1 + (n % 50)) }, ...(n % 7 === 3 ? { ephemeral: true } : {}) };
    });
    const response = await fetch(`${url}/v1/streams${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(events) });
    expect(response.status).toBe(200);
  }
}

async function text(url: string): Promise<string> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return response.text();
}

const metric = (metrics: string, line: string): number | undefined => {
  const found = metrics.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
};

describe('the read cache', () => {
  it('answers pages from memory exactly as SQL does, within its size, and shows it in the metrics', async () => {
    const server = await serve('--read-cache-mb', '1');
    await fill(server.url, '/cache/a');
    const base = `${server.url}/v1/streams/cache/a`;
    // Pseudo-random pages, read three times each (the first only admits the chunks it lacks, the
    // next come from memory) and compared with the same page through a type filter naming every
    // type (always SQL).
    let s = 1;
    const random = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < 60; i++) {
      // Offset 1 is the stream's created event, which the type filter would leave out.
      const after = 1 + Math.floor(random() * 3100);
      const limit = [1, 37, 500][i % 3];
      const ephemeral = i % 2 === 0 ? '&includeEphemeral=true' : '';
      const query = `?afterOffset=${after}&limit=${limit}${ephemeral}`;
      const viaSql = await text(`${base}${query}&eventTypes=t0,t1,t2`);
      for (let read = 0; read < 3; read++) expect(await text(`${base}${query}`), query).toBe(viaSql);
    }
    const metrics = await text(`${server.url}/metrics`);
    expect(metric(metrics, 'rivulet_read_cache_pages{outcome="hit"}')).toBeGreaterThan(60);
    expect(metric(metrics, 'rivulet_read_cache_pages{outcome="miss"}')).toBeGreaterThanOrEqual(60);
    // 3,000 events of up to ~250 bytes do not fit in 1 MiB twice over: it evicted and kept its bound.
    const bytes = metric(metrics, 'rivulet_read_cache_bytes')!;
    expect(bytes).toBeGreaterThan(0);
    expect(bytes).toBeLessThanOrEqual(1024 * 1024);
  });

  it('gives pages of ASCII-only events their length without counting, and gets it right', async () => {
    const server = await serve();
    const base = `${server.url}/v1/streams/cache/ascii`;
    const events = Array.from({ length: 2000 }, (_, n) => ({ type: 't', payload: { n, pad: 'p'.repeat(n % 90) } }));
    const appended = await fetch(base, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(events) });
    expect(appended.status).toBe(200);
    // After offset 1, the stream's created event, which the type filter would leave out.
    for (const after of [1, 700, 1000]) {
      const viaSql = await text(`${base}?afterOffset=${after}&limit=500&eventTypes=t`);
      for (let read = 0; read < 3; read++) {
        const response = await fetch(`${base}?afterOffset=${after}&limit=500`);
        const body = Buffer.from(await response.arrayBuffer());
        expect(Number(response.headers.get('content-length'))).toBe(body.length);
        expect(body.toString('utf8')).toBe(viaSql);
      }
    }
    const metrics = await text(`${server.url}/metrics`);
    expect(metric(metrics, 'rivulet_read_cache_pages{outcome="hit"}')).toBeGreaterThanOrEqual(6);
  });

  it('is off with --read-cache-mb 0: no cache metrics, the same pages', async () => {
    const server = await serve('--read-cache-mb', '0');
    await fill(server.url, '/cache/b');
    const base = `${server.url}/v1/streams/cache/b`;
    const page = await text(`${base}?afterOffset=600&limit=500&includeEphemeral=true`);
    expect(page).toBe(await text(`${base}?afterOffset=600&limit=500&includeEphemeral=true&eventTypes=t0,t1,t2`));
    expect(JSON.parse(page).events).toHaveLength(500);
    expect(await text(`${server.url}/metrics`)).not.toContain('rivulet_read_cache');
  });

  it('accepts the largest size, 1048576 MiB (memory is taken only as pages are read)', async () => {
    const server = await serve('--read-cache-mb', '1048576');
    const metrics = await text(`${server.url}/metrics`);
    expect(metric(metrics, 'rivulet_read_cache_bytes')).toBe(0);
  });
});
