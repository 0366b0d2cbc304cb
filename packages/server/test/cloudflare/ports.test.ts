/**
 * The outbound and timer ports' conformance checks inside workerd (ports-worker.ts, bundled and
 * run by Miniflare): the fetch adapter with workerd's fetch against the test server this process
 * runs, and the Durable Object alarm adapter against a real Durable Object alarm. Each check's
 * result becomes one vitest test here, named as the Node runs' tests are
 * (outbound-conformance.test.ts, alarm-conformance.test.ts).
 */
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAlarmChecks } from '../alarm-checks.js';
import { COMPATIBILITY_DATE, bundleWorker, serverFile } from '../helpers/miniflare.js';
import { OutboundTestServer } from '../helpers/outbound-server.js';
import { defineOutboundChecks } from '../outbound-checks.js';
import { collect, type CheckResult } from './mini-runner.js';
import { DO_ALARM_SUITE, DO_ALARM_TOLERANCE, FETCH_OUTBOUND_SUITE } from './ports-suite.js';

const namesOnly = () => Promise.reject(new Error('names only'));
const suites = {
  outbound: collect((t) => defineOutboundChecks({ ...t, expect }, FETCH_OUTBOUND_SUITE, namesOnly)).map((test) => test.fullName),
  alarms: collect((t) => defineAlarmChecks({ ...t, expect }, DO_ALARM_SUITE, DO_ALARM_TOLERANCE, namesOnly)).map((test) => test.fullName),
};

let mf: Miniflare | undefined;
let server: OutboundTestServer | undefined;
const results: Record<keyof typeof suites, Map<string, CheckResult>> = { outbound: new Map(), alarms: new Map() };

beforeAll(async () => {
  server = await OutboundTestServer.start();
  const script = await bundleWorker(serverFile('test/cloudflare/ports-worker.ts'));
  mf = new Miniflare({
    modules: [{ type: 'ESModule', path: 'worker.js', contents: script }],
    compatibilityDate: COMPATIBILITY_DATE,
    durableObjects: { ALARMS: { className: 'AlarmObject', useSQLite: true } },
  });
  const query = new URLSearchParams({ server: server.url, refused: server.refusedUrl });
  // One run at a time: the alarm checks time their fires, and the outbound checks load the machine.
  for (const [suite, path] of [['outbound', `/outbound?${query}`], ['alarms', '/alarms']] as const) {
    const res = await mf.dispatchFetch(`http://conformance${path}`);
    const body = await res.text();
    expect(res.status, body).toBe(200);
    results[suite] = new Map((JSON.parse(body) as CheckResult[]).map((r) => [r.fullName, r]));
  }
}, 120_000);

afterAll(async () => {
  await mf?.dispose();
  await server?.stop();
});

for (const suite of ['outbound', 'alarms'] as const) {
  describe(`the ${suite} checks inside workerd`, () => {
    it('the Worker answered one result per check', () => {
      expect([...results[suite].keys()].sort()).toEqual([...suites[suite]].sort());
    });
    for (const name of suites[suite]) {
      it(name, () => {
        const result = results[suite].get(name);
        expect(result, `no result for ${name}`).toBeDefined();
        expect(result!.error ?? null, name).toBeNull();
        expect(result!.outcome).toBe('passed');
      });
    }
  });
}
