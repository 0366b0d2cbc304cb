/**
 * The Node outbound adapter against real loopback servers (protocol §17.4): refused destinations
 * are never contacted, the connect uses the vetted addresses only (no second resolution, so no DNS
 * rebinding), redirects are answers, response bodies are capped, the signal ends a request.
 */
import { createServer as createNetServer } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HookServer, TEST_CA } from '../../../test/helpers/hook-server.js';
import { DEFAULT_MAX_RESPONSE_BYTES, nodeOutbound, type HostResolver, type NodeOutbound, type ResolvedAddress } from './outbound.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function hookServer(host = '127.0.0.1', tls = false): Promise<HookServer> {
  const server = await HookServer.start({ host, tls });
  cleanups.push(() => server.stop());
  return server;
}

function outbound(options: Parameters<typeof nodeOutbound>[0]): NodeOutbound {
  const http = nodeOutbound(options);
  cleanups.push(() => http.close());
  return http;
}

const post = (body = '{"n":1}', signal = new AbortController().signal) => ({ headers: { 'content-type': 'application/json', 'x-test': 'yes' }, body, signal });

async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error('expected a rejection');
}

/** A resolver that answers from a table and counts its calls. */
function resolver(answers: (name: string, call: number) => ResolvedAddress[]): HostResolver & { calls: string[] } {
  const calls: string[] = [];
  const resolve = (name: string) => {
    calls.push(name);
    return Promise.resolve(answers(name, calls.length));
  };
  return Object.assign(resolve, { calls });
}

const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });

describe('private destinations allowed', () => {
  it('POSTs the body and headers and answers status, reason and body', async () => {
    const server = await hookServer();
    server.script = () => ({ status: 201, body: 'created' });
    const http = outbound({ allowPrivate: true });
    expect(await http.post(server.url('/in?a=1'), post())).toEqual({ status: 201, statusText: 'Created', body: 'created' });
    expect(server.requests).toHaveLength(1);
    const request = server.requests[0]!;
    expect([request.method, request.path, request.body]).toEqual(['POST', '/in?a=1', '{"n":1}']);
    expect(request.headers).toMatchObject({ 'content-type': 'application/json', 'x-test': 'yes', 'content-length': '7' });
  });

  it('keeps the connection alive between requests', async () => {
    const server = await hookServer();
    const http = outbound({ allowPrivate: true });
    for (let i = 0; i < 3; i++) expect((await http.post(server.url(), post())).status).toBe(204);
    expect(server.connections).toBe(1);
  });

  it('credentials in the URL are sent as Basic authorization, not in the request line', async () => {
    const server = await hookServer();
    const http = outbound({ allowPrivate: true });
    await http.post(`http://hook%20user:s%3Acret@127.0.0.1:${server.port}/in`, post());
    expect(server.requests[0]!.path).toBe('/in');
    expect(server.requests[0]!.headers.authorization).toBe(`Basic ${Buffer.from('hook user:s:cret').toString('base64')}`);
  });

  it('a header that would end its line is refused before anything is sent', async () => {
    const server = await hookServer();
    const http = outbound({ allowPrivate: true });
    const bad = { ...post(), headers: { 'x-evil': 'a\r\nx-injected: 1' } };
    expect(await failure(http.post(server.url(), bad))).toBe(`cannot send to http://127.0.0.1:${server.port}: invalid request header "x-evil"`);
    expect(server.connections).toBe(0);
  });

  it('an answer that is not HTTP/1.x rejects naming the destination', async () => {
    const raw = createNetServer((socket) => socket.on('data', () => socket.end('SSH-2.0-OpenSSH_9.6\r\n\r\n')));
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => raw.close(resolve)));
    const port = (raw.address() as { port: number }).port;
    expect(await failure(outbound({ allowPrivate: true }).post(`http://127.0.0.1:${port}/`, post()))).toBe(
      `http://127.0.0.1:${port} sent an invalid HTTP answer: Response does not match the HTTP/1.1 protocol (Expected HTTP/, RTSP/ or ICE/)`,
    );
  });

  it('a connection refused rejects with the destination and the cause', async () => {
    const server = await hookServer();
    await server.stop();
    const message = await failure(outbound({ allowPrivate: true }).post(server.url(), post()));
    expect(message).toContain(`cannot reach http://127.0.0.1:${server.port}`);
    expect(message).toContain('ECONNREFUSED');
  });
});

