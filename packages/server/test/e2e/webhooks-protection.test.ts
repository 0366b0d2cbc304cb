/**
 * End-to-end over real HTTP: the outbound protection of webhooks (protocol §9.3, §17.4)
 * and the answers a receiver can give that are not plain statuses — redirects, endless bodies,
 * no answer at all.
 *
 * With tokens configured, private webhooks are not allowed: literal private destinations are
 * INVALID_INPUT at configure time in every notation, and a host *name* that resolves to loopback
 * is refused at delivery without being contacted. Two such names are used: one the server's
 * resolver is told about (webhookResolver, deterministic everywhere), and this machine's own host
 * name through the system resolver (node:dns, as in production), which on this kind of machine
 * resolves to a loopback or private address; where it does not, that case is skipped.
 */
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import type { CommittedEvent } from '@rivulet/contract';
import { isPrivateAddress, isPrivateHost } from '../../src/core/private-address.js';
import type { NodeServerOptions } from '../../src/hosts/node/serve.js';
import { HookServer } from '../helpers/hook-server.js';
import { expectError, type Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { EventType, caughtUp, configured, eventually, halted, headOf, runtimeOf } from '../helpers/subscriptions.js';

const QUICK = { retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 3, deliveryTimeoutMs: 1_000 } as const;
const ADMIN = 'admin-token-0123456789abcdef';
const TOKENS = new Map([[ADMIN, '*']]);

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(options: Omit<NodeServerOptions, 'port' | 'data'> = {}): Promise<TestServer> {
  const server = await startTestServer({ ...QUICK, ...options });
  cleanups.push(() => server.close());
  return server;
}

async function receiver(host = '127.0.0.1'): Promise<HookServer> {
  const hooks = await HookServer.start({ host });
  cleanups.push(() => hooks.stop());
  return hooks;
}

function webhook(key: string, url: string, onFailingEvent: 'halt' | 'skip' = 'halt') {
  return configured({ subscriptionKey: key, filter: { eventTypes: ['app/x'] }, receiver: { action: 'webhook-post', url, delivery: { start: 'now', onFailingEvent } } });
}

const x = (n: number) => ({ type: 'app/x', payload: { n } });

async function configure(api: Api, path: string, event: ReturnType<typeof webhook>): Promise<CommittedEvent> {
  const [committed] = await api.append(path, event);
  return committed!;
}

/** This machine's host name when the system resolver maps it to loopback/private addresses only. */
async function privateHostName(): Promise<string | undefined> {
  const name = hostname();
  if (!name || isPrivateHost(name)) return undefined;
  try {
    const addresses = await lookup(name, { all: true });
    return addresses.length > 0 && addresses.every((a) => isPrivateAddress(a.address)) ? name : undefined;
  } catch {
    return undefined;
  }
}

describe('with tokens, private destinations are refused', () => {
  const literals = [
    'http://127.0.0.1:8080/hook',
    'http://127.1/hook',
    'http://2130706433/hook',
    'http://0x7f000001/hook',
    'http://0177.0.0.1/hook',
    'http://127.0.0.1.:8080/hook',
    'http://[::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[::ffff:7f00:1]/hook',
    'http://[0:0:0:0:0:0:0:1]/hook',
    'http://localhost/hook',
    'http://LOCALHOST./hook',
    'http://api.localhost/hook',
    'http://0.0.0.0/hook',
    'http://10.1.2.3/hook',
    'http://172.16.5.4/hook',
    'http://192.168.1.1/hook',
    'http://100.64.0.1/hook',
    'http://169.254.169.254/latest/meta-data/',
    'http://[fd00:ec2::254]/latest/meta-data/',
    'http://[fe80::1]/hook',
    // The metadata address behind IPv6 translation and tunnelling prefixes.
    'http://[64:ff9b::169.254.169.254]/latest/meta-data/',
    'http://[64:ff9b:1::a9fe:a9fe]/latest/meta-data/',
    'http://[::ffff:0:a9fe:a9fe]/latest/meta-data/',
    'http://[2001:0:4136:e378:8000:63bf:5601:5601]/latest/meta-data/',
    'http://metadata.google.internal/computeMetadata/v1/',
    'https://user:pass@127.0.0.1/hook',
  ];

  it('literal loopback, private, link-local and metadata URLs are INVALID_INPUT at configure time, in every notation', async () => {
    const server = await serve({ tokens: TOKENS });
    const admin = server.api.withToken(ADMIN);
    await admin.append('/ssrf', x(0));
    const head = await headOf(admin, '/ssrf');
    for (const url of literals) {
      const res = await admin.post('/ssrf', webhook('k', url));
      expectError(res, 'INVALID_INPUT', /receiver\.url: \S+ is a loopback, private, link-local or metadata address; this server does not send webhooks there \(see --allow-private-webhooks\)/);
    }
    expect(await headOf(admin, '/ssrf')).toBe(head);
  });

  it('the same URLs are accepted in open mode (private webhooks allowed by default)', async () => {
    const server = await serve();
    for (const url of literals) expect((await server.api.post('/open', webhook('k', url))).status).toBe(200);
  });

  it('a host name that resolves to 127.0.0.1 is refused at delivery, never contacted, and halts with a clear error', async () => {
    const hooks = await receiver();
    const resolved: string[] = [];
    const server = await serve({
      tokens: TOKENS,
      webhookResolver: (name) => {
        resolved.push(name);
        return Promise.resolve(name === 'hooks.rivulet.test' ? [{ address: '127.0.0.1', family: 4 }] : []);
      },
    });
    const admin = server.api.withToken(ADMIN);
    await configure(admin, '/named', webhook('k', hooks.url('/hook', 'hooks.rivulet.test'), 'skip'));
    const [e] = await admin.append('/named', x(1));
    const entry = await halted(admin, '/named', 'k');
    const error =
      'webhook not delivered: refused to send to hooks.rivulet.test: it resolves to 127.0.0.1, a loopback, private, ' +
      'link-local or metadata address; this server does not send webhooks there (see --allow-private-webhooks)';
    expect(entry.deliveryHalted).toEqual({ reason: 'delivery-failed', afterOffset: e!.offset - 1, attempts: 3, error });
    expect((await runtimeOf(admin, '/named', 'k'))?.lastError).toBe(error);
    expect(resolved).toEqual(['hooks.rivulet.test', 'hooks.rivulet.test', 'hooks.rivulet.test']);
    expect(hooks.connections).toBe(0);
    // An outage-like refusal is never a skip, even with onFailingEvent "skip".
    expect((await admin.readAll('/named')).filter((ev) => ev.type === EventType.errorOccurred)).toEqual([]);
  });

  it("this machine's own host name, resolved by the system, is refused and never contacted", async (context) => {
    const name = await privateHostName();
    if (!name) {
      context.skip();
      return;
    }
    const [address] = await lookup(name, { all: true });
    const hooks = await receiver(address!.address);
    const server = await serve({ tokens: TOKENS });
    const admin = server.api.withToken(ADMIN);
    await configure(admin, '/own', webhook('k', hooks.url('/hook', name)));
    await admin.append('/own', x(1));
    const entry = await halted(admin, '/own', 'k');
    expect(entry.deliveryHalted?.error).toContain(`refused to send to ${name.toLowerCase()}: it resolves to `);
    expect(hooks.connections).toBe(0);
  });
});

describe('answers that are not plain statuses', () => {
  it('a redirect is not followed: its target is never contacted and the 3xx is a failure naming the status', async () => {
    const target = await receiver('127.0.0.2');
    const hooks = await receiver();
    hooks.script = () => ({ status: 307, headers: { location: target.url('/elsewhere') } });
    const server = await serve();
    await configure(server.api, '/redirect', webhook('k', hooks.url()));
    await server.api.append('/redirect', x(1));
    const entry = await halted(server.api, '/redirect', 'k');
    expect(entry.deliveryHalted?.error).toBe('webhook responded 307 Temporary Redirect (redirects are not followed)');
    expect(hooks.requests).toHaveLength(3);
    expect(target.connections).toBe(0);
  });

  it('a receiver streaming an endless body does not hang the delivery or fill memory', async () => {
    const hooks = await receiver();
    let written = 0;
    hooks.script = () => (res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 1);
      let closed = false;
      res.on('close', () => {
        closed = true;
      });
      const pump = () => {
        // Bounded, so a broken cap fails the test instead of exhausting the machine.
        while (!closed && written < 512 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        if (!closed) res.end();
      };
      pump();
    };
    const server = await serve();
    await configure(server.api, '/endless', webhook('k', hooks.url()));
    const events = await server.api.append('/endless', [x(1), x(2)]);
    await caughtUp(server.api, '/endless', 'k');
    expect(hooks.offsets()).toEqual(events.map((e) => e.offset));
    expect(written).toBeLessThan(64 * 1024 * 1024);
    await eventually(() => hooks.openConnections === 0, 'the endless responses dropped');
  });

  it('a receiver that never answers times out (unavailable), is retried under the same webhook-id, and is never skipped', async () => {
    const hooks = await receiver();
    hooks.script = (_request, index) => (index < 2 ? 'hang' : { status: 204 });
    const server = await serve({ deliveryTimeoutMs: 300, maxDeliveryAttempts: 6 });
    await configure(server.api, '/silent', webhook('k', hooks.url(), 'skip'));
    const [e] = await server.api.append('/silent', x(1));
    const row = await eventually(async () => {
      const r = await runtimeOf(server.api, '/silent', 'k');
      return r?.lastError ? r : undefined;
    }, 'the first timeout');
    expect(row.lastError).toBe('delivery timed out after 300 ms');
    await caughtUp(server.api, '/silent', 'k');
    // Two hung calls, then the answer (a slow answer under load may add one more timed-out try).
    const tries = hooks.offsets().length;
    expect(tries).toBeGreaterThanOrEqual(3);
    expect(hooks.offsets()).toEqual(Array<number>(tries).fill(e!.offset));
    expect(hooks.envelopes().map((env) => env.attempt)).toEqual(Array.from({ length: tries }, (_, i) => i + 1));
    expect(new Set(hooks.requests.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect((await server.api.readAll('/silent')).filter((ev) => ev.type === EventType.errorOccurred)).toEqual([]);
  });
});
