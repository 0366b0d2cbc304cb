/**
 * The Worker the ports' conformance test (ports.test.ts) bundles and runs under Miniflare:
 *
 * - `GET /outbound?server=URL&refused=URL` runs the outbound checks (outbound-checks.ts) against the
 *   fetch adapter (hosts/worker/outbound.ts) with workerd's own fetch, talking to the test server
 *   the vitest process runs (helpers/outbound-server.ts);
 * - `GET /alarms` runs the timer checks (alarm-checks.ts) in a SQLite-backed Durable Object against
 *   its real alarm (adapters/durable-object/do-alarm.ts): the object's `alarm()` handler rings the
 *   adapter, as the stream object does (hosts/worker/stream-host.ts). Each check gets a fresh
 *   adapter, and the stored alarm is deleted before and after it.
 *
 * Each answers one result per check.
 */
import { DurableObject } from 'cloudflare:workers';
import { DurableObjectAlarms } from '../../src/adapters/durable-object/do-alarm.js';
import type { DoStorageApi } from '../../src/adapters/durable-object/do-api.js';
import { fetchOutbound } from '../../src/hosts/worker/outbound.js';
import { defineAlarmChecks } from '../alarm-checks.js';
import { defineOutboundChecks } from '../outbound-checks.js';
import { collect, runCollected, type CheckResult } from './mini-runner.js';
import { DO_ALARM_SUITE, DO_ALARM_TOLERANCE, FETCH_OUTBOUND_SUITE } from './ports-suite.js';
import { expect } from './worker-expect.js';

interface Env {
  ALARMS: { getByName(name: string): { run(): Promise<CheckResult[]> } };
}

export class AlarmObject extends DurableObject<Env> {
  #alarms: DurableObjectAlarms | undefined;

  async run(): Promise<CheckResult[]> {
    const storage = this.ctx.storage as unknown as DoStorageApi;
    const tests = collect((t) =>
      defineAlarmChecks({ ...t, expect }, DO_ALARM_SUITE, DO_ALARM_TOLERANCE, async () => {
        await storage.deleteAlarm();
        const alarms = new DurableObjectAlarms(storage);
        this.#alarms = alarms;
        return {
          factory: alarms,
          cleanup: async () => {
            this.#alarms = undefined;
            await storage.deleteAlarm();
          },
        };
      }),
    );
    return runCollected(tests);
  }

  alarm(): void {
    this.#alarms?.ring();
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === '/alarms') return Response.json(await env.ALARMS.getByName('alarms').run());
    const serverUrl = url.searchParams.get('server')!;
    const refusedUrl = url.searchParams.get('refused')!;
    const tests = collect((t) =>
      defineOutboundChecks({ ...t, expect }, FETCH_OUTBOUND_SUITE, async () => ({
        make: (options) => fetchOutbound({ allowPrivate: true, ...options }),
        serverUrl,
        refusedUrl,
        cleanup: () => undefined,
      })),
    );
    return Response.json(await runCollected(tests));
  },
};
