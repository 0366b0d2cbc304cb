/**
 * End-to-end over real HTTP: a Node server started with an egress proxy for webhooks
 * (`webhookProxy`, what `rivulet serve --webhook-proxy` passes; protocol §17.7) delivers through
 * the proxy's CONNECT tunnel, and so does the built `rivulet serve --webhook-proxy URL`. The proxy
 * rules themselves are hosts/node/outbound-proxy.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawnServe } from '../helpers/cli.js';
import { ConnectProxy } from '../helpers/connect-proxy.js';
import { HookServer } from '../helpers/hook-server.js';
import { Api } from '../helpers/http.js';
import { startTestServer, tempDir } from '../helpers/server.js';
import { configured } from '../helpers/subscriptions.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('webhooks through an egress proxy', () => {
  it('every delivery goes through the proxy, on one kept tunnel', async () => {
    const proxy = await ConnectProxy.start();
    cleanups.push(() => proxy.stop());
    const hooks = await HookServer.start();
    cleanups.push(() => hooks.stop());
    const server = await startTestServer({ webhookProxy: { http: proxy.url } });
    cleanups.push(() => server.close());
    await server.api.append(
      '/proxied',
      configured({ subscriptionKey: 'k', receiver: { action: 'webhook-post', url: hooks.url('/hook'), delivery: { start: 'now', onFailingEvent: 'halt' } } }),
    );
    await server.api.append('/proxied', [
      { type: 'app/x', payload: { n: 1 } },
      { type: 'app/x', payload: { n: 2 } },
    ]);
    await expect.poll(() => hooks.requests.length).toBe(2);
    expect(hooks.requests.map((r) => r.envelope.event.payload)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(proxy.targets).toEqual([`127.0.0.1:${hooks.port}`]);
    expect(proxy.plain).toBe(0);
  });

  it('rivulet serve --webhook-proxy URL: the built CLI passes the proxy on', async () => {
    const proxy = await ConnectProxy.start();
    cleanups.push(() => proxy.stop());
    const hooks = await HookServer.start();
    cleanups.push(() => hooks.stop());
    const { dir, remove } = await tempDir('rivulet-proxy-');
    cleanups.push(remove);
    const server = await spawnServe(['--data', dir, '--webhook-proxy', proxy.url]);
    cleanups.push(() => server.kill('SIGKILL'));
    const api = new Api(server.url);
    await api.append(
      '/proxied',
      configured({ subscriptionKey: 'k', receiver: { action: 'webhook-post', url: hooks.url('/hook'), delivery: { start: 'now', onFailingEvent: 'halt' } } }),
    );
    await api.append('/proxied', { type: 'app/x', payload: { n: 1 } });
    await expect.poll(() => hooks.requests.length, { timeout: 10_000 }).toBe(1);
    expect(proxy.targets).toEqual([`127.0.0.1:${hooks.port}`]);
  });
});