describe('https', () => {
  it('POSTs over TLS on a kept-alive connection, verifying the certificate for the address', async () => {
    const server = await hookServer('127.0.0.1', true);
    server.script = () => ({ status: 201, body: 'created' });
    const http = outbound({ allowPrivate: true, trustedCa: TEST_CA });
    for (let i = 0; i < 3; i++) {
      expect(await http.post(server.url('/in?a=1'), post())).toEqual({ status: 201, statusText: 'Created', body: 'created' });
    }
    expect(server.connections).toBe(1);
    expect([server.requests[0]!.path, server.requests[0]!.body]).toEqual(['/in?a=1', '{"n":1}']);
  });

  it('verifies the certificate for the host name, connecting to the vetted address', async () => {
    const server = await hookServer('127.0.0.1', true);
    const resolve = resolver(() => [v4('127.0.0.1')]);
    const http = outbound({ allowPrivate: false, resolve, refuses: () => false, trustedCa: TEST_CA });
    expect((await http.post(server.url('/hook', 'hooks.rivulet.test'), post())).status).toBe(204);
    expect(server.requests[0]!.headers.host).toBe(`hooks.rivulet.test:${server.port}`);
    // A name the certificate does not carry is refused by the TLS check: nothing is sent.
    const other = resolver(() => [v4('127.0.0.1')]);
    const strict = outbound({ allowPrivate: false, resolve: other, refuses: () => false, trustedCa: TEST_CA });
    const message = await failure(strict.post(server.url('/hook', 'elsewhere.rivulet.test'), post()));
    expect(message).toContain(`cannot reach https://elsewhere.rivulet.test:${server.port}: ERR_TLS_CERT_ALTNAME_INVALID`);
    expect(server.requests).toHaveLength(1);
  });

  it('an untrusted certificate is not an answer: nothing is sent', async () => {
    const server = await hookServer('127.0.0.1', true);
    const message = await failure(outbound({ allowPrivate: true }).post(server.url(), post()));
    expect(message).toContain(`cannot reach https://127.0.0.1:${server.port}:`);
    expect(message).toMatch(/SELF_SIGNED|self[- ]signed/i);
    expect(server.requests).toHaveLength(0);
  });
});

describe('private destinations refused', () => {
  it.each([
    'http://127.0.0.1:PORT/hook',
    'http://127.1:PORT/hook',
    'http://2130706433:PORT/hook',
    'http://0x7f.0.0.1:PORT/hook',
    'http://[::1]:PORT/hook',
    'http://[::ffff:127.0.0.1]:PORT/hook',
    'http://localhost:PORT/hook',
    'http://localhost.:PORT/hook',
    'http://metadata.google.internal/computeMetadata/v1/',
    'http://169.254.169.254/latest/meta-data/',
  ])('%s is refused without a connection or a lookup', async (template) => {
    const server = await hookServer();
    const resolve = resolver(() => [v4('127.0.0.1')]);
    const message = await failure(outbound({ allowPrivate: false, resolve }).post(template.replace('PORT', String(server.port)), post()));
    expect(message).toMatch(/^refused to send to \S+: it is a loopback, private, link-local or metadata address/);
    expect(message).toContain('--allow-private-webhooks');
    expect(resolve.calls).toEqual([]);
    expect(server.connections).toBe(0);
  });

  it('a host name that resolves to loopback is refused and never contacted', async () => {
    const server = await hookServer();
    const resolve = resolver(() => [v4('127.0.0.1')]);
    const message = await failure(outbound({ allowPrivate: false, resolve }).post(server.url('/hook', 'hooks.rivulet.test'), post()));
    expect(message).toBe(
      'refused to send to hooks.rivulet.test: it resolves to 127.0.0.1, a loopback, private, link-local or metadata address; ' +
        'this server does not send webhooks there (see --allow-private-webhooks)',
    );
    expect(resolve.calls).toEqual(['hooks.rivulet.test']);
    expect(server.connections).toBe(0);
  });

  it('one private answer among public ones refuses the name (nothing is contacted)', async () => {
    const server = await hookServer();
    const resolve = resolver(() => [v4('93.184.216.34'), { address: '::1', family: 6 }]);
    expect(await failure(outbound({ allowPrivate: false, resolve }).post(server.url('/hook', 'mixed.rivulet.test'), post()))).toContain(
      'it resolves to ::1',
    );
    expect(server.connections).toBe(0);
  });

  it('a name that does not resolve rejects with the resolver error', async () => {
    const resolve: HostResolver = () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.test'), { code: 'ENOTFOUND' }));
    expect(await failure(outbound({ allowPrivate: false, resolve }).post('http://nowhere.test/hook', post()))).toBe(
      'cannot resolve nowhere.test: getaddrinfo ENOTFOUND nowhere.test',
    );
  });

  it('connects to the vetted address only: the name is resolved once per request, never again at connect', async () => {
    // 127.0.0.1 plays a public address here (only 127.0.0.2 is refused), so the pinning can be
    // watched on loopback: the system resolver cannot resolve *.rivulet.test at all, so a request
    // that arrives proves the socket used our vetted answer. The second answer "rebinds" the name
    // to a refused address: that request is refused before anything is sent.
    const server = await hookServer();
    const resolve = resolver((_name, call) => [v4(call === 1 ? '127.0.0.1' : '127.0.0.2')]);
    const http = outbound({ allowPrivate: false, resolve, refuses: (address) => address === '127.0.0.2' });
    expect((await http.post(server.url('/hook', 'hooks.rivulet.test'), post())).status).toBe(204);
    expect(server.requests[0]!.headers.host).toBe(`hooks.rivulet.test:${server.port}`);
    expect(await failure(http.post(server.url('/hook', 'hooks.rivulet.test'), post()))).toContain('it resolves to 127.0.0.2');
    expect(resolve.calls).toEqual(['hooks.rivulet.test', 'hooks.rivulet.test']);
    expect(server.requests).toHaveLength(1);
  });

  it('a redirect is an answer: its target is never contacted', async () => {
    const target = await hookServer('127.0.0.2');
    const server = await hookServer();
    server.script = () => ({ status: 302, headers: { location: target.url('/stolen') } });
    const resolve = resolver(() => [v4('127.0.0.1')]);
    const http = outbound({ allowPrivate: false, resolve, refuses: (address) => address === '127.0.0.2' });
    expect(await http.post(server.url('/hook', 'hooks.rivulet.test'), post())).toEqual({ status: 302, statusText: 'Found', body: '' });
    const open = outbound({ allowPrivate: true });
    expect((await open.post(server.url(), post())).status).toBe(302);
    expect(target.connections).toBe(0);
  });
});

