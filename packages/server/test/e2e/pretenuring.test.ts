/**
 * The Node host turns V8's allocation-site pretenuring off on V8 13 and later (Node 24), and
 * leaves it on before, or when the operator gives a pretenuring flag
 * (hosts/node/pretenuring.ts, docs/performance.md "Allocation-site pretenuring off on Node 24").
 *
 * What V8 does is read from its own trace: a real `rivulet serve` runs with
 * `--trace-pretenuring-statistics` and a 1 MB young generation under a load of appends; V8 prints a
 * `pretenuring:` line for the allocation sites it judged at a young collection while pretenuring
 * is on, and none while it is off.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PRETENURING_OFF_FROM_V8 } from '../../src/hosts/node/pretenuring.js';
import { spawnServe, type CliServer } from '../helpers/cli.js';
import { tempDir } from '../helpers/server.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const TRACE = ['--trace-pretenuring-statistics', '--max-semi-space-size=1'];
const WRITERS = 16;
const APPENDS_EACH = 250;

/** Runs a server with `nodeArgs` under 4,000 appends; answers how many pretenuring lines V8 printed meanwhile. */
async function pretenuringLinesUnderLoad(nodeArgs: readonly string[]): Promise<number> {
  const { dir, remove } = await tempDir();
  cleanups.push(remove);
  const server: CliServer = await spawnServe(['--data', dir], 15_000, [...TRACE, ...nodeArgs]);
  cleanups.push(() => server.kill());
  const from = server.output().length;
  const pad = 'x'.repeat(200);
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; i < APPENDS_EACH; i++) {
        const response = await fetch(`${server.url}/v1/streams/pretenuring/s${w}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'test/load', payload: { i, pad }, idempotencyKey: `k-${w}-${i}` }),
        });
        expect(response.status).toBe(200);
        await response.text();
      }
    }),
  );
  return server.output().slice(from).split('\n').filter((line) => line.includes('pretenuring:')).length;
}

const v8Major = Number.parseInt(process.versions.v8, 10);

describe('V8 allocation-site pretenuring in the Node host', () => {
  it(`is off on V8 ${PRETENURING_OFF_FROM_V8} and later, on before (this is V8 ${process.versions.v8})`, async () => {
    const lines = await pretenuringLinesUnderLoad([]);
    if (v8Major >= PRETENURING_OFF_FROM_V8) expect(lines).toBe(0);
    else expect(lines).toBeGreaterThan(0);
  });

  it("follows the operator's flag: --allocation-site-pretenuring keeps it on", async () => {
    expect(await pretenuringLinesUnderLoad(['--allocation-site-pretenuring'])).toBeGreaterThan(0);
  });
});
