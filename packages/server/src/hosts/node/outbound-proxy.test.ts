/**
 * Webhooks through an egress proxy (protocol §17.4) against the CONNECT proxy of
 * test/helpers/connect-proxy.ts: the target is vetted here before the proxy is asked, the proxy is
 * asked for the vetted address (so it cannot resolve the name elsewhere), the Host field and TLS
 * keep the name, NO_PROXY hosts go direct, and a refused destination never reaches the proxy.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectProxy } from '../../../test/helpers/connect-proxy.js';
import { HookServer, TEST_CA } from '../../../test/helpers/hook-server.js';
import { nodeOutbound, type HostResolver, type NodeOutbound, type NodeOutboundOptions } from './outbound.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function started<T extends { stop(): Promise<void> }>(thing: Promise<T>): Promise<T> {
  const it = await thing;
  cleanups.push(() => it.stop());
  return it;
}

function outbound(options: NodeOutboundOptions): NodeOutbound {
  const http = nodeOutbound(options);
  cleanups.push(() => http.close());
  return http;
}

const post = () => ({ headers: { 'content-type': 'application/json' }, body: '{"n":1}', signal: new AbortController().signal });

/** 127.0.0.1 plays a public address (only 127.0.0.2 is refused); the name is resolved by this table only. */
function vetted(answer = '127.0.0.1'): Pick<NodeOutboundOptions, 'resolve' | 'refuses'> & { calls: string[] } {
  const calls: string[] = [];
  const resolve: HostResolver = (name) => {
    calls.push(name);
    return Promise.resolve([{ address: answer, family: 4 }]);
  };
  return { resolve, refuses: (address) => address === '127.0.0.2', calls };
}

async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error('expected a rejection');
}

describe('through a proxy, destinations vetted', () => {
  it('an http webhook goes through a CONNECT tunnel to the vetted address, with the name in Host', async () => {
    const proxy = await started(ConnectProxy.start());
    const hook = await started(HookServer.start());
    const dns = vetted();
    const http = outbound({ allowPrivate: false, ...dns, proxy: { http: proxy.url } });
    for (let i = 0; i < 3; i++) expect((await http.post(hook.url('/in', 'hooks.rivulet.test'), post())).status).toBe(204);
    expect(proxy.targets).toEqual([`127.0.0.1:${hook.port}`]);
    expect(proxy.plain).toBe(0); // never a forwarded request, which the proxy would resolve itself
    expect(hook.requests.map((r) => r.headers.host)).toEqual(Array(3).fill(`hooks.rivulet.test:${hook.port}`));
    expect(dns.calls).toEqual(Array(3).fill('hooks.rivulet.test'));
  });

  it('an https webhook: the tunnel goes to the vetted address, TLS verifies the name and resumes its session', async () => {
    const proxy = await started(ConnectProxy.start());
    const hook = await started(HookServer.start({ tls: true }));
    hook.script = () => ({ status: 204, headers: { connection: 'close' } });
    const http = outbound({ allowPrivate: false, ...vetted(), trustedCa: TEST_CA, proxy: { https: proxy.url } });
    for (let i = 0; i < 2; i++) expect((await http.post(hook.url('/in', 'hooks.rivulet.test'), post())).status).toBe(204);
    expect(proxy.targets).toEqual([`127.0.0.1:${hook.port}`, `127.0.0.1:${hook.port}`]);
    expect(hook.sessionsReused).toEqual([false, true]);
    // A name the certificate does not carry fails the TLS check inside the tunnel: nothing is sent.
    const message = await failure(http.post(hook.url('/in', 'elsewhere.rivulet.test'), post()));
    expect(message).toContain(`cannot reach https://elsewhere.rivulet.test:${hook.port}:`);
    expect(message).toContain('ERR_TLS_CERT_ALTNAME_INVALID');
    expect(hook.requests).toHaveLength(2);
  });

  it('a name that resolves to a refused address is refused before the proxy is asked', async () => {
    const proxy = await started(ConnectProxy.start());
    const hook = await started(HookServer.start());
    const http = outbound({ allowPrivate: false, ...vetted('127.0.0.2'), proxy: { http: proxy.url, https: proxy.url } });
    expect(await failure(http.post(hook.url('/in', 'hooks.rivulet.test'), post()))).toMatch(
      /^refused to send to hooks\.rivulet\.test: it resolves to 127\.0\.0\.2, a loopback, private/,
    );
    expect(await failure(http.post('http://169.254.169.254/latest/meta-data/', post()))).toMatch(/^refused to send to 169\.254\.169\.254: it is a loopback/);
    expect(proxy.targets).toEqual([]);
    expect(hook.connections).toBe(0);
  });

  it('a host in noProxy is reached directly, other hosts through the proxy', async () => {
    const proxy = await started(ConnectProxy.start());
    const hook = await started(HookServer.start());
    const http = outbound({ allowPrivate: false, ...vetted(), proxy: { http: proxy.url, noProxy: 'direct.rivulet.test, .inside.test' } });
    expect((await http.post(hook.url('/in', 'direct.rivulet.test'), post())).status).toBe(204);
    expect((await http.post(hook.url('/in', 'a.inside.test'), post())).status).toBe(204);
    expect(proxy.targets).toEqual([]);
    expect((await http.post(hook.url('/in', 'hooks.rivulet.test'), post())).status).toBe(204);
    expect(proxy.targets).toEqual([`127.0.0.1:${hook.port}`]);
    expect(hook.requests).toHaveLength(3);
  });

  it('a proxy that refuses the tunnel is no answer, naming the destination', async () => {
    const proxy = await started(ConnectProxy.start());
    proxy.refuse = () => true;
    const hook = await started(HookServer.start());
    const http = outbound({ allowPrivate: false, ...vetted(), proxy: { http: proxy.url } });
    const message = await failure(http.post(hook.url('/in', 'hooks.rivulet.test'), post()));
    expect(message).toBe(`cannot reach http://hooks.rivulet.test:${hook.port}: UND_ERR_ABORTED Proxy response (403) !== 200 when HTTP Tunneling`);
    expect(hook.connections).toBe(0);
  });
});

describe('through a proxy, private destinations allowed', () => {
  it('the proxy is asked for the name: it resolves it, nothing is vetted here', async () => {
    const proxy = await started(ConnectProxy.start());
    const hook = await started(HookServer.start());
    const dns = vetted('127.0.0.2');
    const http = outbound({ allowPrivate: true, ...dns, proxy: { http: proxy.url } });
    expect((await http.post(hook.url('/in', 'localhost'), post())).status).toBe(204);
    expect(proxy.targets).toEqual([`localhost:${hook.port}`]);
    expect(dns.calls).toEqual([]);
  });
});
