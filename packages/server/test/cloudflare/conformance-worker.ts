/**
 * The Worker the storage conformance test bundles and runs under Miniflare: one SQLite-backed
 * Durable Object runs every check of storage-checks.ts against the Durable Object adapter and
 * answers one result per check. Each check gets a fresh, empty database: the factory erases the
 * object's storage (`deleteAll`, which drops the tables too) before and after it. `reopen` wraps the
 * same storage in a new adapter after `sync()`; durability across a real restart of the runtime is
 * what the Worker host's restart tests prove (test/cloudflare/worker-restart.test.ts).
 */
import { DurableObject } from 'cloudflare:workers';
import { DurableObjectStorage } from '../../src/adapters/durable-object/do-storage.js';
import type { DoStorageApi } from '../../src/adapters/durable-object/do-api.js';
import { defineStorageChecks } from '../storage-checks.js';
import { collect, runCollected, type CheckResult } from './mini-runner.js';
import { expect } from './worker-expect.js';
import { DO_SUITE_NAME } from './conformance-suite.js';

interface Env {
  CONFORMANCE: { getByName(name: string): { run(): Promise<CheckResult[]> } };
}

export class ConformanceObject extends DurableObject<Env> {
  async run(): Promise<CheckResult[]> {
    const api = this.ctx.storage as unknown as DoStorageApi;
    const tests = collect((t) =>
      defineStorageChecks({ ...t, expect }, DO_SUITE_NAME, async () => {
        await api.deleteAll();
        const opened = [new DurableObjectStorage(api)];
        return {
          storage: opened[0]!,
          reopen: async () => {
            await api.sync();
            for (const s of opened) s.close();
            const next = new DurableObjectStorage(api);
            opened.push(next);
            return next;
          },
          cleanup: async () => {
            for (const s of opened) s.close();
            await api.deleteAll();
          },
        };
      }),
    );
    return runCollected(tests);
  }
}

export default {
  async fetch(_request: Request, env: Env): Promise<Response> {
    return Response.json(await env.CONFORMANCE.getByName('conformance').run());
  },
};
