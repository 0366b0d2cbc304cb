/**
 * A Worker deployed without tokens and without open mode (docs/cloudflare.md §3.2): every request
 * is refused with 503 naming the command to run, except the health probes — the process answers
 * (`/livez`, `/healthz`), and readiness says why it cannot serve (`/readyz`, protocol §15.1).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workerOptions } from '../helpers/worker-host.js';

const REFUSAL = 'this deployment has no tokens: set them with `wrangler secret put RIVULET_TOKENS` (lines "TOKEN PROJECT_ID"), or set RIVULET_OPEN = "true" for local development only';

let dir: string;
let mf: Miniflare;
let url: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rivulet-worker-no-tokens-'));
  mf = new Miniflare(await workerOptions(join(dir, 'objects'), {}));
  url = (await mf.ready).origin;
}, 60_000);

afterAll(async () => {
  await mf?.dispose();
  await rm(dir, { recursive: true, force: true });
});

async function call(method: string, path: string, body?: string): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${url}${path}`, { method, body: body ?? null, headers: body ? { 'content-type': 'application/json' } : {} });
  return { status: res.status, json: await res.json() };
}

describe('a Worker without tokens and without open mode', () => {
  it('refuses reads and appends with 503 UNAVAILABLE naming the command to run', async () => {
    for (const [method, path, body] of [
      ['GET', '/v1/streams/a/b', undefined],
      ['POST', '/v1/streams/a/b', '{"type":"x"}'],
      ['GET', '/metrics', undefined],
    ] as const) {
      const answer = await call(method, path, body);
      expect([method, path, answer]).toEqual([method, path, { status: 503, json: { error: { code: 'UNAVAILABLE', message: REFUSAL } } }]);
    }
  });

  it('is live (/livez, /healthz) but not ready (/readyz names why)', async () => {
    expect(await call('GET', '/livez')).toEqual({ status: 200, json: { ok: true } });
    expect(await call('GET', '/healthz')).toEqual({ status: 200, json: { ok: true } });
    expect(await call('GET', '/readyz')).toEqual({ status: 503, json: { error: { code: 'UNAVAILABLE', message: `not ready: ${REFUSAL}` } } });
  });
});
