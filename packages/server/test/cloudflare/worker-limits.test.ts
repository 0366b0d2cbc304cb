/**
 * What the Durable Object SQL API limits that the Node host's SQLite does not (docs/cloudflare.md
 * §5): at most 100 bound parameters per statement and 2 MB per row. Filters naming many event types
 * must still work on the Worker host, and the event size limit must stay below a row's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineConfigOf, type WorkerEnv } from '../../src/hosts/worker/env.js';
import { configured, copyTo, waitForCopies } from '../helpers/subscriptions.js';
import { startWorkerHost, type WorkerTestHost } from '../helpers/worker-host.js';

let host: WorkerTestHost;

beforeAll(async () => {
  host = await startWorkerHost({ retryBaseMs: 20, retryMaxMs: 100 });
}, 60_000);

afterAll(async () => {
  await host?.close();
});

const types = (n: number) => Array.from({ length: n }, (_, i) => `app/t${i}`);

describe('the Durable Object SQL API binds at most 100 parameters', () => {
  it('a read filtered by 200 event types answers the matching events', async () => {
    await host.api.append('/limits/read', [{ type: 'app/t150' }, { type: 'other' }, { type: 'app/t3' }]);
    const page = await host.api.read('/limits/read', { eventTypes: types(200).join(',') });
    expect(page.events.map((e) => e.type)).toEqual(['app/t150', 'app/t3']);
  });

  it('a copy subscription whose filter names 256 event types delivers what matches', async () => {
    await host.api.append('/limits/src', configured({ subscriptionKey: 'k', filter: { eventTypes: types(256) }, receiver: copyTo('/limits/dst') }));
    await host.api.append('/limits/src', [{ type: 'app/t255' }, { type: 'nope' }, { type: 'app/t0' }]);
    const copies = await waitForCopies(host.api, '/limits/dst', 2);
    expect(copies.map((c) => c.type)).toEqual(['app/t255', 'app/t0']);
  });
});

describe('configuration', () => {
  const env = (vars: Record<string, string>) => ({ RIVULET_OPEN: 'true', ...vars }) as unknown as WorkerEnv;

  it('an event size above what one SQLite row of a Durable Object holds is refused', () => {
    expect(() => engineConfigOf(env({ RIVULET_MAX_EVENT_BYTES: '3000000' }))).toThrow(/RIVULET_MAX_EVENT_BYTES/);
    expect(engineConfigOf(env({ RIVULET_MAX_EVENT_BYTES: '1500000' })).maxEventBytes).toBe(1_500_000);
  });

  it('private webhooks are allowed only in open mode unless said otherwise', () => {
    expect(engineConfigOf(env({})).allowPrivateWebhooks).toBe(true);
    expect(engineConfigOf({ RIVULET_TOKENS: 'x' } as unknown as WorkerEnv).allowPrivateWebhooks).toBe(false);
    expect(engineConfigOf({ RIVULET_TOKENS: 'x', RIVULET_ALLOW_PRIVATE_WEBHOOKS: 'true' } as unknown as WorkerEnv).allowPrivateWebhooks).toBe(true);
  });
});