describe('response reading and the signal', () => {
  it('reads at most the cap of an endless body, then drops the connection', async () => {
    const server = await hookServer();
    let written = 0;
    let closed = false;
    server.script = () => (res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const pump = () => {
        // Bounded, so a broken cap fails the test instead of filling the disk or memory.
        while (!closed && written < 256 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      res.on('close', () => {
        closed = true;
      });
      pump();
    };
    const answer = await outbound({ allowPrivate: true }).post(server.url(), post());
    expect(answer.status).toBe(200);
    expect(answer.body).toHaveLength(DEFAULT_MAX_RESPONSE_BYTES);
    await expect.poll(() => closed).toBe(true);
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('a smaller cap is honoured', async () => {
    const server = await hookServer();
    server.script = () => ({ status: 500, body: 'y'.repeat(10_000) });
    const answer = await outbound({ allowPrivate: true, maxResponseBytes: 100 }).post(server.url(), post());
    expect([answer.status, answer.body]).toEqual([500, 'y'.repeat(100)]);
  });

  it('the signal ends a request that gets no answer', async () => {
    const server = await hookServer();
    server.script = () => 'hang';
    const abort = new AbortController();
    const pending = outbound({ allowPrivate: true }).post(server.url(), post('{}', abort.signal));
    await expect.poll(() => server.requests.length).toBe(1);
    abort.abort(new Error('delivery timed out'));
    expect(await failure(pending)).toBe('delivery timed out');
    await expect.poll(() => server.openConnections).toBe(0);
  });

  it('requests that share a signal share one abort listener on it, and its abort still ends the one in flight', async () => {
    const server = await hookServer();
    const abort = new AbortController();
    const added = vi.spyOn(abort.signal, 'addEventListener');
    const http = outbound({ allowPrivate: true });
    for (let i = 0; i < 5; i++) expect((await http.post(server.url(), post('{}', abort.signal))).status).toBe(204);
    server.script = () => 'hang';
    const pending = http.post(server.url(), post('{}', abort.signal));
    await expect.poll(() => server.requests.length).toBe(6);
    expect(added.mock.calls.filter(([type]) => type === 'abort')).toHaveLength(1);
    abort.abort(new Error('delivery timed out'));
    expect(await failure(pending)).toBe('delivery timed out');
  });

  it('the signal ends a name resolution that does not come back', async () => {
    const abort = new AbortController();
    const resolve: HostResolver = () => new Promise(() => undefined);
    const pending = outbound({ allowPrivate: false, resolve }).post('http://slow.rivulet.test/hook', post('{}', abort.signal));
    abort.abort(new Error('delivery timed out'));
    expect(await failure(pending)).toBe('delivery timed out');
  });
});
