/**
 * The storage port's conformance checks (storage-checks.ts) against the Durable Object SQL adapter,
 * inside workerd: conformance-worker.ts is bundled, Miniflare runs it with a SQLite-backed Durable
 * Object persisted in a temporary folder, and each check's result becomes one vitest test here,
 * named as the Node adapters' tests are.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineStorageChecks } from '../storage-checks.js';
import { COMPATIBILITY_DATE, bundleWorker, serverFile } from '../helpers/miniflare.js';
import { DO_SUITE_NAME } from './conformance-suite.js';
import { collect, type CheckResult } from './mini-runner.js';

const names = collect((t) =>
  defineStorageChecks({ ...t, expect }, DO_SUITE_NAME, () => Promise.reject(new Error('names only'))),
).map((test) => test.fullName);

let mf: Miniflare | undefined;
let dir: string;
let results: Map<string, CheckResult>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rivulet-do-conformance-'));
  const script = await bundleWorker(serverFile('test/cloudflare/conformance-worker.ts'));
  mf = new Miniflare({
    modules: [{ type: 'ESModule', path: 'worker.js', contents: script }],
    compatibilityDate: COMPATIBILITY_DATE,
    durableObjects: { CONFORMANCE: { className: 'ConformanceObject', useSQLite: true } },
    durableObjectsPersist: dir,
  });
  const res = await mf.dispatchFetch('http://conformance/');
  const body = await res.text();
  expect(res.status, body).toBe(200);
  results = new Map((JSON.parse(body) as CheckResult[]).map((r) => [r.fullName, r]));
}, 60_000);

afterAll(async () => {
  await mf?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the Durable Object adapter runs every conformance check', () => {
  it('the Worker answered one result per check', () => {
    expect([...results.keys()].sort()).toEqual([...names].sort());
  });
  for (const name of names) {
    it(name, () => {
      const result = results.get(name);
      expect(result, `no result for ${name}`).toBeDefined();
      expect(result!.error ?? null, name).toBeNull();
      expect(result!.outcome).toBe('passed');
    });
  }
});
