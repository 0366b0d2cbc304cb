/**
 * What a webhook's `attempt` counts across a crash (protocol §17.1): the number of failures of the
 * event recorded in its run, plus one. A POST cut off by the server's death has no recorded outcome,
 * so the redelivery after the restart carries the same `webhook-id` and the same `attempt`; a
 * receiver deduplicates by `webhook-id`. Node host: the server process is killed with SIGKILL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawnServe, type CliServer } from '../helpers/cli.js';
import { HookServer } from '../helpers/hook-server.js';
import { Api } from '../helpers/http.js';
import { tempDir } from '../helpers/server.js';
import { configured, eventually } from '../helpers/subscriptions.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('webhook attempts across a crash', () => {
  it('a POST in flight when the server is killed is sent again after the restart with the same webhook-id and attempt', async () => {
    const folder = await tempDir('rivulet-hook-restart-');
    cleanups.push(folder.remove);
    const hooks = await HookServer.start();
    cleanups.push(() => hooks.stop());
    // The first POST never gets an answer; the server dies while it waits.
    hooks.script = (_request, index) => (index === 0 ? 'hang' : { status: 204 });
    const args = ['--data', folder.dir, '--retry-base-ms', '10', '--retry-max-ms', '50', '--delivery-timeout-ms', '60000'];
    let server: CliServer = await spawnServe(args);
    cleanups.push(() => server.kill('SIGKILL'));
    const api = new Api(server.url);
    await api.append('/hooks/src', [
      configured({
        subscriptionKey: 'k',
        filter: { eventTypes: ['app/x'] },
        receiver: { action: 'webhook-post', url: hooks.url(), delivery: { start: 'now', onFailingEvent: 'halt' } },
      }),
      { type: 'app/x', payload: { n: 1 } },
    ]);
    await eventually(() => hooks.requests.length === 1, 'the first POST');
    await server.kill('SIGKILL');

    server = await spawnServe(args);
    await eventually(() => hooks.requests.length === 2, 'the POST sent again after the restart', 10_000);
    const [first, again] = hooks.requests;
    expect(again!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(again!.envelope.deliveryId).toBe(first!.envelope.deliveryId);
    expect([first!.envelope.attempt, again!.envelope.attempt]).toEqual([1, 1]);
    expect(again!.envelope.event.offset).toBe(first!.envelope.event.offset);
  });
});
